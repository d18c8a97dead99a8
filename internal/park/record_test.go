package park

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spokekit/spokekit/internal/api/capi"
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
