package capi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// MachineDrainRuleResource is the resource of MachineDrainRules (Cluster API
// v1.9 and later), namespaced: a rule applies to the Machines of its own
// namespace.
const MachineDrainRuleResource = "machinedrainrules"

// MachineDrainRuleKind is the kind of MachineDrainRules.
var MachineDrainRuleKind = schema.GroupKind{Group: Group, Kind: "MachineDrainRule"}

// PodDrainLabel on a pod of a workload cluster overrides every
// MachineDrainRule: "skip" or "wait-completed".
const PodDrainLabel = "cluster.x-k8s.io/drain"

// The annotations the Machine controller puts on a Machine's Node besides
// MachineAnnotation: where the Machine and its Cluster live.
const (
	ClusterNameAnnotation      = "cluster.x-k8s.io/cluster-name"
	ClusterNamespaceAnnotation = "cluster.x-k8s.io/cluster-namespace"
)

// DrainBehavior is what the Machine controller does with a pod of the
// Machine's Node.
type DrainBehavior string

// Drain behaviours.
const (
	// DrainBehaviorDrain: the pod is evicted, in the batch of its order.
	DrainBehaviorDrain DrainBehavior = "Drain"
	// DrainBehaviorSkip: the pod is left on the node; the drain does not
	// wait for it.
	DrainBehaviorSkip DrainBehavior = "Skip"
	// DrainBehaviorWaitCompleted: the pod is never evicted; the drain waits
	// until it has completed.
	DrainBehaviorWaitCompleted DrainBehavior = "WaitCompleted"
)

// MachineDrainRule tells the Machine controller how to drain the pods its
// selectors match on the Nodes of the Machines they match.
type MachineDrainRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              MachineDrainRuleSpec `json:"spec,omitempty"`
}

// MachineDrainRuleSpec is the rule: its behaviour, and the Machines and pods
// it applies to (all of them when a list is empty).
type MachineDrainRuleSpec struct {
	Drain    MachineDrainRuleDrain           `json:"drain"`
	Machines []MachineDrainRuleMachineSelect `json:"machines,omitempty"`
	Pods     []MachineDrainRulePodSelect     `json:"pods,omitempty"`
}

// MachineDrainRuleDrain is the behaviour, and for Drain its order (nil: 0).
type MachineDrainRuleDrain struct {
	Behavior DrainBehavior `json:"behavior"`
	Order    *int32        `json:"order,omitempty"`
}

// MachineDrainRuleMachineSelect selects Machines by their labels and their
// Cluster's; both must match (a nil or empty selector matches all).
type MachineDrainRuleMachineSelect struct {
	Selector        *metav1.LabelSelector `json:"selector,omitempty"`
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
}

// MachineDrainRulePodSelect selects pods by their labels and their
// namespace's; both must match (a nil or empty selector matches all).
type MachineDrainRulePodSelect struct {
	Selector          *metav1.LabelSelector `json:"selector,omitempty"`
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}
