package fleetdrain

import (
	"bytes"
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/kubectl/pkg/drain"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

func withReady(n *corev1.Node, s corev1.ConditionStatus) *corev1.Node {
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: s}}
	return n
}

func readyPod(p corev1.Pod, ready bool) corev1.Pod {
	s := corev1.ConditionFalse
	if ready {
		s = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: s}}
	return p
}

func healthyBudget(name string, healthy int32, match map[string]string) *policyv1.PodDisruptionBudget {
	b := budget("shop", name, 0, match)
	b.Status.CurrentHealthy = healthy
	return b
}

func TestNodeState(t *testing.T) {
	assert.Equal(t, nodeState(withReady(node("a", false, nil), corev1.ConditionUnknown)), NodeUnreachable)
	assert.Equal(t, nodeState(withReady(node("a", false, nil), corev1.ConditionFalse)), NodeNotReady)
	assert.Equal(t, nodeState(withReady(node("a", false, nil), corev1.ConditionTrue)), "")
	assert.Equal(t, nodeState(node("a", false, nil)), "", "a node that reports no Ready condition yet is not called unreachable")
}

// Cluster API's one second holds on an unreachable node only, and only
// when the user left --skip-wait-for-delete-timeout unset.
func TestHelperForUnreachableNode(t *testing.T) {
	d := &NodeDrainer{Helper: &drain.Helper{SkipWaitForDeleteTimeoutSeconds: 0}}
	unreachable := withReady(node("a", false, nil), corev1.ConditionUnknown)
	assert.Equal(t, d.helperFor(unreachable).SkipWaitForDeleteTimeoutSeconds, 1)
	assert.Equal(t, d.Helper.SkipWaitForDeleteTimeoutSeconds, 0, "the run's helper is left as it was")
	assert.Equal(t, d.helperFor(withReady(node("b", false, nil), corev1.ConditionFalse)).SkipWaitForDeleteTimeoutSeconds, 0)
	d.Health.SkipWaitSet = true
	assert.Equal(t, d.helperFor(unreachable).SkipWaitForDeleteTimeoutSeconds, 0, "the user's value holds")
}

// AlwaysAllow's rule: a pod that is not Ready, whose budgets have no
// healthy pod to lose. Never a Ready pod.
func TestUnhealthyDeletable(t *testing.T) {
	web := map[string]string{"app": "web"}
	empty := healthyBudget("web", 0, web)
	tests := []struct {
		name    string
		pod     corev1.Pod
		budgets []*policyv1.PodDisruptionBudget
		want    bool
	}{
		{"not Ready, budget has no healthy pod", readyPod(pod("shop", "web-1", "ReplicaSet", web), false), []*policyv1.PodDisruptionBudget{empty}, true},
		{"no Ready condition counts as not Ready", pod("shop", "web-1", "ReplicaSet", web), []*policyv1.PodDisruptionBudget{empty}, true},
		{"Ready: never", readyPod(pod("shop", "web-1", "ReplicaSet", web), true), []*policyv1.PodDisruptionBudget{empty}, false},
		{"budget still has a healthy pod", readyPod(pod("shop", "web-1", "ReplicaSet", web), false), []*policyv1.PodDisruptionBudget{healthyBudget("web", 1, web)}, false},
		{"one of two budgets has a healthy pod", readyPod(pod("shop", "web-1", "ReplicaSet", web), false), []*policyv1.PodDisruptionBudget{empty, healthyBudget("all", 2, web)}, false},
		{"no budget: the eviction is not refused by one", readyPod(pod("shop", "web-1", "ReplicaSet", web), false), nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, got := unhealthyDeletable(&tc.pod, tc.budgets)
			assert.Equal(t, got, tc.want)
		})
	}
}

func TestPlanUnreachableAndNotReadyNodes(t *testing.T) {
	web := map[string]string{"app": "web"}
	sick := readyPod(pod("shop", "web-1", "ReplicaSet", web), false)
	well := readyPod(pod("shop", "db-0", "StatefulSet", map[string]string{"app": "db"}), true)
	budgets := []*policyv1.PodDisruptionBudget{healthyBudget("web", 0, web), healthyBudget("db", 0, map[string]string{"app": "db"})}
	health := NodeHealth{UnhealthyPods: UnhealthyPodsEvictIfBudgetEmpty}
	var items []NodeReport
	for _, n := range []*corev1.Node{withReady(node("lost", false, nil), corev1.ConditionUnknown), withReady(node("sick", false, nil), corev1.ConditionFalse)} {
		found := NodePods{Node: n, All: []corev1.Pod{well, sick}, Evict: []corev1.Pod{well, sick}}
		r := PlanNode(found, budgets)
		planHealth(&r, found, budgets, health, 0)
		items = append(items, r)
	}
	assert.Equal(t, items[0].NodeState, NodeUnreachable)
	assert.Equal(t, items[1].NodeState, NodeNotReady)
	assert.Check(t, is.Len(items[0].UnhealthyDeletes, 1), "only the pod that is not Ready is named")

	health.SkipWaitSet, health.Timeout = true, (5 * time.Minute).String()
	found := NodePods{Node: withReady(node("lost-given", false, nil), corev1.ConditionUnknown)}
	r := PlanNode(found, nil)
	planHealth(&r, found, nil, health, 30)
	items = append(items, r)

	report := DrainReport{ReportMeta: api.NewReportMeta("DrainReport", "nodes"), Items: items}
	var buf bytes.Buffer
	assert.NilError(t, cli.WriteTable(&buf, report.planTable(), true))
	golden.Assert(t, buf.String(), "plan-node-unreachable.golden")
}

func TestUnhealthyPodsFlagIsValidated(t *testing.T) {
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	o := NewNodeOptions(streams)
	o.Nodes = []string{"a"}
	assert.NilError(t, o.Validate())
	o.UnhealthyPods = "always"
	err := o.Validate()
	assert.ErrorContains(t, err, "--unhealthy-pods must be never or evict-if-budget-empty")
	assert.Equal(t, exitcode.Of(err), exitcode.Usage)
}

// The delete is guarded by the UID and resourceVersion it was decided on,
// and a Ready pod is never deleted.
func TestDeleteUnhealthy(t *testing.T) {
	web := map[string]string{"app": "web"}
	sick := readyPod(pod("shop", "web-1", "ReplicaSet", web), false)
	sick.UID, sick.ResourceVersion = types.UID("u-1"), "7"
	well := readyPod(pod("shop", "web-2", "ReplicaSet", web), true)
	client, _ := fakeCluster(t, &sick, &well, healthyBudget("web", 0, web))
	budgets, err := NewBudgetView(context.Background(), client)
	assert.NilError(t, err)
	d := &NodeDrainer{
		Helper: &drain.Helper{Client: client, GracePeriodSeconds: -1}, Budgets: budgets,
		Health: NodeHealth{UnhealthyPods: UnhealthyPodsEvictIfBudgetEmpty}, Progress: NewDrainProgress(cli.NewProgress(&bytes.Buffer{}), 1),
	}

	deleted, err := d.deleteUnhealthy(context.Background(), "a", &well)
	assert.NilError(t, err)
	assert.Check(t, !deleted, "a Ready pod is never deleted")
	deleted, err = d.deleteUnhealthy(context.Background(), "a", &sick)
	assert.NilError(t, err)
	assert.Check(t, deleted)
	assert.DeepEqual(t, d.unhealthyDeleted("a"), []string{"shop/web-1"})
	var deletes int
	for _, a := range client.Actions() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
			deletes++
			pre := a.(k8stesting.DeleteAction).GetDeleteOptions().Preconditions
			assert.Check(t, pre != nil && *pre.UID == "u-1" && *pre.ResourceVersion == "7", "%+v", pre)
		}
	}
	assert.Equal(t, deletes, 1)

	d.Health.UnhealthyPods = UnhealthyPodsNever
	deleted, err = d.deleteUnhealthy(context.Background(), "a", &sick)
	assert.NilError(t, err)
	assert.Check(t, !deleted, "without the flag nothing is deleted past a budget")
}
