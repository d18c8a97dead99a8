package park

import (
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/capi"
)

func deletingMachine(name, reason, message string) capi.Machine {
	now := metav1.Now()
	return capi.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, DeletionTimestamp: &now},
		Status:     capi.MachineStatus{Conditions: []metav1.Condition{{Type: capi.MachineDeletingCondition, Status: metav1.ConditionTrue, Reason: reason, Message: message}}},
	}
}

func TestDrainBlocksNameTheMachineTheBudgetAndThePods(t *testing.T) {
	// The message as Cluster API v1.14 words it on the Machine's Deleting
	// condition, with the API server's cause appended.
	ms := []capi.Machine{
		deletingMachine("app-md-1-x-b", capi.MachineDrainingNodeReason, "Drain not completed yet (started at 2026-11-30T23:00:00Z):\n"+
			"* Pods shop/web-0, shop/web-1: cannot evict pod as it would violate the pod's disruption budget. The disruption budget web needs 2 healthy pods and has 2 currently\n"+
			"* Pod kube-system/dns-0: deletionTimestamp set, but still not removed from the Node"),
		deletingMachine("app-md-0-x-a", capi.MachineDrainingNodeReason, "Drain not completed yet (started at 2026-11-30T23:00:00Z):\n"+
			"* Pod default/db-0: cannot evict pod as it would violate the pod's disruption budget. The disruption budget db needs 1 healthy pods and has 1 currently"),
		// Draining, but not held by a budget; and a machine past its drain.
		deletingMachine("app-md-0-x-c", capi.MachineDrainingNodeReason, "Drain not completed yet (started at 2026-11-30T23:00:00Z):\n* Pod default/x: deletionTimestamp set, but still not removed from the Node"),
		deletingMachine("app-md-0-x-d", "WaitingForInfrastructureDeletion", "Waiting for DevMachine to be deleted"),
	}
	got := drainBlocks(ms)
	assert.DeepEqual(t, got, []DrainBlock{
		{Machine: "app-md-0-x-a", Budgets: []string{"default/db"}, Pods: []string{"default/db-0"}},
		{Machine: "app-md-1-x-b", Budgets: []string{"shop/web"}, Pods: []string{"shop/web-0", "shop/web-1"}},
	})
	assert.Equal(t, got[0].String(), "machine app-md-0-x-a waits on PodDisruptionBudget default/db (pod default/db-0)")
}

func TestDrainBlocksReadTheV1Beta1Conditions(t *testing.T) {
	m := deletingMachine("m", capi.MachineDrainingNodeReason, "")
	m.Status.V1Beta2 = &struct {
		Conditions []metav1.Condition `json:"conditions,omitempty"`
	}{Conditions: []metav1.Condition{{
		Type: capi.MachineDeletingCondition, Reason: capi.MachineDrainingNodeReason,
		Message: "* Pod a/p: cannot evict pod as it would violate the pod's disruption budget. The disruption budget b needs 1 healthy pods and has 1 currently",
	}}}
	m.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse}}
	assert.DeepEqual(t, drainBlocks([]capi.Machine{m}), []DrainBlock{{Machine: "m", Budgets: []string{"a/b"}, Pods: []string{"a/p"}}})
}
