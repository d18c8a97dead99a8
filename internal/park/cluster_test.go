package park

import (
	"encoding/json"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/exitcode"
)

var parkedAt = time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)

// threePools is a cluster with pools of 3 and 2 machines and one the
// autoscaler manages, as in the runbook.
func threePools() *capi.Cluster {
	return &capi.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "dynamo-prod", ResourceVersion: "7", Generation: 2, Annotations: map[string]string{"team": "a"}},
		Spec: capi.ClusterSpec{Topology: &capi.Topology{
			ClassRef: &capi.ClassRef{Name: "kubevirt-kubeadm"}, Version: "v1.34.1",
			Workers: &capi.Workers{
				MachineDeployments: []capi.WorkerPool{
					{Class: "default-worker", Name: "md-0", Replicas: int32Ptr(3)},
					{Class: "default-worker", Name: "md-1", Replicas: int32Ptr(2)},
				},
				MachinePools: []capi.WorkerPool{
					{Class: "pool", Name: "auto", Metadata: capi.PoolMetadata{Annotations: map[string]string{
						capi.AutoscalerMinSizeAnnotation: "1", capi.AutoscalerMaxSizeAnnotation: "5", "other": "kept",
					}}},
				},
			},
		}},
	}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	assert.NilError(t, err)
	return string(data) + "\n"
}

func TestPlanParkEveryPoolInOneGuardedPatch(t *testing.T) {
	plan, err := PlanPark(threePools(), parkedAt, "alice")
	assert.NilError(t, err)
	assert.Equal(t, len(plan.Changes), 3)
	golden.Assert(t, toJSON(t, plan.Patch), "park-three-pools.golden")
}

func TestPlanParkTwiceIsNoOp(t *testing.T) {
	c := applyToCluster(t, threePools(), func(c *capi.Cluster) Patch {
		p, err := PlanPark(c, parkedAt, "alice")
		assert.NilError(t, err)
		return p.Patch
	})
	again, err := PlanPark(c, parkedAt.Add(time.Hour), "bob")
	assert.NilError(t, err)
	assert.Check(t, is.Len(again.Patch, 0))
	assert.Equal(t, again.Record.ParkedBy, "alice", "the first record is kept")
}

func TestParkThenResumeRestoresExactly(t *testing.T) {
	parked := applyToCluster(t, threePools(), func(c *capi.Cluster) Patch {
		p, err := PlanPark(c, parkedAt, "alice")
		assert.NilError(t, err)
		return p.Patch
	})
	resumed := applyToCluster(t, parked, func(c *capi.Cluster) Patch {
		p, err := PlanResume(c, nil)
		assert.NilError(t, err)
		golden.Assert(t, toJSON(t, p.Patch), "resume-three-pools.golden")
		return p.Patch
	})
	assert.DeepEqual(t, resumed.Spec, threePools().Spec)
	assert.DeepEqual(t, resumed.Annotations, threePools().Annotations)

	p, err := PlanResume(resumed, nil)
	assert.NilError(t, err)
	assert.Check(t, is.Len(p.Patch, 0), "resuming a running cluster changes nothing")
}

func TestResumeWithReplicasNeverKeepsAutoscalerAnnotations(t *testing.T) {
	parked := applyToCluster(t, threePools(), func(c *capi.Cluster) Patch {
		p, _ := PlanPark(c, parkedAt, "alice")
		return p.Patch
	})
	resumed := applyToCluster(t, parked, func(c *capi.Cluster) Patch {
		p, err := PlanResume(c, int32Ptr(4))
		assert.NilError(t, err)
		return p.Patch
	})
	for _, pools := range [][]capi.WorkerPool{resumed.Spec.Topology.Workers.MachineDeployments, resumed.Spec.Topology.Workers.MachinePools} {
		for _, w := range pools {
			assert.Equal(t, *w.Replicas, int32(4), w.Name)
			assert.Check(t, is.Len(autoscalerAnnotations(w.Metadata.Annotations), 0), w.Name)
		}
	}
}

func TestResumeParkedByHandNeedsReplicas(t *testing.T) {
	c := threePools()
	for i := range c.Spec.Topology.Workers.MachineDeployments {
		c.Spec.Topology.Workers.MachineDeployments[i].Replicas = int32Ptr(0)
	}
	c.Spec.Topology.Workers.MachinePools = nil
	_, err := PlanResume(c, nil)
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	assert.ErrorContains(t, err, "--replicas N")

	p, err := PlanResume(c, int32Ptr(1))
	assert.NilError(t, err)
	assert.Equal(t, len(p.Changes), 2)
}

func TestPlanRefusals(t *testing.T) {
	noTopology := threePools()
	noTopology.Spec.Topology = nil
	_, err := PlanPark(noTopology, parkedAt, "alice")
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	assert.ErrorContains(t, err, "no spec.topology")

	noPools := threePools()
	noPools.Spec.Topology.Workers = nil
	_, err = PlanPark(noPools, parkedAt, "alice")
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)

	badRecord := threePools()
	badRecord.Annotations[RecordAnnotation] = "{not json"
	_, err = PlanPark(badRecord, parkedAt, "alice")
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	_, err = PlanResume(badRecord, nil)
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
}

func TestParkWaitEndsWhenTheClusterStatusAgrees(t *testing.T) {
	parked := applyToCluster(t, threePools(), func(c *capi.Cluster) Patch {
		p, err := PlanPark(c, parkedAt, "alice")
		assert.NilError(t, err)
		return p.Patch
	})
	status := func(replicas int32) []any {
		c := *parked
		c.Status.Workers = &capi.ReplicaCounts{DesiredReplicas: int32Ptr(0), Replicas: int32Ptr(replicas), ReadyReplicas: int32Ptr(0)}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
		assert.NilError(t, err)
		return []any{&unstructured.Unstructured{Object: u}}
	}
	// The Machines are gone, but the Cluster still counts two workers:
	// park list says Parking, so the wait goes on.
	done, state, err := clusterParked(status(2))
	assert.NilError(t, err)
	assert.Check(t, !done)
	assert.Equal(t, state, "Parking: its status still counts 2 worker(s)")
	done, state, err = clusterParked(status(0))
	assert.NilError(t, err)
	assert.Check(t, done)
	assert.Equal(t, state, "Parked: its status counts no workers")
}

// resume --wait counts the workers the pools ask for; a pool left to the
// autoscaler whose minimum cannot be read is an error, never zero (which
// ended the wait at once, saying every worker was back).
func TestResumeWaitNeedsACountForEveryPool(t *testing.T) {
	c := threePools()
	pools, err := workerPools(c)
	assert.NilError(t, err)
	n, err := desiredOf(pools)
	assert.NilError(t, err)
	assert.Equal(t, n, 3+2+1)

	for _, min := range []string{"", "many", "-2"} {
		c := threePools()
		c.Spec.Topology.Workers.MachinePools[0].Metadata.Annotations[capi.AutoscalerMinSizeAnnotation] = min
		if min == "" {
			delete(c.Spec.Topology.Workers.MachinePools[0].Metadata.Annotations, capi.AutoscalerMinSizeAnnotation)
		}
		pools, err := workerPools(c)
		assert.NilError(t, err)
		_, err = desiredOf(pools)
		assert.Check(t, is.ErrorContains(err, "cannot tell how many workers pool auto asks for"), "min %q", min)
	}
}
