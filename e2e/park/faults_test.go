//go:build e2e

package park

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/internal/park"
)

// The platform's API server stops answering about Machines once the park is
// written: the wait cannot see them go. Exit 4 says the change was made; the
// same command again finds the cluster parked, keeps the first record and
// finishes the wait.
func TestFaultParkWaitLosesThePlatform(t *testing.T) {
	t.Parallel()
	createCluster(t, namespace, "fault-park", "in-memory",
		"{class: default-worker, name: md-0, replicas: 2}",
		"{class: default-worker, name: md-1, replicas: 1}")
	waitRunningWorkers(t, namespace, "fault-park", 3)
	// The first list of Machines (the ones that will go) works; every later
	// request about Machines fails, as from an API server that went away.
	p := platform.WithFault(ctx(t), t, &harness.Fault{PathContains: "/machines", Nth: 2, Times: -1, Action: harness.Unavailable})
	args := []string{"park", "cluster", "fault-park", "-n", namespace, "--wait", "--timeout", "15s"}

	before := parkWrites(t, namespace, "fault-park")
	r := harness.Kubectl(t, p.For(t.TempDir()), args...)
	assert.Equal(t, r.ExitCode, 4, r)
	assert.Check(t, is.Contains(r.Stderr, "cluster "+namespace+"/fault-park parked: 2 pool(s) set to 0 replicas"), r)
	assert.Check(t, is.Contains(r.Stderr, "timed out after 15s waiting for worker machines of fault-park"), r)
	assert.Equal(t, parkWrites(t, namespace, "fault-park"), before+1, "the park was written once")
	parked := getCluster(t, "fault-park")
	assert.DeepEqual(t, pools(parked), []string{"md-0=0 autoscaler=..", "md-1=0 autoscaler=.."})
	record := parked.Annotations[park.RecordAnnotation]
	assert.Check(t, record != "")

	r = kubectl(t, append(args[:len(args)-1], finishBound)...)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stderr, "already parked"), r)
	assert.Equal(t, parkWrites(t, namespace, "fault-park"), before+1, "nothing written again")
	after := getCluster(t, "fault-park")
	assert.Equal(t, after.Annotations[park.RecordAnnotation], record, "the first record is kept")
	assert.Equal(t, runningWorkers(t, "fault-park"), 0)
}

// The workload cluster's API server does not answer the plugin (Cluster API
// still reaches it) while resume waits for its nodes: the machines come
// back, but the nodes' readiness cannot be checked, so the wait did not
// finish: exit 4, saying what was checked and what was not. Once the
// plugin reaches it, the same command changes nothing and finishes the wait.
func TestFaultResumeWaitCannotReachTheWorkloadCluster(t *testing.T) {
	t.Parallel()
	createCluster(t, namespace, "fault-resume", "in-memory",
		"{class: default-worker, name: md-0, replicas: 2}",
		"{class: default-worker, name: md-1, replicas: 1}")
	waitRunningWorkers(t, namespace, "fault-resume", 3)
	r := kubectl(t, "park", "cluster", "fault-resume", "-n", namespace, "--wait", "--timeout", finishBound)
	assert.Equal(t, r.ExitCode, 0, r)

	proxy, err := clusterAPI.WorkloadThroughProxy(ctx(t), namespace, "fault-resume")
	assert.NilError(t, err)
	fault := proxy.Inject(&harness.Fault{UserAgent: "kubectl-park/", Times: -1, Action: harness.Unavailable})
	args := []string{"park", "resume", "fault-resume", "-n", namespace, "--wait", "--timeout", finishBound}
	before := parkWrites(t, namespace, "fault-resume")
	r = kubectl(t, args...)
	assert.Equal(t, r.ExitCode, 4, r)
	assert.Check(t, proxy.Fired(fault) > 0, "the plugin tried the workload cluster")
	assert.Check(t, is.Contains(r.Stderr, "cluster "+namespace+"/fault-resume resumed: 2 pool(s) restored"), r)
	assert.Check(t, is.Contains(r.Stderr, "all 3 worker(s) running"), r)
	assert.Check(t, is.Contains(r.Stderr, "the readiness of their nodes was not checked"), r)
	assert.Equal(t, parkWrites(t, namespace, "fault-resume"), before+1, "one write")
	running := []string{"md-0=2 autoscaler=..", "md-1=1 autoscaler=.."}
	assert.DeepEqual(t, pools(getCluster(t, "fault-resume")), running)

	proxy.Clear()
	r = kubectl(t, args...)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stderr, "is not parked: nothing changed"), r)
	assert.Check(t, is.Contains(r.Stderr, "nodes Ready: 3 of 3"), r)
	assert.Equal(t, parkWrites(t, namespace, "fault-resume"), before+1, "nothing written again")
	after := getCluster(t, "fault-resume")
	assert.DeepEqual(t, pools(after), running)
	_, recorded := after.Annotations[park.RecordAnnotation]
	assert.Check(t, !recorded)
}
