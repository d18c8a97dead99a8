package fleetdrain

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/klog/v2"
)

// ComesBack says why the replacement of a pod evicted from its node would
// land on that node again, or could run nowhere else ("" when neither):
//   - it tolerates node.kubernetes.io/unschedulable, so the cordon does not
//     keep it off;
//   - its controller's template (nil when unknown) pins spec.nodeName, which
//     bypasses the scheduler and the cordon;
//   - no node outside drained matches its nodeSelector and required node
//     affinity, so it waits Pending until the node is uncordoned.
//
// Pure: nodes are the cluster's nodes, drained the names drained together.
func ComesBack(pod *corev1.Pod, template *corev1.PodSpec, nodes []*corev1.Node, drained []string) string {
	unschedulable := &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(klog.Background(), unschedulable, false) {
			return "comes back: it tolerates " + corev1.TaintNodeUnschedulable + ", so the cordon does not keep its replacement off the node"
		}
	}
	if template != nil && template.NodeName != "" {
		return fmt.Sprintf("comes back: its controller's template pins spec.nodeName %s, which the cordon does not stop", strconv.Quote(template.NodeName))
	}
	if !constrained(pod) {
		return ""
	}
	var feasible []string
	for _, n := range nodes {
		if matchesNode(pod, n) {
			feasible = append(feasible, n.Name)
		}
	}
	if len(feasible) == 0 || slices.ContainsFunc(feasible, func(n string) bool { return !slices.Contains(drained, n) }) {
		return ""
	}
	return "has nowhere else to go: no node but the drained ones matches its nodeSelector and node affinity, so its replacement waits Pending until a node is uncordoned"
}

// constrained tells whether the pod restricts its nodes at all.
func constrained(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	return len(pod.Spec.NodeSelector) > 0 ||
		a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil
}

// matchesNode tells whether node meets the pod's nodeSelector and required
// node affinity, as the scheduler reads them: every nodeSelector label, and
// one of the terms (each with all its requirements).
func matchesNode(pod *corev1.Pod, node *corev1.Node) bool {
	if !labels.SelectorFromSet(pod.Spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	fieldSet := labels.Set{"metadata.name": node.Name}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(term.MatchExpressions)+len(term.MatchFields) == 0 {
			continue // an empty term matches nothing
		}
		if termMatches(term.MatchExpressions, labels.Set(node.Labels)) && termMatches(term.MatchFields, fieldSet) {
			return true
		}
	}
	return false
}

var nodeSelectorOps = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn: selection.In, corev1.NodeSelectorOpNotIn: selection.NotIn,
	corev1.NodeSelectorOpExists: selection.Exists, corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	corev1.NodeSelectorOpGt: selection.GreaterThan, corev1.NodeSelectorOpLt: selection.LessThan,
}

// termMatches: every requirement holds on set. One the scheduler would
// reject (a bad operator or value) matches nothing.
func termMatches(reqs []corev1.NodeSelectorRequirement, set labels.Set) bool {
	for _, r := range reqs {
		op, ok := nodeSelectorOps[r.Operator]
		if !ok {
			return false
		}
		req, err := labels.NewRequirement(r.Key, op, r.Values)
		if err != nil || !req.Matches(set) {
			return false
		}
	}
	return true
}

// ReasonComesBack is the reason of a pod whose replacement lands on the node
// again, or can run nowhere else.
const ReasonComesBack = "ComesBack"

// comeBackFindings names each checked pod that ComesBack finds, with the
// templates of the ReplicaSets and StatefulSets read. check models a
// replacement: the rollout's new Machine joins the pool before the old one
// drains, carrying the old node's labels but not the ones that name the node
// itself. So a pod held to its pool has somewhere to go, and one held to the
// node by name (kubernetes.io/hostname, metadata.name) has not.
func comeBackFindings(f *findings, in CheckInput, pods []*corev1.Pod) {
	templates := map[string]*corev1.PodSpec{}
	for i := range in.ReplicaSets {
		rs := &in.ReplicaSets[i]
		templates["ReplicaSet/"+namespacedName(rs.Namespace, rs.Name)] = &rs.Spec.Template.Spec
	}
	for i := range in.StatefulSets {
		sts := &in.StatefulSets[i]
		templates["StatefulSet/"+namespacedName(sts.Namespace, sts.Name)] = &sts.Spec.Template.Spec
	}
	for _, p := range pods {
		var template *corev1.PodSpec
		if c := metav1.GetControllerOf(p); c != nil {
			template = templates[c.Kind+"/"+namespacedName(p.Namespace, c.Name)]
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: p.Spec.NodeName, Labels: in.NodeLabels[p.Spec.NodeName]}}
		if why := ComesBack(p, template, []*corev1.Node{node, replacement(node)}, []string{node.Name}); why != "" {
			f.add(SeverityDisrupts, ReasonComesBack, podKind, p.Namespace, p.Name, []*corev1.Pod{p}, "its replacement "+why)
		}
	}
}

// replacement is the node a rollout's new Machine brings in place of node:
// the same labels but those naming the node itself (termNode's identity
// keys), under a name of its own.
func replacement(node *corev1.Node) *corev1.Node {
	kept := map[string]string{}
	for k, v := range node.Labels {
		if k != corev1.LabelHostname && v != node.Name && v != node.Labels[corev1.LabelHostname] {
			kept[k] = v
		}
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name + " (replacement)", Labels: kept}}
}
