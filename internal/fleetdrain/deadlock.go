package fleetdrain

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	policyv1 "k8s.io/api/policy/v1"

	"github.com/spokekit/spokekit/internal/cli"
)

// BudgetDeadlock is a set of nodes drained at the same time that could each
// take the last disruption one budget allows and then wait on another
// budget whose last disruption a node of the set took: each drain waits on
// the others' replacements, and with no room for them (a pool at capacity,
// replacements that need the drained Machines gone) all wait out
// --pdb-timeout. In the bipartite graph of nodes and the budgets they
// contend for, it is a cycle.
type BudgetDeadlock struct {
	// Nodes are in the order the drain lets them take the budgets.
	Nodes   []string `json:"nodes"`
	Budgets []string `json:"budgets"`
}

// BudgetOrder is how a run with --max-concurrent above 1 shares the
// budgets its nodes contend for: the deadlocks found, and per budget of a
// deadlock the nodes in the order they take its disruptions.
type BudgetOrder struct {
	Deadlocks []BudgetDeadlock
	// Turns lists, per budget (namespace/name), the nodes that take its
	// disruptions one after another, in run order.
	Turns map[string][]string
}

// PlanBudgetOrder finds the budget deadlocks among the planned nodes. A
// budget is contended when the nodes together need more of its pods
// evicted than it allows now, and pods of it sit on two nodes or more.
// Nodes drained one at a time (maxConcurrent 1) take no budget from each
// other, so there is no deadlock then. Pure: items are the nodes' plans in
// run order, budgets the cluster's.
func PlanBudgetOrder(items []NodeReport, budgets []*policyv1.PodDisruptionBudget, maxConcurrent int) BudgetOrder {
	order := BudgetOrder{Turns: map[string][]string{}}
	if maxConcurrent < 2 {
		return order
	}
	allowed := map[string]int{}
	for _, b := range budgets {
		allowed[namespacedName(b.Namespace, b.Name)] = int(b.Status.DisruptionsAllowed)
	}
	// need[budget][node] counts the node's pods the budget protects.
	need := map[string]map[string]int{}
	for _, n := range items {
		for _, p := range n.Evict {
			for _, b := range p.Budgets {
				if need[b] == nil {
					need[b] = map[string]int{}
				}
				need[b][n.Metadata.Name]++
			}
		}
	}
	contended := func(b string) bool {
		total := 0
		for _, c := range need[b] {
			total += c
		}
		return len(need[b]) >= 2 && total > allowed[b]
	}
	g := newUnionFind()
	for _, n := range items {
		for _, b := range slices.Sorted(maps.Keys(need)) {
			if need[b][n.Metadata.Name] > 0 && contended(b) {
				g.union("node/"+n.Metadata.Name, "budget/"+b)
			}
		}
	}
	byRoot := map[string]*BudgetDeadlock{}
	var roots []string
	for _, n := range items {
		root := g.find("node/" + n.Metadata.Name)
		if !g.cyclic[root] {
			continue
		}
		if byRoot[root] == nil {
			byRoot[root] = &BudgetDeadlock{}
			roots = append(roots, root)
		}
		byRoot[root].Nodes = append(byRoot[root].Nodes, n.Metadata.Name)
	}
	for _, b := range slices.Sorted(maps.Keys(need)) {
		d := byRoot[g.find("budget/"+b)]
		if d == nil || !contended(b) {
			continue
		}
		d.Budgets = append(d.Budgets, b)
		for _, n := range d.Nodes {
			if need[b][n] > 0 {
				order.Turns[b] = append(order.Turns[b], n)
			}
		}
	}
	for _, root := range roots {
		order.Deadlocks = append(order.Deadlocks, *byRoot[root])
	}
	return order
}

// Message says, for one node of a deadlock, what would happen and what the
// drain does instead.
func (d BudgetDeadlock) Message(node string) string {
	var others []string
	for _, n := range d.Nodes {
		if n != node {
			others = append(others, n)
		}
	}
	return fmt.Sprintf("budget deadlock: drained at the same time as %s, each node could take the last disruption one of %s allows and wait on another's, until --pdb-timeout; these budgets' disruptions go to one node after the other instead: %s",
		strings.Join(others, ", "), strings.Join(d.Budgets, ", "), strings.Join(d.Nodes, ", then "))
}

// unionFind joins the nodes and budgets that contend, and marks a set that
// a join closed into a cycle.
type unionFind struct {
	parent map[string]string
	cyclic map[string]bool
}

func newUnionFind() *unionFind {
	return &unionFind{parent: map[string]string{}, cyclic: map[string]bool{}}
}

func (u *unionFind) find(x string) string {
	if _, ok := u.parent[x]; !ok {
		u.parent[x] = x
	}
	for u.parent[x] != x {
		u.parent[x] = u.parent[u.parent[x]]
		x = u.parent[x]
	}
	return x
}

func (u *unionFind) union(a, b string) {
	ra, rb := u.find(a), u.find(b)
	if ra == rb {
		u.cyclic[ra] = true
		return
	}
	u.parent[rb] = ra
	u.cyclic[ra] = u.cyclic[ra] || u.cyclic[rb]
}

// budgetTurns hands the disruptions of each budget of a deadlock to its
// nodes one after another: a node takes them only when every node before
// it in that budget's turn has taken all it needed, or its drain ended.
// A global order over the nodes is what breaks the cycle. Nil gates
// nothing.
type budgetTurns struct {
	mu     sync.Mutex
	turns  map[string][]string
	left   map[string]map[string]int // node -> budget -> pods still to evict
	signal *cli.Signal
}

func newBudgetTurns(order BudgetOrder, items []NodeReport) *budgetTurns {
	if len(order.Turns) == 0 {
		return nil
	}
	t := &budgetTurns{turns: map[string][]string{}, left: map[string]map[string]int{}, signal: cli.NewSignal()}
	for b, nodes := range order.Turns {
		t.turns[b] = slices.Clone(nodes)
	}
	for _, n := range items {
		for _, p := range n.Evict {
			for _, b := range p.Budgets {
				if order.Turns[b] == nil {
					continue
				}
				if t.left[n.Metadata.Name] == nil {
					t.left[n.Metadata.Name] = map[string]int{}
				}
				t.left[n.Metadata.Name][b]++
			}
		}
	}
	return t
}

// wait blocks until it is node's turn at every one of budgets that has
// turns. A node not in a budget's turn (a pod that appeared since the plan,
// or one already counted) is not held.
func (t *budgetTurns) wait(ctx context.Context, node string, budgets []string) error {
	if t == nil {
		return nil
	}
	for {
		changed := t.signal.Wait()
		waitOn := t.aheadOf(node, budgets)
		if waitOn == "" {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to take budget %s's disruptions first: %w", t.head(waitOn), waitOn, context.Cause(ctx))
		}
	}
}

// aheadOf names a budget whose turn is another node's, or "".
func (t *budgetTurns) aheadOf(node string, budgets []string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, b := range budgets {
		q := t.turns[b]
		if slices.Contains(q, node) && q[0] != node {
			return b
		}
	}
	return ""
}

func (t *budgetTurns) head(b string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return firstOr(t.turns[b], "another node")
}

// took counts one eviction of node's against budgets; the node's turn at a
// budget ends with its last pod of it.
func (t *budgetTurns) took(node string, budgets []string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, b := range budgets {
		if t.left[node][b] == 0 {
			continue
		}
		t.left[node][b]--
		if t.left[node][b] == 0 {
			t.turns[b] = slices.DeleteFunc(t.turns[b], func(n string) bool { return n == node })
		}
	}
	t.signal.Fire()
}

// leave ends node's turns when its drain ends, drained or not, so that a
// failed node never holds the others.
func (t *budgetTurns) leave(node string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for b := range t.turns {
		t.turns[b] = slices.DeleteFunc(t.turns[b], func(n string) bool { return n == node })
	}
	delete(t.left, node)
	t.signal.Fire()
}

// budgetKeys names budgets as the plan does (namespace/name).
func budgetKeys(budgets []*policyv1.PodDisruptionBudget) []string {
	var out []string
	for _, b := range budgets {
		out = append(out, namespacedName(b.Namespace, b.Name))
	}
	return out
}
