package park

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/capi"
)

// resume --wait ends only when each pool's own status counts its workers
// ready: a CI run's park status, right after the wait, showed a pool
// "0/2" ready and "2" up to date while both machines ran and both health
// checks counted them healthy.
func TestResumeWaitsForThePoolsToCountTheirWorkers(t *testing.T) {
	n := func(v int32) *int32 { return &v }
	md := func(pool string, generation, observed int64, replicas, ready, upToDate *int32) poolObject {
		o := poolObject{ObjectMeta: metav1.ObjectMeta{Name: "app-" + pool + "-x7k", Generation: generation, Labels: map[string]string{capi.TopologyDeploymentNameLabel: pool}}}
		o.Spec.Replicas = replicas
		o.Status = capi.MachineSetStatus{ObservedGeneration: observed, ReadyReplicas: ready, UpToDateReplicas: upToDate}
		return o
	}
	wants := []poolWant{{Name: "md-0", Desired: 2}}
	cases := []struct {
		name  string
		wants []poolWant
		objs  []poolObject
		want  string
	}{
		{
			"the CI run's pool: machines back, its ready count behind", wants,
			[]poolObject{md("md-0", 3, 3, n(2), n(0), n(2))},
			"waiting for the pools to count their workers ready (md-0: 0/2 ready, 2 up to date)",
		},
		{
			"a status of the spec before the resume", wants,
			[]poolObject{md("md-0", 4, 3, n(2), n(2), n(2))},
			"waiting for the pools to count their workers ready (md-0: its status is of an older spec (generation 4, counted 3))",
		},
		{
			"no counts in the status yet", wants,
			[]poolObject{md("md-0", 3, 3, n(2), nil, nil)},
			"waiting for the pools to count their workers ready (md-0: -/2 ready, - up to date)",
		},
		{
			"the autoscaler asked for more than the minimum", wants,
			[]poolObject{md("md-0", 3, 3, n(3), n(2), n(3))},
			"waiting for the pools to count their workers ready (md-0: 2/3 ready, 3 up to date)",
		},
		{
			"no object made for the pool yet",
			[]poolWant{{Name: "md-0", Desired: 2}, {Name: "md-1", Desired: 1}},
			[]poolObject{md("md-0", 3, 3, n(2), n(2), n(2))},
			"waiting for the pools to count their workers ready (md-1: not made yet)",
		},
		{
			"every pool counts its workers", wants,
			[]poolObject{md("md-0", 3, 3, n(2), n(2), n(2)), md("other", 1, 1, n(0), nil, nil)},
			"every pool counts its workers ready",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ph := poolsPhase(tc.wants, tc.objs, capi.TopologyDeploymentNameLabel)
			assert.Check(t, is.Equal(ph.String(), tc.want))
			assert.Check(t, is.Equal(ph.done, tc.want == "every pool counts its workers ready"))
		})
	}

	// An object being deleted is not the pool's.
	gone := md("md-0", 3, 3, n(2), n(2), n(2))
	gone.DeletionTimestamp = &metav1.Time{}
	assert.Check(t, !poolsPhase(wants, []poolObject{gone}, capi.TopologyDeploymentNameLabel).done)
	// A MachinePool is named by its own label.
	mp := md("mp-0", 1, 1, n(1), n(1), n(1))
	mp.Labels = map[string]string{capi.TopologyPoolNameLabel: "mp-0"}
	assert.Check(t, poolsPhase([]poolWant{{Name: "mp-0", Desired: 1}}, []poolObject{mp}, capi.TopologyPoolNameLabel).done)
	assert.Check(t, !poolsPhase([]poolWant{{Name: "mp-0", Desired: 1}}, []poolObject{mp}, capi.TopologyDeploymentNameLabel).done)
}
