package fleetdrain

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	policyv1 "k8s.io/api/policy/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/cli"
)

// planned is a node's plan with one pod per budget key given.
func planned(node string, budgetKeys ...string) NodeReport {
	r := NodeReport{ReportMeta: api.NewReportMeta("NodeDrain", node)}
	for i, b := range budgetKeys {
		r.Evict = append(r.Evict, PlannedPod{Namespace: "shop", Name: fmt.Sprintf("%s-%d", node, i), Budgets: []string{b}})
	}
	return r
}

func TestPlanBudgetOrder(t *testing.T) {
	allow := func(n int32, names ...string) []*policyv1.PodDisruptionBudget {
		var out []*policyv1.PodDisruptionBudget
		for _, name := range names {
			out = append(out, budget("shop", name, n, map[string]string{"app": name}))
		}
		return out
	}
	cases := []struct {
		name          string
		items         []NodeReport
		budgets       []*policyv1.PodDisruptionBudget
		maxConcurrent int
	}{
		{"two nodes each hold a pod of x and y, each allowing one", []NodeReport{planned("a", "shop/x", "shop/y"), planned("b", "shop/y", "shop/x")}, allow(1, "x", "y"), 2},
		{"the same, one node at a time", []NodeReport{planned("a", "shop/x", "shop/y"), planned("b", "shop/y", "shop/x")}, allow(1, "x", "y"), 1},
		{"the budgets allow both evictions", []NodeReport{planned("a", "shop/x", "shop/y"), planned("b", "shop/y", "shop/x")}, allow(2, "x", "y"), 2},
		{"one contended budget: the other node waits, then finishes", []NodeReport{planned("a", "shop/x", "shop/y"), planned("b", "shop/x")}, allow(1, "x", "y"), 2},
		{"three nodes in a ring of three budgets", []NodeReport{planned("a", "shop/x", "shop/y"), planned("b", "shop/y", "shop/z"), planned("c", "shop/z", "shop/x"), planned("d", "shop/x")}, allow(1, "x", "y", "z"), 3},
		{"two deadlocks apart, in run order", []NodeReport{planned("d", "shop/v", "shop/w"), planned("a", "shop/x", "shop/y"), planned("b", "shop/x", "shop/y"), planned("c", "shop/w", "shop/v")}, allow(1, "v", "w", "x", "y"), 4},
	}
	var out strings.Builder
	for _, c := range cases {
		order := PlanBudgetOrder(c.items, c.budgets, c.maxConcurrent)
		fmt.Fprintf(&out, "== %s (--max-concurrent %d)\n", c.name, c.maxConcurrent)
		if len(order.Deadlocks) == 0 {
			out.WriteString("no deadlock\n")
		}
		for _, d := range order.Deadlocks {
			fmt.Fprintf(&out, "deadlock: nodes %s, budgets %s\n", strings.Join(d.Nodes, " "), strings.Join(d.Budgets, " "))
			fmt.Fprintf(&out, "  %s: %s\n", d.Nodes[0], d.Message(d.Nodes[0]))
		}
		for _, b := range slices.Sorted(maps.Keys(order.Turns)) {
			fmt.Fprintf(&out, "turns at %s: %s\n", b, strings.Join(order.Turns[b], ", "))
		}
	}
	golden.Assert(t, out.String(), "budget-order.golden")
}

// Pairs of nodes drained together, each node of a pair holding a pod of
// budgets x and y that allow one disruption each, on a cluster whose
// replacements become Ready only once a node is empty. Drains that each
// took one budget would wait on each other until --pdb-timeout (with no
// order, a pair crosses so about half the time; eight pairs make a miss
// unlikely); ordered, every node is drained. The plan names each pair.
func TestBudgetDeadlockedNodesAreDrainedInTurn(t *testing.T) {
	var objs []k8sruntime.Object
	var names []string
	for i := range 8 {
		a, b := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
		x, y := fmt.Sprintf("x%d", i), fmt.Sprintf("y%d", i)
		names = append(names, a, b)
		objs = append(objs, node(a, false, nil), node(b, false, nil),
			budgetPod(a, x, 0), budgetPod(a, y, 0), budgetPod(b, y, 0), budgetPod(b, x, 0),
			budgetWithRV(x, 1), budgetWithRV(y, 1))
	}
	c := newBudgetCluster(t, true, true, objs...)
	o, out, errOut := nodeOptions(c.Clientset, names...)
	o.MaxConcurrent, o.PDBTimeout = len(names), 5*time.Second

	o.DryRun = cli.DryRunClient
	assert.NilError(t, o.drainNodes(context.Background()))
	assert.Check(t, is.Equal(strings.Count(out.String(), "budget deadlock: drained at the same time as"), 16), out.String())
	assert.Check(t, is.Contains(out.String(), "one of shop/x3, shop/y3 allows and wait on another's, until --pdb-timeout; these budgets' disruptions go to one node after the other instead: a3, then b3"), out.String())

	out.Reset()
	o.DryRun = cli.DryRunNone
	err := o.drainNodes(context.Background())
	assert.NilError(t, err, errOut.String())
	assert.Check(t, is.Equal(strings.Count(out.String(), "Drained"), 16), out.String())
}
