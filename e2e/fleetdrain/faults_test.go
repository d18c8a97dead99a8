//go:build e2e

package fleetdrain

import (
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/internal/api/ocm"
)

// Each scenario makes the API server fail in the middle of a command
// (through a fault proxy in front of it), checks the command says what it
// did and did not do and exits 1, and then runs the same command again,
// straight to the cluster, to show it finishes with nothing left over.

// throughFault returns a kubectl runner through a fault proxy in front of c.
func throughFault(t *testing.T, c *harness.Cluster, f *harness.Fault) func(args ...string) harness.Result {
	t.Helper()
	p := c.WithFault(ctx(t, 5*time.Minute), t, f)
	return func(args ...string) harness.Result {
		t.Helper()
		r := harness.Kubectl(t, p.For(t.TempDir()), args...)
		return r
	}
}

func TestFaultNodeDrainCordonFails(t *testing.T) {
	c := tenant.get(t)
	addNodes(t, c, "fault", "fault-1", "fault-2", "fault-3")
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), workload("fault", "fault", 6, 0)))
	waitPods(t, c, "fault", "app=web", "6 web pods ready", func(r map[string]int) bool { return total(r) == 6 })
	addNodes(t, c, "fault", "fault-spare")
	nodes := []string{"fault-1", "fault-2", "fault-3"}
	// The web pods of each node (the DaemonSet's may still be arriving).
	web := func(node string) []string {
		return slices.DeleteFunc(podsOn(t, c, "fault", node), func(p string) bool { return !strings.HasPrefix(p, "web-") })
	}
	before := map[string][]string{}
	for _, n := range nodes {
		before[n] = web(n)
	}
	viaFault := throughFault(t, c, &harness.Fault{Method: "PATCH", PathContains: "/nodes/fault-2", Action: harness.Unavailable})
	args := append([]string{"fleetdrain", "node", "--ignore-daemonsets", "--max-concurrent", "3"}, nodes...)

	r := viaFault(args...)
	assert.Equal(t, r.ExitCode, 1, r)
	assert.Check(t, is.Contains(r.Stderr, "cordoning node fault-2"), r)
	assert.Check(t, is.Contains(r.Stderr, "cordoned: fault-1 (`kubectl fleetdrain uncordon node fault-1` gives them back); not cordoned: fault-2, fault-3; no pod was evicted"), r)
	assert.Check(t, unschedulable(t, c, "fault-1"))
	assert.Check(t, !unschedulable(t, c, "fault-2") && !unschedulable(t, c, "fault-3"))
	for _, n := range nodes {
		assert.DeepEqual(t, web(n), before[n])
	}

	r = kubectl(t, c, args...)
	assert.Equal(t, r.ExitCode, 0, r)
	for _, n := range nodes {
		assert.Check(t, unschedulable(t, c, n), n)
		assert.Check(t, len(web(n)) == 0, "web pods left %s", n)
	}
	waitPods(t, c, "fault", "app=web", "6 web pods ready on the spare", func(r map[string]int) bool { return r["fault-spare"] == 6 })
}

func TestFaultClusterDrainTaintFails(t *testing.T) {
	// Two spokes, each with a work of a placement that does not tolerate
	// the drain taint.
	c := drainBed(t, "fault", "{}", "fault-a", "fault-b").hub.Cluster
	viaFault := throughFault(t, c, &harness.Fault{Method: "PATCH", PathContains: "/managedclusters/fault-b", Action: harness.Unavailable})
	args := []string{"fleetdrain", "cluster", "fault-a", "fault-b", "--min-available", "0", "--timeout", "1m"}

	r := viaFault(args...)
	assert.Equal(t, r.ExitCode, 1, r)
	assert.Check(t, is.Contains(r.Stderr, "patching the taints of ManagedCluster fault-b"), r)
	assert.Check(t, is.Contains(r.Stderr, "drain taint added: fault-a (`kubectl fleetdrain uncordon cluster fault-a` gives them back); not added: fault-b"), r)
	assert.Equal(t, len(taints(t, c, "fault-a")), 1)
	assert.Equal(t, len(taints(t, c, "fault-b")), 0)

	r = kubectl(t, c, args...)
	assert.Equal(t, r.ExitCode, 0, r)
	for _, name := range []string{"fault-a", "fault-b"} {
		ts := taints(t, c, name)
		assert.Equal(t, len(ts), 1, "one drain taint on %s, not two: %+v", name, ts)
		assert.Equal(t, ts[0].Key, "fleetdrain.spokekit.io/drained")
		_, err := c.Dynamic.Resource(ocm.ManifestWorkResource).Namespace(name).Get(ctx(t, time.Minute), "web", metav1.GetOptions{})
		assert.Check(t, apierrors.IsNotFound(err), "the placement's work left %s: %v", name, err)
	}
}
