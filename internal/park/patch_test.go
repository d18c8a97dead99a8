package park

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/spokekit/spokekit/internal/api/capi"
)

// applyToCluster applies the patch a plan makes, the way the API server does.
func applyToCluster(t *testing.T, c *capi.Cluster, plan func(*capi.Cluster) Patch) *capi.Cluster {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	assert.NilError(t, err)
	doc, err := json.Marshal(obj)
	assert.NilError(t, err)
	data, err := plan(c).JSON()
	assert.NilError(t, err)
	p, err := jsonpatch.DecodePatch(data)
	assert.NilError(t, err)
	out, err := p.Apply(doc)
	assert.NilError(t, err)
	var back capi.Cluster
	assert.NilError(t, json.Unmarshal(out, &back))
	back.ResourceVersion = nextVersion(c.ResourceVersion)
	if !reflect.DeepEqual(back.Spec, c.Spec) {
		back.Generation = c.Generation + 1
	}
	return &back
}

// nextVersion is the resourceVersion the API server gives an object after
// a change.
func nextVersion(rv string) string {
	n, _ := strconv.Atoi(rv)
	return strconv.Itoa(n + 1)
}

// A change between the read and the write makes the patch fail as a whole.
func TestParkPatchFailsOnConcurrentChange(t *testing.T) {
	c := threePools()
	plan, err := PlanPark(c, parkedAt, "alice")
	assert.NilError(t, err)
	changed := threePools()
	changed.Spec.Topology.Workers.MachineDeployments[1].Replicas = int32Ptr(7)
	obj, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(changed)
	doc, _ := json.Marshal(obj)
	data, _ := plan.Patch.JSON()
	p, err := jsonpatch.DecodePatch(data)
	assert.NilError(t, err)
	_, err = p.Apply(doc)
	assert.Check(t, is.ErrorContains(err, "test"))
}

// Parking again a cluster whose record already lists every pool keeps the
// record as it is, but the patch still relies on it: a removal of the record
// between the read and the write (an annotation: no generation change) must
// fail the patch, or the pools would be parked with no record of them.
func TestParkPatchFailsWhenTheUnchangedRecordGoes(t *testing.T) {
	parked := applyToCluster(t, threePools(), func(c *capi.Cluster) Patch {
		p, err := PlanPark(c, parkedAt, "alice")
		assert.NilError(t, err)
		return p.Patch
	})
	// md-0 is brought back up by hand; its entry is still in the record.
	parked.Spec.Topology.Workers.MachineDeployments[0].Replicas = int32Ptr(3)
	plan, err := PlanPark(parked, parkedAt.Add(time.Hour), "bob")
	assert.NilError(t, err)
	assert.Equal(t, len(plan.Changes), 1)

	gone := *parked
	gone.Annotations = map[string]string{"team": "a"}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&gone)
	assert.NilError(t, err)
	doc, err := json.Marshal(obj)
	assert.NilError(t, err)
	data, err := plan.Patch.JSON()
	assert.NilError(t, err)
	p, err := jsonpatch.DecodePatch(data)
	assert.NilError(t, err)
	_, err = p.Apply(doc)
	assert.Check(t, is.ErrorContains(err, "/metadata/annotations/park.spokekit.io~1record"), "the patch parks md-0 with no record of it")
}
