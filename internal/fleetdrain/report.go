package fleetdrain

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// NodeResult is how a node's drain ended (or, in a plan, would start).
type NodeResult string

// Node results.
const (
	// NodePlanned: a dry run; nothing was changed.
	NodePlanned NodeResult = "Planned"
	// NodeRefused: a blocker found before any change; nothing was changed.
	NodeRefused NodeResult = "Refused"
	NodeDrained NodeResult = "Drained"
	NodeFailed  NodeResult = "Failed"
	// NodeInterrupted: Ctrl-C or SIGTERM stopped the node's drain, or came
	// before it started.
	NodeInterrupted NodeResult = "Interrupted"
	// NodeTimedOut: --timeout ran out while the cordoned node was being
	// drained; running the same command again finishes it.
	NodeTimedOut NodeResult = "TimedOut"
)

// DrainReport is what `fleetdrain node` prints, with the same schema for a
// dry run (every node Planned) and a real run.
type DrainReport struct {
	api.ReportMeta `json:",inline"`
	DryRun         string `json:"dryRun,omitempty"`
	// LifecycleConditions: the API server runs with the
	// NodeLifecycleConditions gate on, so the drain sets each node's
	// DrainInProgress and Drained conditions besides its cordon mark.
	LifecycleConditions bool         `json:"lifecycleConditions,omitempty"`
	Items               []NodeReport `json:"items"`
}

// NodeReport is the plan for one node and, after a run, its outcome.
type NodeReport struct {
	api.ReportMeta `json:",inline"`
	// Machine is the Cluster API Machine behind the node, for the platform team.
	Machine string `json:"machine,omitempty"`
	// DrainRules says, on a Machine's node, which MachineDrainRules decide
	// its drain as Cluster API's would, or why none were read.
	DrainRules string `json:"drainRules,omitempty"`
	// NodeState is Unreachable or NotReady for a node that is not Ready.
	NodeState string `json:"nodeState,omitempty"`
	// UnhealthyDeletes (plan) and UnhealthyDeleted (run): pods not Ready
	// whose budgets have no healthy pod to lose, deleted past them with
	// --unhealthy-pods=evict-if-budget-empty.
	UnhealthyDeletes []PlannedPod `json:"unhealthyDeletes,omitempty"`
	UnhealthyDeleted []string     `json:"unhealthyDeleted,omitempty"`
	Result           NodeResult   `json:"result"`
	// WasUnschedulable: the node was cordoned before this run by someone
	// else, so a failed drain leaves it cordoned. A cordon left by an
	// interrupted fleetdrain run is fleetdrain's own and does not count.
	WasUnschedulable bool `json:"wasUnschedulable"`
	// Uncordoned: the drain failed or was interrupted and
	// --uncordon-on-failure gave the node back.
	Uncordoned bool         `json:"uncordoned,omitempty"`
	Evict      []PlannedPod `json:"evict"`
	// WaitCompleted are pods Cluster API never evicts and waits for until
	// they complete (a Machine's node only).
	WaitCompleted []PlannedPod `json:"waitCompleted,omitempty"`
	Skip          []PlannedPod `json:"skip,omitempty"`
	Blockers      []Blocker    `json:"blockers,omitempty"`
	Warnings      []string     `json:"warnings,omitempty"`
	// Evicted counts the pods that were evicted (or deleted) and are gone.
	Evicted  int    `json:"evicted"`
	Error    string `json:"error,omitempty"`
	Duration string `json:"duration,omitempty"`
}

// PlannedPod is one pod of a node and what the drain does with it.
type PlannedPod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Owner is the controller of the pod, e.g. ReplicaSet/web-6d4b.
	Owner string `json:"owner,omitempty"`
	// Budgets are the PodDisruptionBudgets (namespace/name) protecting it.
	Budgets []string `json:"budgets,omitempty"`
	// Reason says why a pod is skipped.
	Reason string `json:"reason,omitempty"`
	// Order and DecidedBy, on a Machine's node: the pod's batch in Cluster
	// API's drain (lower first) and what decided how it is drained (its
	// cluster.x-k8s.io/drain label or a MachineDrainRule).
	Order     *int32 `json:"order,omitempty"`
	DecidedBy string `json:"decidedBy,omitempty"`
	// ComesBack says why its replacement would land on the node again, or
	// could run on no other node (see ComesBack).
	ComesBack string `json:"comesBack,omitempty"`
	// Surge says, with --surge, whether its replacement starts first (see
	// PlanSurge), or why not.
	Surge string `json:"surge,omitempty"`
}

// Blocker kinds.
const (
	BlockerBudget    = "PodDisruptionBudget"
	BlockerUnmanaged = "UnmanagedPods"
	BlockerLocalData = "LocalData"
	BlockerDaemonSet = "DaemonSetPods"
	BlockerOther     = "Other"
	// BlockerDeadlock: nodes drained together would each wait on a budget
	// another took; the drain orders them (see BudgetDeadlock).
	BlockerDeadlock = "BudgetDeadlock"
)

// Blocker is something that stops a node's drain: pods the flags do not
// allow to remove (the drain is refused before any change), or a
// PodDisruptionBudget allowing no disruption (waited on up to --pdb-timeout).
type Blocker struct {
	Kind string `json:"kind"`
	// Name is the budget's namespace/name.
	Name               string `json:"name,omitempty"`
	DisruptionsAllowed *int32 `json:"disruptionsAllowed,omitempty"`
	// Pods are the node's pods it concerns (namespace/name).
	Pods    []string `json:"pods"`
	Message string   `json:"message"`
	// Refuses: the drain cannot start while it stands.
	Refuses bool `json:"refuses"`
}

// namespacedName is how pods, budgets and placements are named and keyed: namespace/name.
func namespacedName(namespace, name string) string { return namespace + "/" + name }

// refused tells whether any blocker of the report stops the drain before it starts.
func (r NodeReport) refused() bool {
	for _, b := range r.Blockers {
		if b.Refuses {
			return true
		}
	}
	return false
}

// planTable is the dry-run (and refusal) view: one row per pod and blocker.
func (r DrainReport) planTable() cli.Table {
	t := cli.Table{Columns: []cli.Column{{Name: "NODE"}, {Name: "ACTION"}, {Name: "POD"}, {Name: "DETAIL"}, {Name: "MACHINE", Wide: true}}}
	for _, n := range r.Items {
		add := func(action, pod, detail string) {
			t.Rows = append(t.Rows, []string{n.Metadata.Name, action, pod, detail, n.Machine})
		}
		if n.DrainRules != "" {
			add("rules", "", n.DrainRules)
		}
		for _, p := range n.Evict {
			detail := p.Owner
			if len(p.Budgets) > 0 {
				detail += " (budget " + strings.Join(p.Budgets, ", ") + ")"
			}
			for _, more := range []string{p.ComesBack, p.Surge} {
				if more != "" {
					detail += "; " + more
				}
			}
			add("evict", namespacedName(p.Namespace, p.Name), detail+p.ruleDetail())
		}
		for _, p := range n.WaitCompleted {
			add("wait", namespacedName(p.Namespace, p.Name), "never evicted: waited for until it completes, within --timeout"+p.ruleDetail())
		}
		for _, p := range n.Skip {
			add("skip", namespacedName(p.Namespace, p.Name), p.Reason)
		}
		for _, b := range n.Blockers {
			add("blocked", strings.Join(b.Pods, ","), b.Message)
		}
		for _, p := range n.UnhealthyDeletes {
			add("delete", namespacedName(p.Namespace, p.Name), p.Reason)
		}
		for _, w := range n.Warnings {
			add("warning", "", w)
		}
		if len(n.Evict)+len(n.WaitCompleted)+len(n.Skip)+len(n.Blockers)+len(n.Warnings) == 0 {
			add("none", "", "no pods to evict")
		}
	}
	return t
}

// ruleDetail is a pod's Cluster API drain order and what decided it.
func (p PlannedPod) ruleDetail() string {
	if p.Order == nil {
		return ""
	}
	return fmt.Sprintf(" [order %d: %s]", *p.Order, p.DecidedBy)
}

// resultTable is the summary after a run: one row per node.
func (r DrainReport) resultTable() cli.Table {
	t := cli.Table{Columns: []cli.Column{{Name: "NODE"}, {Name: "RESULT"}, {Name: "EVICTED"}, {Name: "MACHINE"}, {Name: "DURATION"}, {Name: "DETAIL"}}}
	for _, n := range r.Items {
		detail := n.Error
		if n.Uncordoned {
			detail += " (node uncordoned)"
		}
		t.Rows = append(t.Rows, []string{n.Metadata.Name, string(n.Result), strconv.Itoa(n.Evicted) + "/" + strconv.Itoa(len(n.Evict)), n.Machine, n.Duration, strings.TrimSpace(detail)})
	}
	return t
}

// outcome is the error a run ends with: none when every node was drained;
// otherwise which nodes were not, which of them stay cordoned, and what to
// run next. After Ctrl-C it carries the interruption (exit 130).
func (r DrainReport) outcome(ctx context.Context, total int) error {
	var failed, cordoned []string
	for _, n := range r.Items {
		if n.Result == NodeDrained {
			continue
		}
		failed = append(failed, n.Metadata.Name)
		if !n.Uncordoned {
			cordoned = append(cordoned, n.Metadata.Name)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d of %d node(s) drained; not drained: %s", total-len(failed), total, strings.Join(failed, ", "))
	switch {
	case len(cordoned) == 0:
		msg += " (given back: uncordoned)"
	case len(cordoned) < len(failed):
		msg += "; still cordoned: " + strings.Join(cordoned, ", ")
	}
	msg += "; run the same command again to finish (drained nodes are skipped quickly)"
	if len(cordoned) > 0 {
		msg += ", or give the cordoned ones back with `kubectl fleetdrain uncordon node " + strings.Join(cordoned, " ") + "`"
	}
	if cli.Interrupted(ctx) {
		return fmt.Errorf("%s: %w", msg, context.Cause(ctx))
	}
	if r.onlyTimedOut() {
		return exitcode.TimedOutError(errors.New(msg))
	}
	return errors.New(msg)
}

// onlyTimedOut tells whether every node not drained ran out of --timeout:
// the change (the cordon, some evictions) was made and the wait timed out.
func (r DrainReport) onlyTimedOut() bool {
	for _, n := range r.Items {
		if n.Result != NodeDrained && n.Result != NodeTimedOut {
			return false
		}
	}
	return true
}

// machineNote tells the user what to hand to the platform team.
func (r DrainReport) machineNote() string {
	var lines []string
	for _, n := range r.Items {
		if n.Result == NodeDrained && n.Machine != "" {
			lines = append(lines, fmt.Sprintf("  node %s is Machine %s", n.Metadata.Name, n.Machine))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "Drained nodes and their Cluster API Machines (hand these names to the platform team):\n" + strings.Join(lines, "\n") + "\n"
}

// Subjects are the Nodes, for -o name.
func (r DrainReport) Subjects() []string {
	names := make([]string, 0, len(r.Items))
	for _, n := range r.Items {
		names = append(names, api.ObjectName(api.NodeKind, n.Metadata.Name))
	}
	return names
}
