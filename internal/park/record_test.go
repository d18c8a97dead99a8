package park

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
)

func TestParseRecordRejects(t *testing.T) {
	for name, value := range map[string]string{
		"not json":      "nope",
		"no pools":      `{"parkedBy":"a","pools":[]}`,
		"bad kind":      `{"pools":[{"kind":"nodes","name":"a","replicas":1}]}`,
		"bad name":      `{"pools":[{"kind":"machineDeployments","name":"A B","replicas":1}]}`,
		"negative":      `{"pools":[{"kind":"machineDeployments","name":"a","replicas":-1}]}`,
		"twice":         `{"pools":[{"kind":"machinePools","name":"a"},{"kind":"machinePools","name":"a"}]}`,
		"foreign annot": `{"pools":[{"kind":"machinePools","name":"a","autoscaler":{"evil":"1"}}]}`,
	} {
		_, err := ParseRecord(value)
		assert.Check(t, err != nil, name)
	}
}

// Anyone who may edit the Cluster may edit the record: resume refuses
// counts no real pool was parked from (exit 3), before any change, instead
// of asking the platform for them.
func TestResumeRefusesRecordedCountsAboveTheBound(t *testing.T) {
	minKey, maxKey := capi.AutoscalerMinSizeAnnotation, capi.AutoscalerMaxSizeAnnotation
	for name, pool := range map[string]string{
		"replicas":          `"replicas":100000`,
		"autoscaler max":    `"autoscaler":{"` + maxKey + `":"100000"}`,
		"autoscaler min":    `"autoscaler":{"` + minKey + `":"2000","` + maxKey + `":"5"}`,
		"autoscaler number": `"autoscaler":{"` + minKey + `":"1e3"}`,
		"negative min":      `"autoscaler":{"` + minKey + `":"-1"}`,
	} {
		c := threePools()
		c.Spec.Topology.Workers.MachineDeployments[0].Replicas = int32Ptr(0)
		c.Annotations[RecordAnnotation] = `{"pools":[{"kind":"machineDeployments","name":"md-0",` + pool + `}]}`
		_, err := PlanResume(c, nil)
		assert.Check(t, exitcode.Of(err) == exitcode.Refused, "%s: %v", name, err)
		assert.Check(t, err != nil && strings.Contains(err.Error(), "md-0"), "%s: %v", name, err)
	}
	// --replicas is bounded the same way, before any request.
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "at most",
		[]string{"resume", "app", "--replicas", "100000"})
}

func TestRecordRoundTrip(t *testing.T) {
	r := ParkRecord{ParkedBy: "alice", Pools: []PoolRecord{
		{Kind: MachineDeployments, Name: "md-0", Replicas: int32Ptr(3)},
		{Kind: MachinePools, Name: "auto", Autoscaler: map[string]string{capi.AutoscalerMinSizeAnnotation: "1"}},
	}}
	s, err := r.Encode()
	assert.NilError(t, err)
	back, err := ParseRecord(s)
	assert.NilError(t, err)
	assert.DeepEqual(t, *back, r)
}

// The record is read from an annotation anyone with edit rights may change.
func FuzzParseRecord(f *testing.F) {
	f.Add(`{"parkedAt":"2026-11-30T15:00:00Z","parkedBy":"a","pools":[{"kind":"machineDeployments","name":"md-0","replicas":3}]}`)
	f.Add(`{"pools":[{"kind":"machinePools","name":"auto","autoscaler":{"cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size":"1"}}]}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRecord(s)
		if err != nil {
			return
		}
		for _, p := range r.Pools {
			if p.Replicas != nil && *p.Replicas < 0 {
				t.Fatalf("accepted negative replicas: %s", s)
			}
		}
		// What resume trusts encodes and reads back to the same record.
		enc, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseRecord(enc)
		if err != nil {
			t.Fatalf("the encoding of an accepted record is refused: %v: %s", err, enc)
		}
		if again, _ := back.Encode(); again != enc {
			t.Fatalf("record changed on a round trip:\n%s\n%s", enc, again)
		}
	})
}
