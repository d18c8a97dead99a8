//go:build e2e

package fleetdrain

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/spokekit/spokekit/e2e/fixture"
	"github.com/spokekit/spokekit/e2e/harness"
)

// addNodes registers kwok nodes in a pool (label pool=<pool>); kwok's
// controller plays their kubelet. Each node names its Cluster API Machine.
func addNodes(t testing.TB, c *harness.Cluster, pool string, names ...string) {
	t.Helper()
	for _, n := range names {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        n,
			Labels:      map[string]string{"pool": pool, "kubernetes.io/hostname": n, "type": "kwok"},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "cluster.x-k8s.io/machine": "machine-" + n},
		}}
		_, err := c.Kube.CoreV1().Nodes().Create(ctx(t, time.Minute), node, metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	waitList(t, c.Kube.CoreV1().RESTClient(), "nodes", "", "pool="+pool, &corev1.Node{}, "nodes of pool "+pool+" Ready",
		func(objs []any) bool {
			ready := 0
			for _, o := range objs {
				n := o.(*corev1.Node)
				for _, cond := range n.Status.Conditions {
					if slices.Contains(names, n.Name) && cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
			return ready >= len(names)
		})
}

// workload is a namespace with a Deployment, a StatefulSet and a DaemonSet
// pinned to one pool of nodes.
func workload(ns, pool string, deployReplicas, stsReplicas int) string {
	return fixture.Docs(
		fixture.Namespace(ns),
		fixture.Workload{Namespace: ns, Name: "web", Replicas: deployReplicas, Pool: pool}.YAML(),
		fixture.Workload{Kind: "StatefulSet", Namespace: ns, Name: "db", Replicas: stsReplicas, Pool: pool, Image: "postgres"}.YAML(),
		fixture.Workload{Kind: "DaemonSet", Namespace: ns, Name: "agent", Pool: pool, Image: "busybox"}.YAML(),
	)
}

// readyPods counts the pods that are Ready and not terminating, per node.
func readyPods(objs []any) map[string]int {
	out := map[string]int{}
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				out[p.Spec.NodeName]++
			}
		}
	}
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// waitPods waits until the pods of ns matching selector satisfy cond.
func waitPods(t testing.TB, c *harness.Cluster, ns, selector, what string, cond func(ready map[string]int) bool) {
	t.Helper()
	waitList(t, c.Kube.CoreV1().RESTClient(), "pods", ns, selector, &corev1.Pod{}, what, func(objs []any) bool { return cond(readyPods(objs)) })
}

// waitBudget waits until a PodDisruptionBudget's status says it allows
// exactly allowed disruptions.
func waitBudget(t testing.TB, c *harness.Cluster, ns, name string, allowed int32) {
	t.Helper()
	waitList(t, c.Kube.PolicyV1().RESTClient(), "poddisruptionbudgets", ns, "", &policyv1.PodDisruptionBudget{},
		fmt.Sprintf("budget %s/%s allowing %d", ns, name, allowed), func(objs []any) bool {
			for _, o := range objs {
				b := o.(*policyv1.PodDisruptionBudget)
				if b.Name == name && b.Status.ObservedGeneration == b.Generation && b.Status.DisruptionsAllowed == allowed {
					return true
				}
			}
			return false
		})
}

func waitList(t testing.TB, rc cache.Getter, resource, ns, selector string, example runtime.Object, what string, cond func([]any) bool) {
	t.Helper()
	lw := cache.NewFilteredListWatchFromClient(rc, resource, ns, func(o *metav1.ListOptions) { o.LabelSelector = selector })
	var store cache.Store
	_, err := watchtools.UntilWithSync(ctx(t, 2*time.Minute), lw, example,
		func(s cache.Store) (bool, error) { store = s; return cond(s.List()), nil },
		func(watch.Event) (bool, error) { return cond(store.List()), nil })
	assert.NilError(t, err, "waiting for %s", what)
}

// unschedulable reads a node's flag.
func unschedulable(t testing.TB, c *harness.Cluster, node string) bool {
	t.Helper()
	n, err := c.Kube.CoreV1().Nodes().Get(ctx(t, time.Minute), node, metav1.GetOptions{})
	assert.NilError(t, err)
	return n.Spec.Unschedulable
}

// podsOn lists the names of the pods of ns on node.
func podsOn(t testing.TB, c *harness.Cluster, ns, node string) []string {
	t.Helper()
	list, err := c.Kube.CoreV1().Pods(ns).List(ctx(t, time.Minute), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	assert.NilError(t, err)
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

func hasPrefix(names []string, prefix string) bool {
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}
