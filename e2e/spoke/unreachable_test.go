//go:build e2e

package spoke

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/internal/api/ocm"
)

// The tests here show the spoke lifecycle on the real OCM components: the
// agent that joins, and the two ways a spoke goes dark, which the hub tells
// apart (a stopped agent: Available Unknown once its lease runs out; a
// stopped API server: Available False by the agent's own health check).

func deleteWork(t *testing.T, cluster, name string) {
	t.Helper()
	assert.NilError(t, hub.Dynamic.Resource(ocm.ManifestWorkResource).Namespace(cluster).Delete(ctx(t), name, metav1.DeleteOptions{}))
	waitGone(t, cluster, name)
}

// waitGone waits until a deleted ManifestWork has gone: the work agent's
// finalizer keeps it until the agent has cleaned up.
func waitGone(t *testing.T, cluster, name string) {
	t.Helper()
	works := hub.Dynamic.Resource(ocm.ManifestWorkResource).Namespace(cluster)
	err := wait.PollUntilContextTimeout(ctx(t), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := works.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	assert.NilError(t, err, "ManifestWork %s/%s gone", cluster, name)
}

// waitConfigMap waits until the ConfigMap default/name exists on c, or is gone.
func waitConfigMap(t *testing.T, c *harness.Cluster, name string, exists bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx(t), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.Kube.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		return (err == nil) == exists, nil
	})
	assert.NilError(t, err, "ConfigMap default/%s on %s, want exists=%v", name, c.Name, exists)
}

// stopUntilCleanup stops c's API server until the returned function or the
// cleanup starts it again; the cleanup then waits until the clusters that
// were available before (and still exist) are available again, so later
// tests find them so.
func stopUntilCleanup(t *testing.T, c *harness.Cluster) (start func()) {
	t.Helper()
	wasAvailable := availableManagedClusters(t)
	assert.NilError(t, c.Stop(ctx(t)))
	stopped := true
	start = func() {
		if stopped {
			stopped = false
			assert.NilError(t, c.Start(ctx(t)))
		}
	}
	t.Cleanup(func() {
		start()
		var back []string
		for _, name := range wasAvailable {
			if managedCluster(t, name) != nil {
				back = append(back, name)
			}
		}
		waitAvailable(t, back...)
	})
	return start
}

// waitDark waits until the hub reports the cluster's Available condition
// as status and has tainted it with taint (which follows the condition).
func waitDark(t *testing.T, name, status, taint string) {
	t.Helper()
	r := harness.Kubectl(t, hub.For(t.TempDir()), "wait", "managedcluster/"+name, "--for=condition=ManagedClusterConditionAvailable="+status, "--timeout=2m")
	assert.Equal(t, r.ExitCode, 0, r)
	err := wait.PollUntilContextTimeout(ctx(t), 200*time.Millisecond, 2*time.Minute, true, func(cx context.Context) (bool, error) {
		taints, _, _ := unstructured.NestedSlice(managedClusterIn(cx, t, name).Object, "spec", "taints")
		for _, x := range taints {
			if m, _ := x.(map[string]any); m["key"] == taint {
				return true, nil
			}
		}
		return false, nil
	})
	assert.NilError(t, err, "ManagedCluster %s tainted %s", name, taint)
}

func TestAgentStoppedSpoke(t *testing.T) {
	addAndJoin(t, "silent-1", spoke1)
	forgetCluster(t, "silent-1") // two spokes of one API server (see forgetting)
	addAndJoin(t, "silent-2", spoke1)
	// Joined by the agent: it reports the spoke's version and renews its lease on the hub.
	mc := managedCluster(t, "silent-1")
	version, _, _ := unstructured.NestedString(mc.Object, "status", "version", "kubernetes")
	assert.Equal(t, version, "v1.37.2")
	_, err := hub.Kube.CoordinationV1().Leases("silent-1").Get(ctx(t), "managed-cluster-lease", metav1.GetOptions{})
	assert.NilError(t, err)

	assert.Check(t, hub.StopAgent("silent-1"))
	assert.Check(t, hub.StopAgent("silent-2"))
	waitDark(t, "silent-1", "Unknown", ocm.TaintUnreachable)
	waitDark(t, "silent-2", "Unknown", ocm.TaintUnreachable)

	r := spoke(t, "list", "-o", "wide")
	assert.Check(t, is.Regexp(`(?m)^silent-1\s+Running\s+True\s+Unknown\s+.*cluster.open-cluster-management.io/unreachable:NoSelect`, r.Stdout), r)
	r = spoke(t, "status", "silent-1")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Regexp(`not available because\s+Registration agent stopped updating its lease`, r.Stdout), r)

	// Its API server answers, so the hub unjoins it without the agent.
	r = spoke(t, "remove", "silent-2", "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, spokeObject(t, "silent-2") == nil)
	assert.Check(t, managedCluster(t, "silent-2") == nil)

	// And it counts as unreachable: the force-delete shortcut is allowed.
	r = spoke(t, "force-remove", "silent-1", "--yes", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, spokeObject(t, "silent-1") == nil)
	assert.Check(t, managedCluster(t, "silent-1") == nil)
}

// It stops spoke-2's control plane, which every spoke joined through
// spoke-2 needs. Before it returns it starts it again and waits until the
// ManagedClusters that were Available are Available again, so that it may
// run before or after any other test.
func TestForceRemoveUnreachableSpoke(t *testing.T) {
	addAndJoin(t, "doomed", spoke2)

	r := spoke(t, "force-remove", "doomed", "--yes")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "is reachable"), r)
	assert.Check(t, spokeObject(t, "doomed").GetDeletionTimestamp() == nil)

	r = spoke(t, "force-remove", "doomed")
	assert.Equal(t, r.ExitCode, 3, "no terminal, no --yes: %s", r)

	stopUntilCleanup(t, spoke2)
	waitDark(t, "doomed", "False", ocm.TaintUnavailable)
	// After the join the hub never reaches the spoke, in either mode
	// (upstream's unified mode does the spoke's work with the hub's own
	// config): a reconcile after the spoke went dark leaves the Spoke
	// Running, and only the hub's ManagedCluster shows it dark.
	assert.NilError(t, standin.WaitReconcile(ctx(t), "doomed"))
	r = spoke(t, "list", "-o", "wide")
	assert.Check(t, is.Regexp(`(?m)^doomed\s+Running\s+True\s+False\s+.*cluster.open-cluster-management.io/unavailable:NoSelect`, r.Stdout), r)
	r = spoke(t, "status", "doomed")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Regexp(`not available because\s+The kube-apiserver is not ok`, r.Stdout), r)

	// The unjoin cannot happen: once the controller says so, a wait for the
	// removal times out showing why (the bound covers a round trip, not
	// the controller's work).
	r = spoke(t, "remove", "doomed")
	assert.Equal(t, r.ExitCode, 0, r)
	waitSpoke(t, "doomed", "the unjoin failed", func(u *unstructured.Unstructured) bool {
		return u != nil && strings.Contains(spokeConditionMessage(u, "CleanupFailed"), "failed to unjoin spoke cluster")
	})
	r = spoke(t, "remove", "doomed", "--wait", "--timeout", "15s")
	assert.Equal(t, r.ExitCode, 4, "the unjoin cannot happen: %s", r)
	assert.Check(t, is.Contains(r.Stderr, "failed to unjoin spoke cluster"), r)
	assert.Check(t, is.Contains(r.Stderr, "kubectl spoke force-remove doomed"), r)

	r = spoke(t, "force-remove", "doomed", "--yes", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "delete klusterlet klusterlet"), r)
	assert.Check(t, is.Contains(r.Stdout, "open-cluster-management-agent"), r)
	assert.Check(t, spokeObject(t, "doomed") == nil)
	assert.Check(t, managedCluster(t, "doomed") == nil)
}
