package fleetdrain

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var (
	podsResource    = corev1.SchemeGroupVersion.WithResource("pods")
	budgetsResource = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")
)

// budgetCluster is a fake API server that counts what a drain does to the
// disruption budgets; evictions go through its reactor. With enforce it is
// the API server with its disruption controller: an eviction takes a
// disruption of every budget covering the pod and lists the pod in its
// status.disruptedPods (the status changes, with a new resourceVersion),
// and one that a budget cannot spare is refused with 429. Without, the
// status lags (it never counts an eviction) and nothing is refused:
// each eviction beyond what a budget allowed is counted in overspent. That
// is what shows drains that stopped sharing one view of the budgets, which
// the API server's own refusals hide. With restoreOnEmpty, a node's last
// eviction gives back its pods' disruptions: their replacements become
// Ready only once the node is empty, as on a pool at capacity whose
// Machines are replaced after their drain. With recount, the disruption
// controller rewrites the status of every budget covering a pod as its
// eviction arrives, before the eviction is counted (a new
// resourceVersion, nothing else changed), as it does when a covered pod
// changes.
type budgetCluster struct {
	*fake.Clientset
	enforce, restoreOnEmpty, recount bool

	mu        sync.Mutex
	rv        int
	overspent int
	spent     map[string]int            // budget -> evictions it let through
	taken     map[string]map[string]int // node -> budget -> disruptions taken
	// views counts the budget watches opened: one per run is one view.
	views atomic.Int32
}

func newBudgetCluster(t *testing.T, enforce, restoreOnEmpty bool, objs ...k8sruntime.Object) *budgetCluster {
	t.Helper()
	client, _ := fakeCluster(t, objs...)
	// Budgets start at resourceVersion 1; every change after is newer.
	c := &budgetCluster{Clientset: client, enforce: enforce, restoreOnEmpty: restoreOnEmpty, taken: map[string]map[string]int{}, spent: map[string]int{}, rv: 100}
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		e := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		return true, nil, c.evict(e.Namespace, e.Name)
	})
	// Pods are listed by node, as the API server's field selector does.
	client.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		node, _ := a.(k8stesting.ListAction).GetListRestrictions().Fields.RequiresExactMatch("spec.nodeName")
		obj, err := client.Tracker().List(podsResource, corev1.SchemeGroupVersion.WithKind("Pod"), a.GetNamespace())
		if err != nil || node == "" {
			return true, obj, err
		}
		list := obj.(*corev1.PodList)
		list.Items = slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.Spec.NodeName != node })
		return true, list, nil
	})
	// Pod watches see the evictions (fakeCluster's stay silent).
	client.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(podsResource, a.GetNamespace())
		return true, w, err
	})
	client.PrependWatchReactor("poddisruptionbudgets", func(a k8stesting.Action) (bool, watch.Interface, error) {
		c.views.Add(1)
		w, err := client.Tracker().Watch(budgetsResource, a.GetNamespace())
		return true, w, err
	})
	return c
}

// The reactors run under the fake's lock: they use the tracker alone.
func (c *budgetCluster) evict(ns, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	obj, err := c.Tracker().Get(podsResource, ns, name)
	if err != nil {
		return err
	}
	pod := obj.(*corev1.Pod)
	if c.recount {
		for _, b := range Covering(c.budgets(), pod) {
			c.setAllowed(b, b.Status.DisruptionsAllowed)
		}
	}
	covering := Covering(c.budgets(), pod)
	for _, b := range covering {
		left := b.Status.DisruptionsAllowed
		if !c.enforce {
			left -= int32(c.spent[namespacedName(b.Namespace, b.Name)])
		}
		if left > 0 {
			continue
		}
		if c.enforce {
			return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 1)
		}
		c.overspent++
	}
	node := pod.Spec.NodeName
	if c.taken[node] == nil {
		c.taken[node] = map[string]int{}
	}
	for _, b := range covering {
		key := namespacedName(b.Namespace, b.Name)
		c.spent[key]++
		c.taken[node][key]++
		if c.enforce {
			b = b.DeepCopy()
			if b.Status.DisruptedPods == nil {
				b.Status.DisruptedPods = map[string]metav1.Time{}
			}
			b.Status.DisruptedPods[name] = metav1.Now()
			c.setAllowed(b, b.Status.DisruptionsAllowed-1)
		}
	}
	if err := c.Tracker().Delete(podsResource, ns, name); err != nil {
		return err
	}
	if c.restoreOnEmpty && c.podsOn(node) == 0 {
		for _, b := range c.budgets() {
			if n := c.taken[node][namespacedName(b.Namespace, b.Name)]; n > 0 {
				c.setAllowed(b, b.Status.DisruptionsAllowed+int32(n))
			}
		}
		delete(c.taken, node)
	}
	return nil
}

func (c *budgetCluster) budgets() []*policyv1.PodDisruptionBudget {
	list, err := c.Tracker().List(budgetsResource, policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), "")
	if err != nil {
		panic(err)
	}
	var out []*policyv1.PodDisruptionBudget
	for i := range list.(*policyv1.PodDisruptionBudgetList).Items {
		out = append(out, &list.(*policyv1.PodDisruptionBudgetList).Items[i])
	}
	return out
}

func (c *budgetCluster) setAllowed(b *policyv1.PodDisruptionBudget, allowed int32) {
	b = b.DeepCopy()
	c.rv++
	b.ResourceVersion = strconv.Itoa(c.rv)
	b.Status.DisruptionsAllowed = max(allowed, 0)
	if err := c.Tracker().Update(budgetsResource, b, b.Namespace); err != nil {
		panic(err)
	}
}

func (c *budgetCluster) podsOn(node string) int {
	list, err := c.Tracker().List(podsResource, corev1.SchemeGroupVersion.WithKind("Pod"), "")
	if err != nil {
		panic(err)
	}
	n := 0
	for _, p := range list.(*corev1.PodList).Items {
		if p.Spec.NodeName == node {
			n++
		}
	}
	return n
}

// budgetPod is a ReplicaSet's pod on node that budget app protects.
func budgetPod(node, app string, i int) *corev1.Pod {
	p := pod("shop", fmt.Sprintf("%s-%s-%d", app, node, i), "ReplicaSet", map[string]string{"app": app})
	p.OwnerReferences[0].APIVersion = "apps/v1"
	p.Spec.NodeName = node
	return &p
}

func budgetWithRV(name string, allowed int32) *policyv1.PodDisruptionBudget {
	b := budget("shop", name, allowed, map[string]string{"app": name})
	b.ResourceVersion = "1"
	return b
}
