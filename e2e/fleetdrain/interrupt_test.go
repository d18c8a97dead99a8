//go:build e2e

package fleetdrain

import (
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/e2e/fixture"
	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/internal/fleetdrain"
)

// start runs a kubectl command in the background.
func start(t *testing.T, c *harness.Cluster, args ...string) *harness.Background {
	t.Helper()
	s, err := c.For(t.TempDir()).StartKubectl(args...)
	assert.NilError(t, err)
	return s
}

// interrupt sends sig once the command has written text to stderr (it is
// then in the middle of its work), and returns how it ended.
func interrupt(t *testing.T, s *harness.Background, text string, sig syscall.Signal) harness.Result {
	t.Helper()
	assert.NilError(t, s.WaitStderr(ctx(t, 2*time.Minute), text))
	assert.NilError(t, s.Signal(sig))
	r, err := s.Wait(ctx(t, 2*time.Minute))
	assert.NilError(t, err, r)
	return r
}

func cordonedByUs(t *testing.T, c *harness.Cluster, node string) bool {
	t.Helper()
	n, err := c.Kube.CoreV1().Nodes().Get(ctx(t, time.Minute), node, metav1.GetOptions{})
	assert.NilError(t, err)
	return fleetdrain.CordonedByUs(n)
}

// Ctrl-C in the middle of a drain: exit 130, the summary is printed, the
// nodes fleetdrain cordoned are given back with --uncordon-on-failure, and
// a node someone else cordoned stays cordoned. A run after an interrupted
// one knows the cordon that run left as its own.
func TestInterruptedDrain(t *testing.T) {
	c := tenant.get(t)
	addNodes(t, c, "intr", "intr-1", "intr-2", "intr-3")
	// Both pods of the budget on intr-1: its drain waits on the budget, and
	// with one drain at a time intr-2 and intr-3 have not started then.
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), quorum("intr", fixture.Workload{Node: "intr-1"})))
	waitPods(t, c, "intr", "app=quorum", "2 quorum pods ready on intr-1", func(r map[string]int) bool { return r["intr-1"] == 2 })
	waitBudget(t, c, "intr", "quorum", 0)
	r := kubectl(t, c, "cordon", "intr-3") // someone else's cordon
	assert.Equal(t, r.ExitCode, 0, r)
	nodes := []string{"intr-1", "intr-2", "intr-3"}
	drain := append([]string{"fleetdrain", "node"}, nodes...)

	t.Run("Ctrl-C gives back what the drain cordoned", func(t *testing.T) {
		s := start(t, c, append(drain, "--pdb-timeout", "10m", "--uncordon-on-failure")...)
		r := interrupt(t, s, "waiting on budget intr/quorum", syscall.SIGINT)
		assert.Equal(t, r.ExitCode, 130, r)
		assert.Check(t, is.Contains(r.Stderr, "interrupted by SIGINT"), r)
		assert.Check(t, is.Contains(r.Stdout, "Interrupted"), "the summary is printed: %s", r)
		assert.Check(t, is.Contains(r.Stderr, "still cordoned: intr-3"), r)
		for _, n := range nodes[:2] {
			assert.Check(t, !unschedulable(t, c, n), "%s is given back", n)
			assert.Check(t, !cordonedByUs(t, c, n), "%s has no mark left", n)
		}
		assert.Check(t, unschedulable(t, c, "intr-3"), "someone else's cordon stays")
		assert.Equal(t, len(podsOn(t, c, "intr", "intr-1")), 2, "the budget kept its pods")
	})

	t.Run("a run after an interrupted one knows its cordon", func(t *testing.T) {
		s := start(t, c, append(drain, "--pdb-timeout", "10m")...)
		r := interrupt(t, s, "waiting on budget intr/quorum", syscall.SIGINT)
		assert.Equal(t, r.ExitCode, 130, r)
		assert.Check(t, is.Contains(r.Stderr, "kubectl fleetdrain uncordon node"), r)
		for _, n := range nodes[:2] {
			assert.Check(t, unschedulable(t, c, n) && cordonedByUs(t, c, n), "without --uncordon-on-failure %s stays cordoned, marked", n)
		}

		r = kubectl(t, c, append(drain, "--pdb-timeout", "2s", "--uncordon-on-failure", "-o", "json")...)
		assert.Equal(t, r.ExitCode, 1, r)
		byName := map[string]bool{}
		for _, n := range parseReport(t, r).Items {
			byName[n.Metadata.Name] = n.Uncordoned
		}
		assert.DeepEqual(t, byName, map[string]bool{"intr-1": true, "intr-2": false, "intr-3": false})
		assert.Check(t, !unschedulable(t, c, "intr-1"), "the earlier run's cordon is given back")
		assert.Check(t, unschedulable(t, c, "intr-2"), "intr-2 was drained: it stays cordoned")
		assert.Check(t, unschedulable(t, c, "intr-3"), "someone else's cordon stays")

		r = kubectl(t, c, "fleetdrain", "uncordon", "node", "intr-3", "intr-2")
		assert.Equal(t, r.ExitCode, 3, r)
		assert.Check(t, is.Contains(r.Stderr, "cordoned by someone else"), r)
		assert.Check(t, unschedulable(t, c, "intr-2"), "a refusal changes nothing")
		r = kubectl(t, c, "fleetdrain", "uncordon", "node", "intr-2")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, !unschedulable(t, c, "intr-2") && !cordonedByUs(t, c, "intr-2"))
		assert.Check(t, unschedulable(t, c, "intr-3"))
	})
}

// SIGTERM while `fleetdrain cluster` waits, before the works started to
// leave: exit 130, the drain taint this run added is taken off again, and
// the report and the error say so.
func TestClusterDrainStopsOnSIGTERM(t *testing.T) {
	// The placement tolerates the drain taint for ten minutes: its work
	// moves then, so the drain is still waiting when the signal comes. The
	// guard would refuse to empty it: --min-available 0 accepts that.
	c := drainBed(t, "term", "{tolerations: [{key: fleetdrain.spokekit.io/drained, operator: Exists, tolerationSeconds: 600}]}", "spoke-t").hub.Cluster
	s := start(t, c, "fleetdrain", "cluster", "spoke-t", "--min-available", "0", "--timeout", "10m")
	r := interrupt(t, s, "1 of 1 placement works left", syscall.SIGTERM)
	assert.Equal(t, r.ExitCode, 130, r)
	assert.Check(t, is.Contains(r.Stderr, "managedcluster/spoke-t tainted"), r)
	assert.Check(t, is.Contains(r.Stderr, "interrupted by SIGTERM"), r)
	assert.Check(t, is.Contains(r.Stderr, "taken off again from spoke-t"), r)
	assert.Check(t, is.Contains(r.Stdout, "GivenBack"), "the summary is printed: %s", r)
	found := false
	for _, taint := range taints(t, c, "spoke-t") {
		found = found || taint.Key == fleetdrain.DrainTaintKey
	}
	assert.Check(t, !found, "the taint is given back: the works had not started to leave")
	r = kubectl(t, c, "fleetdrain", "uncordon", "cluster", "spoke-t")
	assert.Equal(t, r.ExitCode, 0, r)
}
