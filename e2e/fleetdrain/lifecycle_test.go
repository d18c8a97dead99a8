//go:build e2e

package fleetdrain

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/e2e/fixture"
	"github.com/spokekit/spokekit/e2e/harness"
)

// gated is a cluster whose API server runs with the alpha gate
// NodeLifecycleConditions on (Kubernetes 1.37).
var gated = &lazyCluster{name: "lifecycle", opts: []harness.ClusterOption{
	harness.KwokManagesAnnotatedNodesOnly(), harness.FeatureGates("NodeLifecycleConditions=true"),
}}

// drainConditions reads a node's DrainInProgress and Drained conditions as
// "STATUS/REASON" each ("" when absent).
func drainConditions(t *testing.T, c *harness.Cluster, node string) (inProgress, drained string) {
	t.Helper()
	n, err := c.Kube.CoreV1().Nodes().Get(ctx(t, time.Minute), node, metav1.GetOptions{})
	assert.NilError(t, err)
	for _, cond := range n.Status.Conditions {
		switch cond.Type {
		case corev1.NodeDrainInProgress:
			inProgress = string(cond.Status) + "/" + cond.Reason
		case corev1.NodeDrained:
			drained = string(cond.Status) + "/" + cond.Reason
		}
	}
	return inProgress, drained
}

// Where the gate is on, a drain says DrainInProgress while it runs and
// Drained once done, beside its cordon mark, and uncordon clears both.
func TestLifecycleConditionsWhereTheGateIsOn(t *testing.T) {
	c := gated.get(t)
	addNodes(t, c, "lc", "lc-1")
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), quorum("lc", fixture.Workload{Node: "lc-1"})))
	waitPods(t, c, "lc", "app=quorum", "2 quorum pods ready on lc-1", func(r map[string]int) bool { return r["lc-1"] == 2 })
	waitBudget(t, c, "lc", "quorum", 0)

	t.Run("the plan says the conditions are set", func(t *testing.T) {
		r := kubectl(t, c, "fleetdrain", "node", "lc-1", "--dry-run=client", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, `"lifecycleConditions": true`), r.Stdout)
		inProgress, drained := drainConditions(t, c, "lc-1")
		assert.Check(t, is.Equal(inProgress+drained, ""), "a dry run sets nothing")
	})

	t.Run("DrainInProgress while the drain waits, and after Ctrl-C no longer", func(t *testing.T) {
		s := start(t, c, "fleetdrain", "node", "lc-1", "--pdb-timeout", "10m")
		assert.NilError(t, s.WaitStderr(ctx(t, 2*time.Minute), "waiting on budget lc/quorum"))
		inProgress, drained := drainConditions(t, c, "lc-1")
		assert.Check(t, is.Equal(inProgress, "True/Draining"))
		assert.Check(t, is.Equal(drained, "False/Draining"))
		assert.NilError(t, s.Signal(syscall.SIGINT))
		r, err := s.Wait(ctx(t, 2*time.Minute))
		assert.NilError(t, err, r)
		assert.Equal(t, r.ExitCode, 130, r)
		inProgress, drained = drainConditions(t, c, "lc-1")
		assert.Check(t, is.Equal(inProgress, "False/DrainInterrupted"))
		assert.Check(t, is.Equal(drained, "False/DrainInterrupted"))
		assert.Check(t, cordonedByUs(t, c, "lc-1"), "the ownership mark is kept")
	})

	t.Run("Drained once the drain is done", func(t *testing.T) {
		assert.NilError(t, c.Kube.PolicyV1().PodDisruptionBudgets("lc").Delete(ctx(t, time.Minute), "quorum", metav1.DeleteOptions{}))
		r := kubectl(t, c, "fleetdrain", "node", "lc-1")
		assert.Equal(t, r.ExitCode, 0, r)
		inProgress, drained := drainConditions(t, c, "lc-1")
		assert.Check(t, is.Equal(inProgress, "False/Drained"))
		assert.Check(t, is.Equal(drained, "True/Drained"))
		assert.Check(t, cordonedByUs(t, c, "lc-1"), "the ownership mark is kept")
	})

	t.Run("uncordon clears them", func(t *testing.T) {
		r := kubectl(t, c, "fleetdrain", "uncordon", "node", "lc-1")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, !unschedulable(t, c, "lc-1"))
		inProgress, drained := drainConditions(t, c, "lc-1")
		assert.Check(t, is.Equal(inProgress, "False/Uncordoned"))
		assert.Check(t, is.Equal(drained, "False/Uncordoned"))
	})
}

// Where the gate is off (the tenant), only the cordon and its mark are
// written, as before.
func TestNoLifecycleConditionsWhereTheGateIsOff(t *testing.T) {
	c := tenant.get(t)
	addNodes(t, c, "lcoff", "lcoff-1")
	r := kubectl(t, c, "fleetdrain", "node", "lcoff-1", "-o", "json")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, !strings.Contains(r.Stdout, "lifecycleConditions"), r.Stdout)
	inProgress, drained := drainConditions(t, c, "lcoff-1")
	assert.Check(t, is.Equal(inProgress+drained, ""))
	assert.Check(t, cordonedByUs(t, c, "lcoff-1"))
}
