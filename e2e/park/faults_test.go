//go:build e2e

package park

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/internal/park"
)

// These scenarios depend only on the Cluster object and what the plugin
// does with it, so they hold whatever plays Cluster API.

// The platform's API server stops answering about Machines once the park is
// written: the wait cannot see them go. Exit 4 says the change was made; the
// same command again finds the cluster parked, keeps the first record and
// finishes the wait.
func TestFaultParkWaitLosesThePlatform(t *testing.T) {
	createCluster(t, "fault-park")
	waitRunning(t, "fault-park", 6)
	// The first list of Machines (the ones that will go) works; every later
	// request about Machines fails, as from an API server that went away.
	p := platform.WithFault(ctx(t), t, &harness.Fault{PathContains: "/machines", Nth: 2, Times: -1, Action: harness.Unavailable})
	args := []string{"park", "cluster", "fault-park", "-n", namespace, "--wait", "--timeout", "15s"}

	r, err := p.For(t.TempDir()).Kubectl(ctx(t), args...)
	assert.NilError(t, err)
	assert.Equal(t, r.ExitCode, 4, r)
	assert.Check(t, is.Contains(r.Stderr, "cluster "+namespace+"/fault-park parked: 3 pool(s) set to 0 replicas"), r)
	assert.Check(t, is.Contains(r.Stderr, "timed out after 15s waiting for worker machines of fault-park"), r)
	parked := getCluster(t, "fault-park")
	assert.DeepEqual(t, replicas(parked), []string{"md-0=0 autoscaler=..", "md-1=0 autoscaler=..", "auto=0 autoscaler=.."})
	record := parked.Annotations[park.RecordAnnotation]
	assert.Check(t, record != "")

	r = kubectl(t, append(args[:len(args)-1], "2m")...)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stderr, "already parked"), r)
	after := getCluster(t, "fault-park")
	assert.Equal(t, after.Generation, parked.Generation, "nothing written again")
	assert.Equal(t, after.Annotations[park.RecordAnnotation], record, "the first record is kept")
	assert.Equal(t, runningMachines(t, "fault-park"), 0)
}

// The workload cluster's control plane is down (kwokctl stop) while resume
// waits for its nodes: exit 4, the Cluster is resumed. Once it is back, the
// same command finds nothing to change and finishes the wait; the replicas
// are exactly what was recorded.
func TestFaultResumeWaitWithoutTheWorkloadCluster(t *testing.T) {
	createCluster(t, "fault-resume")
	waitRunning(t, "fault-resume", 6)
	r := kubectl(t, "park", "cluster", "fault-resume", "-n", namespace, "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)

	assert.NilError(t, tenant.Stop(ctx(t)))
	started := false
	t.Cleanup(func() {
		if !started {
			assert.Check(t, tenant.Start(ctx(t)))
		}
	})
	args := []string{"park", "resume", "fault-resume", "-n", namespace, "--wait", "--timeout"}
	r = kubectl(t, append(args, "20s")...)
	assert.Equal(t, r.ExitCode, 4, r)
	assert.Check(t, is.Contains(r.Stderr, "cluster "+namespace+"/fault-resume resumed: 3 pool(s) restored"), r)
	assert.Check(t, is.Contains(r.Stderr, "timed out after 20s"), r)
	resumed := getCluster(t, "fault-resume")
	running := []string{"md-0=3 autoscaler=..", "md-1=2 autoscaler=..", "auto=unset autoscaler=1..5"}
	assert.DeepEqual(t, replicas(resumed), running)

	started = true
	assert.NilError(t, tenant.Start(ctx(t)))
	r = kubectl(t, append(args, "3m")...)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stderr, "is not parked: nothing changed"), r)
	assert.Check(t, is.Contains(r.Stderr, "nodes Ready: 6 of 6"), r)
	after := getCluster(t, "fault-resume")
	assert.Equal(t, after.Generation, resumed.Generation, "nothing written again")
	assert.DeepEqual(t, replicas(after), running)
	_, recorded := after.Annotations[park.RecordAnnotation]
	assert.Check(t, !recorded)
}
