package fleetdrain

import (
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/spokekit/spokekit/internal/api/capi"
)

// check says what Cluster API's drain of the next rollout does with the
// pods of a Machine's node, where it differs from an eviction.
func TestCheckSaysWhatTheRolloutDrainDoes(t *testing.T) {
	on := func(p corev1.Pod) corev1.Pod {
		p.Spec.NodeName = "worker-1"
		return p
	}
	in := CheckInput{
		Nodes: []string{"worker-1"},
		Pods: []corev1.Pod{
			on(pod("shop", "cache-0", "StatefulSet", map[string]string{capi.PodDrainLabel: "skip"})),
			on(pod("batch", "report-x", "Job", map[string]string{"app": "report"})),
			on(pod("shop", "db-0", "StatefulSet", map[string]string{"app": "db"})),
			on(pod("shop", "web-1", "ReplicaSet", map[string]string{"app": "web"})),
			on(pod("gone", "orphan-1", "ReplicaSet", nil)),
		},
		Rules: map[string]NodeRules{"worker-1": {
			Machine: "fleet/md-0-abc",
			Rules: []capi.MachineDrainRule{
				rule("a-gone", capi.DrainBehaviorDrain, order(1), capi.MachineDrainRulePodSelect{NamespaceSelector: matchLabels("team", "gone")}),
				rule("batch-wait", capi.DrainBehaviorWaitCompleted, nil, capi.MachineDrainRulePodSelect{Selector: matchLabels("app", "report")}),
				rule("db-last", capi.DrainBehaviorDrain, order(10), capi.MachineDrainRulePodSelect{Selector: matchLabels("app", "db")}),
			},
			Namespaces: map[string]*corev1.Namespace{"shop": namespace("shop", nil), "batch": namespace("batch", nil)},
		}},
	}
	r := PlanCheck(in)
	got := map[string]string{}
	for _, f := range r.Items {
		if f.Object[:4] == "pod/" {
			got[f.Pods[0]] = string(f.Severity) + " " + f.Reason
		}
	}
	assert.DeepEqual(t, got, map[string]string{
		"shop/cache-0":   "Note ClusterAPISkips",
		"batch/report-x": "Note ClusterAPIWaitsForCompletion",
		"shop/db-0":      "Note ClusterAPIDrainOrder",
		"gone/orphan-1":  "CannotTell ClusterAPIDrainUndecided",
	})
	assert.ErrorContains(t, r.outcome(), "ClusterAPIDrainUndecided", "a drain Cluster API would stop on fails the check")
}
