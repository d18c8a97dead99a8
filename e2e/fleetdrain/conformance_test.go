//go:build e2e

package fleetdrain

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/spokekit/spokekit/internal/api/ocm"
)

// conformance are placements with different tolerations, all selecting
// spoke-b, and what a drain should do to their works: "stays", "now", or
// "30s" after the drain taint's timeAdded. The test checks that the plan
// (`fleetdrain cluster --dry-run=client -o json`) predicts exactly this,
// and that upstream's placement controller then does it.
var conformance = []struct {
	name, spec, want string
}{
	{"none", `{}`, "now"},
	{"all-exists", `{tolerations: [{operator: Exists}]}`, "stays"},
	{"key-exists", `{tolerations: [{key: fleetdrain.spokekit.io/drained, operator: Exists}]}`, "stays"},
	{"key-equal-empty-value", `{tolerations: [{key: fleetdrain.spokekit.io/drained, operator: Equal}]}`, "stays"},
	{"key-equal-other-value", `{tolerations: [{key: fleetdrain.spokekit.io/drained, value: "yes"}]}`, "now"},
	{"seconds-0", `{tolerations: [{key: fleetdrain.spokekit.io/drained, operator: Exists, tolerationSeconds: 0}]}`, "now"},
	{"seconds-30", `{tolerations: [{key: fleetdrain.spokekit.io/drained, operator: Exists, tolerationSeconds: 30}]}`, "30s"},
	{"all-seconds-30", `{tolerations: [{operator: Exists, tolerationSeconds: 30}]}`, "30s"},
	{"effect-noselect", `{tolerations: [{operator: Exists, effect: NoSelect}]}`, "stays"},
	{"effect-prefernoselect", `{tolerations: [{key: fleetdrain.spokekit.io/drained, operator: Exists, effect: PreferNoSelect}]}`, "now"},
	{"effect-noselectifnew", `{tolerations: [{key: fleetdrain.spokekit.io/drained, operator: Exists, effect: NoSelectIfNew}]}`, "now"},
	{"clusterset", `{clusterSets: [conformance], predicates: [{requiredClusterSelector: {labelSelector: {matchLabels: {cluster.open-cluster-management.io/clusterset: conformance}}}}]}`, "now"},
	{"clusterset-tolerant", `{clusterSets: [conformance], tolerations: [{key: fleetdrain.spokekit.io/drained, operator: Exists}]}`, "stays"},
}

// misconfigured has an empty key with operator Equal: upstream refuses the
// placement (it selects no cluster at all), so it never has a work to move.
const misconfigured = "empty-key-equal"

func TestConformanceDrainPlanMatchesPlacementController(t *testing.T) {
	f := hubFleet(t)
	c := f.hub.Cluster
	manifest := clusterSet("conformance", "conformance")
	var works []string
	for _, p := range conformance {
		manifest += fmt.Sprintf("\n---\napiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata: {name: %s, namespace: conformance}\nspec: %s\n", p.name, p.spec)
		manifest += replicaSet("conformance", p.name)
		works = append(works, p.name)
	}
	manifest += fmt.Sprintf("\n---\napiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata: {name: %s, namespace: conformance}\nspec: {tolerations: [{operator: Equal}]}\n", misconfigured)
	manifest += replicaSet("conformance", misconfigured)
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), manifest))
	joinSet(t, c, "spoke-b", "conformance")
	waitWorks(t, f, f.spokeB, "spoke-b", true, works...)
	assert.Check(t, !workExists(t, c, "spoke-b", misconfigured))
	p, err := c.Dynamic.Resource(ocm.PlacementResource).Namespace("conformance").Get(ctx(t, time.Minute), misconfigured, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Check(t, placementCondition(p, "PlacementMisconfigured") == "True", "upstream refuses it: %v", p.Object["status"])

	// Taints that placements never have to tolerate once they hold the
	// cluster: PreferNoSelect, and NoSelectIfNew on a selected cluster.
	addTaints(t, c, "spoke-b",
		ocm.Taint{Key: "example.com/maintenance", Effect: ocm.TaintEffectPreferNoSelect},
		ocm.Taint{Key: "example.com/cordoned", Effect: ocm.TaintEffectNoSelectIfNew})

	// The prediction.
	planned := time.Now().Truncate(time.Second)
	r := kubectl(t, c, "fleetdrain", "cluster", "spoke-b", "--min-available", "0", "--dry-run=client", "-o", "json")
	plannedEnd := time.Now()
	assert.Equal(t, r.ExitCode, 0, r)
	var rep clusterReport
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &rep), r)
	predicted := map[string]string{}
	for _, w := range rep.Items[0].Stays {
		predicted[w.Name] = "stays"
	}
	for _, w := range rep.Items[0].Moves {
		predicted[w.Name] = "now"
		if w.MovesAt != nil {
			// movesAt counts from the plan's now; the JSON keeps whole seconds.
			after := w.MovesAt.Sub(planned)
			assert.Check(t, after >= 29*time.Second && after <= plannedEnd.Sub(planned)+30*time.Second, "%s moves at %s, planned at %s", w.Name, w.MovesAt, planned)
			predicted[w.Name] = "30s"
		}
	}
	want := map[string]string{}
	for _, p := range conformance {
		want[p.name] = p.want
	}
	assert.DeepEqual(t, predicted, want)

	// What the hub then does: watch the works leave while the drain waits.
	ri := c.Dynamic.Resource(ocm.ManifestWorkResource).Namespace("spoke-b")
	list, err := ri.List(ctx(t, time.Minute), metav1.ListOptions{})
	assert.NilError(t, err)
	w, err := ri.Watch(ctx(t, 5*time.Minute), metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	assert.NilError(t, err)
	gone := map[string]time.Time{}
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || (ev.Type != watch.Deleted && u.GetDeletionTimestamp() == nil) {
				continue
			}
			mu.Lock()
			if _, seen := gone[u.GetName()]; !seen {
				gone[u.GetName()] = time.Now()
			}
			mu.Unlock()
		}
	}()
	r = kubectl(t, c, "fleetdrain", "cluster", "spoke-b", "--min-available", "0", "--timeout", "3m", "-o", "json")
	w.Stop()
	<-done
	assert.Equal(t, r.ExitCode, 0, r)
	var drained clusterReport
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &drained), r)
	assert.Equal(t, drained.Items[0].Result, "Drained")

	var added time.Time
	for _, taint := range taints(t, c, "spoke-b") {
		if taint.Key == "fleetdrain.spokekit.io/drained" {
			assert.Assert(t, taint.TimeAdded != nil)
			added = taint.TimeAdded.Time
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range conformance {
		_, left := gone[p.name]
		switch p.want {
		case "stays":
			assert.Check(t, !left && decided(t, c, "conformance", p.name, "spoke-b"), "%s: predicted to stay, but it left", p.name)
		case "now":
			assert.Check(t, left && !decided(t, c, "conformance", p.name, "spoke-b"), "%s: predicted to move, but it stayed", p.name)
			// At once: before any toleration of 30 s could have run out.
			assert.Check(t, !left || gone[p.name].Before(added.Add(29*time.Second)), "%s: predicted to move at once after %s, left at %s", p.name, added, gone[p.name])
		case "30s":
			assert.Check(t, left && !decided(t, c, "conformance", p.name, "spoke-b"), "%s: predicted to move, but it stayed", p.name)
			// timeAdded has whole seconds: allow for the one it drops.
			assert.Check(t, !gone[p.name].Before(added.Add(29*time.Second)), "%s: predicted to stay 30 s after %s, left at %s", p.name, added, gone[p.name])
		}
	}
	waitWorks(t, f, f.spokeB, "spoke-b", false, "none", "seconds-30")

	r = kubectl(t, c, "fleetdrain", "uncordon", "cluster", "spoke-b")
	assert.Equal(t, r.ExitCode, 0, r)
}

func placementCondition(p *unstructured.Unstructured, t string) string {
	conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == t {
			return fmt.Sprint(m["status"])
		}
	}
	return ""
}
