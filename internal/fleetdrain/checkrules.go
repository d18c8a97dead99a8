package fleetdrain

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/spokekit/spokekit/internal/api/capi"
)

// Reasons of check's findings on what Cluster API's drain of the next
// rollout does with a pod (Notes), or cannot decide (CannotTell).
const (
	ReasonRolloutSkips     = "ClusterAPISkips"
	ReasonRolloutWaits     = "ClusterAPIWaitsForCompletion"
	ReasonRolloutOrder     = "ClusterAPIDrainOrder"
	ReasonRolloutUndecided = "ClusterAPIDrainUndecided"
)

// drainRuleFindings says, for the pods of nodes that belong to a Machine,
// what the Machine controller's drain in the next rollout does with them
// when it differs from a plain eviction: left on the node, waited for until
// it completes, or evicted in a later or earlier batch. A pod it cannot
// decide (its namespace not found, a rule of unknown behaviour) would stop
// that drain: CannotTell.
func drainRuleFindings(f *findings, rules map[string]NodeRules, pods []*corev1.Pod) {
	for _, p := range pods {
		r, ok := rules[p.Spec.NodeName]
		if !ok {
			continue
		}
		d, err := DecidePodDrain(p, r.Namespaces[p.Namespace], r.Rules)
		switch {
		case err != nil:
			f.add(SeverityCannotTell, ReasonRolloutUndecided, podKind, p.Namespace, p.Name, []*corev1.Pod{p},
				fmt.Sprintf("Cluster API's drain of Machine %s cannot decide this pod and would stop: %v", r.Machine, err))
		case d.Behavior == capi.DrainBehaviorSkip:
			f.add(SeverityNote, ReasonRolloutSkips, podKind, p.Namespace, p.Name, []*corev1.Pod{p},
				fmt.Sprintf("the next rollout's drain (Machine %s) leaves it on the node: %s", r.Machine, d.decidedBy()))
		case d.Behavior == capi.DrainBehaviorWaitCompleted:
			f.add(SeverityNote, ReasonRolloutWaits, podKind, p.Namespace, p.Name, []*corev1.Pod{p},
				fmt.Sprintf("the next rollout's drain (Machine %s) never evicts it and waits until it completes: %s", r.Machine, d.decidedBy()))
		case d.Order != 0:
			f.add(SeverityNote, ReasonRolloutOrder, podKind, p.Namespace, p.Name, []*corev1.Pod{p},
				fmt.Sprintf("the next rollout's drain (Machine %s) evicts it in the batch of order %d (lower first): %s", r.Machine, d.Order, d.decidedBy()))
		}
	}
}
