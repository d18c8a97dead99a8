package fleetdrain

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/kubectl/pkg/drain"

	"github.com/spokekit/spokekit/internal/api/capi"
)

// evictingCluster is a clientset whose evictions either remove the pod
// (a kubelet that terminates it) or only mark it terminating (the kubelet
// of an unreachable node), recording their order. Its pod watches are the
// tracker's, so a drain sees the pods go.
func evictingCluster(t *testing.T, terminate bool, objs ...k8sruntime.Object) (*fake.Clientset, func() []string) {
	t.Helper()
	client := fake.NewClientset(objs...)
	client.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: drain.EvictionSubresource, Kind: drain.EvictionKind, Group: "policy", Version: "v1"},
	}}}
	var mu sync.Mutex
	var order []string
	podsGVR := corev1.SchemeGroupVersion.WithResource("pods")
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		e := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		mu.Lock()
		order = append(order, namespacedName(e.Namespace, e.Name))
		mu.Unlock()
		if terminate {
			return true, nil, client.Tracker().Delete(podsGVR, e.Namespace, e.Name)
		}
		obj, err := client.Tracker().Get(podsGVR, e.Namespace, e.Name)
		if err != nil {
			return true, nil, err
		}
		p := obj.(*corev1.Pod).DeepCopy()
		now := metav1.NewTime(time.Now())
		p.DeletionTimestamp = &now
		return true, nil, client.Tracker().Update(podsGVR, p, e.Namespace)
	})
	return client, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), order...)
	}
}

func drainerFor(t *testing.T, client *fake.Clientset, timeout time.Duration) *NodeDrainer {
	t.Helper()
	budgets, err := NewBudgetView(context.Background(), client)
	assert.NilError(t, err)
	return &NodeDrainer{
		Helper:  &drain.Helper{Ctx: context.Background(), Client: client, IgnoreAllDaemonSets: true, GracePeriodSeconds: -1, Timeout: timeout},
		Budgets: budgets, PDBTimeout: time.Minute, Eviction: policyv1.SchemeGroupVersion,
	}
}

func onNode(p corev1.Pod, node string) *corev1.Pod {
	p.Spec.NodeName = node
	p.UID = types.UID("uid-" + p.Name)
	return &p
}

// A batch of a higher order starts once the pods of the lower ones are
// gone, as Cluster API's Machine controller drains; a skipped pod is never
// evicted.
func TestDrainEvictsBatchesInOrder(t *testing.T) {
	n := node("worker-1", false, map[string]string{capi.MachineAnnotation: "md-0-abc"})
	db := onNode(pod("shop", "db-0", "StatefulSet", map[string]string{"app": "db"}), n.Name)
	web := onNode(pod("shop", "web-1", "ReplicaSet", map[string]string{"app": "web"}), n.Name)
	first := onNode(pod("shop", "ingress-1", "ReplicaSet", map[string]string{"app": "ingress"}), n.Name)
	kept := onNode(pod("shop", "cache-0", "StatefulSet", map[string]string{capi.PodDrainLabel: "skip"}), n.Name)
	client, evictions := evictingCluster(t, true, n, db, web, first, kept)
	d := drainerFor(t, client, 0)
	d.Rules = map[string]NodeRules{n.Name: {
		Machine: "fleet/md-0-abc", Namespaces: map[string]*corev1.Namespace{"shop": namespace("shop", nil)},
		Rules: []capi.MachineDrainRule{
			rule("db-last", capi.DrainBehaviorDrain, order(10), capi.MachineDrainRulePodSelect{Selector: matchLabels("app", "db")}),
			rule("ingress-first", capi.DrainBehaviorDrain, order(-5), capi.MachineDrainRulePodSelect{Selector: matchLabels("app", "ingress")}),
		},
	}}
	evicted, err := d.Drain(context.Background(), n)
	assert.NilError(t, err)
	assert.Equal(t, evicted, 3)
	assert.DeepEqual(t, evictions(), []string{"shop/ingress-1", "shop/web-1", "shop/db-0"})
	_, err = client.CoreV1().Pods("shop").Get(context.Background(), "cache-0", metav1.GetOptions{})
	assert.NilError(t, err, "the skipped pod stays")
}

// A WaitCompleted pod is never evicted; the drain waits for it within
// --timeout and says which pod it waited for.
func TestDrainWaitsForWaitCompletedPodsWithinTimeout(t *testing.T) {
	n := node("worker-1", false, map[string]string{capi.MachineAnnotation: "md-0-abc"})
	job := onNode(pod("batch", "report-x", "Job", map[string]string{capi.PodDrainLabel: "wait-completed"}), n.Name)
	client, evictions := evictingCluster(t, true, n, job)
	d := drainerFor(t, client, 300*time.Millisecond)
	d.Rules = map[string]NodeRules{n.Name: {Machine: "fleet/md-0-abc"}}
	_, err := d.Drain(context.Background(), n)
	assert.Check(t, errors.Is(err, ErrNodeTimedOut), "%v", err)
	assert.ErrorContains(t, err, "waiting for pod batch/report-x to complete")
	assert.Check(t, is.Len(evictions(), 0))

	done := job.DeepCopy()
	done.Status.Phase = corev1.PodSucceeded
	_, err = client.CoreV1().Pods("batch").UpdateStatus(context.Background(), done, metav1.UpdateOptions{})
	assert.NilError(t, err)
	d.Helper.Timeout = 0
	_, err = d.Drain(context.Background(), n)
	assert.NilError(t, err, "a completed pod ends the wait")
	assert.Check(t, is.Len(evictions(), 0))
}

// On an unreachable node an evicted pod never goes away; with
// --skip-wait-for-delete-timeout unset, Cluster API's one second makes it
// count as gone, so the drain ends instead of waiting forever.
func TestDrainOfAnUnreachableNodeEnds(t *testing.T) {
	n := withReady(node("lost", false, nil), corev1.ConditionUnknown)
	web := onNode(pod("shop", "web-1", "ReplicaSet", map[string]string{"app": "web"}), n.Name)
	client, evictions := evictingCluster(t, false, n, web)
	d := drainerFor(t, client, 0)
	// Only so that a drain that waits forever fails instead of hanging.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evicted, err := d.Drain(ctx, n)
	assert.NilError(t, err)
	assert.Equal(t, evicted, 1)
	assert.DeepEqual(t, evictions(), []string{"shop/web-1"})
	p, err := client.CoreV1().Pods("shop").Get(context.Background(), "web-1", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Check(t, p.DeletionTimestamp != nil, "the pod is still there, terminating")
}
