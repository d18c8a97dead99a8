package fleetdrain

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/capi"
)

// NodePods is what the drain library found on one node: every pod the pod
// selector picks, the ones it would evict, its refusals ("cannot delete
// ...: ns/a, ns/b") and its warnings.
type NodePods struct {
	Node     *corev1.Node
	All      []corev1.Pod
	Evict    []corev1.Pod
	Refusals []error
	Warnings string
	// Drains and Wait are set on a Machine's node (ApplyDrainRules): how
	// Cluster API drains each pod, by namespace/name, and the pods waited
	// for until they complete.
	Drains map[string]PodDrain
	Wait   []corev1.Pod
	// Rules says where the node's MachineDrainRules came from, or why not.
	Rules string
}

// PlanNode turns what is on a node and the cluster's disruption budgets into
// the node's plan: what is evicted, what is skipped and why, and what blocks.
func PlanNode(found NodePods, budgets []*policyv1.PodDisruptionBudget) NodeReport {
	r := NodeReport{
		ReportMeta:       api.NewReportMeta("NodeDrain", found.Node.Name),
		Machine:          found.Node.Annotations[capi.MachineAnnotation],
		Result:           NodePlanned,
		WasUnschedulable: found.Node.Spec.Unschedulable && !CordonedByUs(found.Node),
		DrainRules:       found.Rules,
		Evict:            []PlannedPod{},
	}
	evicted := map[string]bool{}
	blocking := map[string]*Blocker{}
	var blockingOrder []string
	for i := range found.Evict {
		p := &found.Evict[i]
		evicted[namespacedName(p.Namespace, p.Name)] = true
		planned := found.planned(p)
		for _, b := range Covering(budgets, p) {
			key := namespacedName(b.Namespace, b.Name)
			planned.Budgets = append(planned.Budgets, key)
			if b.Status.DisruptionsAllowed > 0 {
				continue
			}
			if blocking[key] == nil {
				blocking[key] = budgetBlocker(b)
				blockingOrder = append(blockingOrder, key)
			}
			blocking[key].Pods = append(blocking[key].Pods, namespacedName(p.Namespace, p.Name))
		}
		r.Evict = append(r.Evict, planned)
	}
	refused := map[string]bool{}
	for _, err := range found.Refusals {
		b := refusalBlocker(err)
		for _, p := range b.Pods {
			refused[p] = true
		}
		r.Blockers = append(r.Blockers, b)
	}
	slices.SortFunc(r.Blockers, func(a, b Blocker) int { return strings.Compare(a.Message, b.Message) })
	for _, key := range blockingOrder {
		b := blocking[key]
		b.Message = fmt.Sprintf("PodDisruptionBudget %s allows 0 disruptions now (protects %s); evictions wait for it up to --pdb-timeout",
			key, strings.Join(b.Pods, ", "))
		r.Blockers = append(r.Blockers, *b)
	}
	for i := range found.Wait {
		r.WaitCompleted = append(r.WaitCompleted, found.planned(&found.Wait[i]))
	}
	for i := range found.All {
		p := &found.All[i]
		key := namespacedName(p.Namespace, p.Name)
		d, ruled := found.Drains[key]
		if evicted[key] || refused[key] || ruled && d.Behavior == capi.DrainBehaviorWaitCompleted {
			continue
		}
		skipped := found.planned(p)
		skipped.Reason = skipReason(p)
		if ruled && d.Behavior == capi.DrainBehaviorSkip {
			skipped.Reason = "Cluster API skips it: " + d.decidedBy()
		}
		r.Skip = append(r.Skip, skipped)
	}
	for _, w := range strings.Split(found.Warnings, "; ") {
		if w != "" {
			r.Warnings = append(r.Warnings, w)
		}
	}
	slices.Sort(r.Warnings)
	return r
}

// planned is a pod of the node as the plan names it: with its Cluster API
// drain order and what decided it, on a Machine's node.
func (found NodePods) planned(p *corev1.Pod) PlannedPod {
	planned := PlannedPod{Namespace: p.Namespace, Name: p.Name, Owner: owner(p)}
	if d, ok := found.Drains[namespacedName(p.Namespace, p.Name)]; ok {
		order := d.Order
		planned.Order, planned.DecidedBy = &order, d.decidedBy()
	}
	return planned
}

// Covering returns the budgets that protect pod: same namespace, and a
// selector that matches its labels (a null selector matches nothing).
func Covering(budgets []*policyv1.PodDisruptionBudget, pod *corev1.Pod) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, b := range budgets {
		if b.Namespace != pod.Namespace || b.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, b)
	}
	return out
}

func budgetBlocker(b *policyv1.PodDisruptionBudget) *Blocker {
	allowed := b.Status.DisruptionsAllowed
	return &Blocker{Kind: BlockerBudget, Name: namespacedName(b.Namespace, b.Name), DisruptionsAllowed: &allowed}
}

// refusalBlocker reads one refusal of the drain library, which names its
// reason and flag first and the pods after the last ": ".
func refusalBlocker(err error) Blocker {
	msg := err.Error()
	b := Blocker{Kind: BlockerOther, Message: msg, Refuses: true, Pods: []string{}}
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		b.Pods = strings.Split(msg[i+2:], ", ")
	}
	switch {
	case strings.Contains(msg, "--force"):
		b.Kind = BlockerUnmanaged
	case strings.Contains(msg, "--delete-emptydir-data"):
		b.Kind = BlockerLocalData
	case strings.Contains(msg, "--ignore-daemonsets"):
		b.Kind = BlockerDaemonSet
	}
	return b
}

func owner(p *corev1.Pod) string {
	if c := metav1.GetControllerOf(p); c != nil {
		return c.Kind + "/" + c.Name
	}
	return ""
}

func skipReason(p *corev1.Pod) string {
	switch {
	case p.Annotations[corev1.MirrorPodAnnotationKey] != "":
		return "mirror pod (the kubelet owns it)"
	case metav1.GetControllerOf(p) != nil && metav1.GetControllerOf(p).Kind == "DaemonSet":
		return "DaemonSet-managed (--ignore-daemonsets)"
	case p.DeletionTimestamp != nil:
		return "already terminating"
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		return "finished"
	}
	return "left by the drain filters"
}
