package fleetdrain

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/spokekit/spokekit/internal/api/capi"
)

// PodDrain is how Cluster API's Machine controller drains one pod of its
// Machine's Node, and what decided it.
type PodDrain struct {
	Behavior capi.DrainBehavior `json:"behavior"`
	// Order is the pod's batch: lower orders are drained first, and a batch
	// starts once every pod of the ones before is gone.
	Order int32 `json:"order"`
	// DecidedBy names the pod's label, or the MachineDrainRule whose
	// selectors matched first; empty when neither did (Drain, order 0).
	DecidedBy string `json:"decidedBy,omitempty"`
	// Warning: the pod's drain label has a value Cluster API ignores.
	Warning string `json:"-"`
}

// decidedBy describes what decided, for the plan.
func (d PodDrain) decidedBy() string {
	if d.DecidedBy == "" {
		return "no MachineDrainRule matches"
	}
	return d.DecidedBy
}

// RulesForMachine returns the rules (all of the Machine's namespace) that
// apply to machine of cluster, sorted by name: for each pod the first whose
// pod selectors match decides, as in the Machine controller. A rule with a
// selector that does not parse stops the Machine controller's drain of
// every Machine of the namespace, so it is an error here too.
func RulesForMachine(rules []capi.MachineDrainRule, machine *capi.Machine, cluster *capi.Cluster) ([]capi.MachineDrainRule, error) {
	var errs []error
	for _, r := range rules {
		if err := validRuleSelectors(r); err != nil {
			errs = append(errs, fmt.Errorf("MachineDrainRule %s/%s: %w", r.Namespace, r.Name, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var out []capi.MachineDrainRule
	for _, r := range rules {
		if r.Namespace == machine.Namespace && appliesToMachine(r, machine, cluster) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b capi.MachineDrainRule) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

func validRuleSelectors(r capi.MachineDrainRule) error {
	var sels []*metav1.LabelSelector
	for _, m := range r.Spec.Machines {
		sels = append(sels, m.Selector, m.ClusterSelector)
	}
	for _, p := range r.Spec.Pods {
		sels = append(sels, p.Selector, p.NamespaceSelector)
	}
	for _, s := range sels {
		if _, err := metav1.LabelSelectorAsSelector(s); err != nil {
			return err
		}
	}
	return nil
}

// appliesToMachine: no machine selectors match every Machine; otherwise
// one entry must match both the Machine's labels and its Cluster's.
func appliesToMachine(r capi.MachineDrainRule, machine *capi.Machine, cluster *capi.Cluster) bool {
	if len(r.Spec.Machines) == 0 {
		return true
	}
	var clusterLabels map[string]string
	if cluster != nil {
		clusterLabels = cluster.Labels
	}
	return slices.ContainsFunc(r.Spec.Machines, func(m capi.MachineDrainRuleMachineSelect) bool {
		return selects(m.Selector, machine.Labels) && selects(m.ClusterSelector, clusterLabels)
	})
}

// appliesToPod is appliesToMachine for a pod and its namespace.
func appliesToPod(r capi.MachineDrainRule, pod *corev1.Pod, ns *corev1.Namespace) bool {
	if len(r.Spec.Pods) == 0 {
		return true
	}
	return slices.ContainsFunc(r.Spec.Pods, func(p capi.MachineDrainRulePodSelect) bool {
		return selects(p.Selector, pod.Labels) && selects(p.NamespaceSelector, ns.Labels)
	})
}

// selects: a nil or empty selector selects everything (selectors were
// validated by RulesForMachine).
func selects(s *metav1.LabelSelector, set map[string]string) bool {
	if s == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	return err == nil && (sel.Empty() || sel.Matches(labels.Set(set)))
}

// DecidePodDrain decides one pod as the Machine controller does once
// kubectl's filters (DaemonSet, mirror and finished pods) have passed it:
// the pod's cluster.x-k8s.io/drain label first ("skip", "wait-completed",
// any case), then the first of rules (RulesForMachine's) whose pod
// selectors match the pod and its namespace; none: Drain at order 0. A
// WaitCompleted pod always has order 0. A pod whose namespace is not
// found, or a rule with a behaviour Cluster API does not know, stops the
// Machine controller's drain, so they are errors.
func DecidePodDrain(pod *corev1.Pod, ns *corev1.Namespace, rules []capi.MachineDrainRule) (PodDrain, error) {
	var warning string
	if v, ok := pod.Labels[capi.PodDrainLabel]; ok {
		label := "label " + capi.PodDrainLabel + "=" + v
		switch {
		case strings.EqualFold(v, string(capi.DrainBehaviorSkip)):
			return PodDrain{Behavior: capi.DrainBehaviorSkip, DecidedBy: label}, nil
		case strings.EqualFold(strings.Replace(v, "-", "", 1), string(capi.DrainBehaviorWaitCompleted)):
			return PodDrain{Behavior: capi.DrainBehaviorWaitCompleted, DecidedBy: label}, nil
		}
		warning = fmt.Sprintf("pod %s: %s is neither skip nor wait-completed; Cluster API ignores it", namespacedName(pod.Namespace, pod.Name), label)
	}
	if len(rules) > 0 && ns == nil {
		return PodDrain{}, fmt.Errorf("pod %s: its namespace is not found", namespacedName(pod.Namespace, pod.Name))
	}
	for _, r := range rules {
		if !appliesToPod(r, pod, ns) {
			continue
		}
		d := PodDrain{Behavior: r.Spec.Drain.Behavior, DecidedBy: "MachineDrainRule " + r.Name, Warning: warning}
		switch r.Spec.Drain.Behavior {
		case capi.DrainBehaviorDrain:
			if r.Spec.Drain.Order != nil {
				d.Order = *r.Spec.Drain.Order
			}
		case capi.DrainBehaviorSkip, capi.DrainBehaviorWaitCompleted:
		default:
			return PodDrain{}, fmt.Errorf("MachineDrainRule %s/%s has an unknown spec.drain.behavior %q", r.Namespace, r.Name, r.Spec.Drain.Behavior)
		}
		return d, nil
	}
	return PodDrain{Behavior: capi.DrainBehaviorDrain, Warning: warning}, nil
}

// NodeRules is what decides, as Cluster API does, the drain of the pods of
// a node that belongs to a Machine.
type NodeRules struct {
	// Machine is the Machine's namespace/name.
	Machine string
	// Source says where the MachineDrainRules were read, or why they were
	// not (then only the pods' labels decide), for the plan.
	Source string
	// Rules are RulesForMachine's.
	Rules []capi.MachineDrainRule
	// Namespaces are the workload cluster's, by name: the rules' namespace
	// selectors match their labels.
	Namespaces map[string]*corev1.Namespace
}

// ApplyDrainRules decides every pod the drain library would evict or
// refuses on a Machine's node: a Skip pod leaves the evict list (PlanNode
// lists it as skipped, with what decided), a WaitCompleted pod moves to
// Wait, a Drain pod stays, in the batch of its order. A pod the rules keep
// on the node is never removed, so the library's refusal of it (no
// controller, local data) no longer stands.
func ApplyDrainRules(found NodePods, rules NodeRules) (NodePods, error) {
	found.Drains, found.Rules = map[string]PodDrain{}, rules.Source
	all := map[string]*corev1.Pod{}
	for i := range found.All {
		all[namespacedName(found.All[i].Namespace, found.All[i].Name)] = &found.All[i]
	}
	var warnings []string
	decide := func(p *corev1.Pod) (PodDrain, error) {
		key := namespacedName(p.Namespace, p.Name)
		if d, ok := found.Drains[key]; ok {
			return d, nil
		}
		d, err := DecidePodDrain(p, rules.Namespaces[p.Namespace], rules.Rules)
		if err != nil {
			return d, err
		}
		found.Drains[key] = d
		if d.Behavior == capi.DrainBehaviorWaitCompleted {
			found.Wait = append(found.Wait, *p)
		}
		if d.Warning != "" {
			warnings = append(warnings, d.Warning)
		}
		return d, nil
	}
	var evict []corev1.Pod
	for i := range found.Evict {
		d, err := decide(&found.Evict[i])
		if err != nil {
			return found, fmt.Errorf("deciding the drain of node %s as Cluster API would: %w", found.Node.Name, err)
		}
		if d.Behavior == capi.DrainBehaviorDrain {
			evict = append(evict, found.Evict[i])
		}
	}
	found.Evict = evict
	var refusals []error
	for _, refusal := range found.Refusals {
		msg := refusal.Error()
		i := strings.LastIndex(msg, ": ")
		if i < 0 {
			refusals = append(refusals, refusal)
			continue
		}
		var kept []string
		for _, name := range strings.Split(msg[i+2:], ", ") {
			if p := all[name]; p != nil {
				d, err := decide(p)
				if err != nil {
					return found, fmt.Errorf("deciding the drain of node %s as Cluster API would: %w", found.Node.Name, err)
				}
				if d.Behavior != capi.DrainBehaviorDrain {
					continue
				}
			}
			kept = append(kept, name)
		}
		if len(kept) > 0 {
			refusals = append(refusals, errors.New(msg[:i+2]+strings.Join(kept, ", ")))
		}
	}
	found.Refusals = refusals
	slices.SortFunc(found.Wait, func(a, b corev1.Pod) int {
		return strings.Compare(namespacedName(a.Namespace, a.Name), namespacedName(b.Namespace, b.Name))
	})
	if len(warnings) > 0 {
		found.Warnings = strings.Join(append(slices.DeleteFunc([]string{found.Warnings}, func(s string) bool { return s == "" }), warnings...), "; ")
	}
	return found, nil
}

// podBatch is the pods of one order: evicted, or waited for until they
// complete.
type podBatch struct {
	Order int32
	Evict []*corev1.Pod
	Wait  []*corev1.Pod
}

// drainBatches groups the pods to evict and to wait for by order, lowest
// first: the Machine controller starts a batch once the ones before are
// gone. Without rules every pod is in the one batch of order 0.
func drainBatches(found NodePods) []podBatch {
	byOrder := map[int32]*podBatch{}
	batch := func(p *corev1.Pod) *podBatch {
		o := found.Drains[namespacedName(p.Namespace, p.Name)].Order
		if byOrder[o] == nil {
			byOrder[o] = &podBatch{Order: o}
		}
		return byOrder[o]
	}
	for i := range found.Evict {
		b := batch(&found.Evict[i])
		b.Evict = append(b.Evict, &found.Evict[i])
	}
	for i := range found.Wait {
		b := batch(&found.Wait[i])
		b.Wait = append(b.Wait, &found.Wait[i])
	}
	var out []podBatch
	for _, b := range byOrder {
		out = append(out, *b)
	}
	slices.SortFunc(out, func(a, b podBatch) int { return cmp.Compare(a.Order, b.Order) })
	return out
}
