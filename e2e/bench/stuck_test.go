//go:build e2e

package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/spokekit/spokekit/e2e/fixture"
	"github.com/spokekit/spokekit/e2e/harness"
)

// surgeApps is how many single-replica Deployments the surge benchmark
// drains off one node, each under a budget allowing no disruption.
const surgeApps = 8

// BenchmarkStuckDrain measures the drains kubectl drain cannot finish:
// single replicas under budgets allowing no disruption (--surge), and an
// unreachable node. kubectl drain waits on both until it is stopped, so
// the rows have no kubectl side: each states its own bound.
func BenchmarkStuckDrain(b *testing.B) {
	c, err := env.StartCluster(ctx(b, 10*time.Minute), "bench-stuck", harness.KwokManagesAnnotatedNodesOnly())
	assert.NilError(b, err)
	kubectl := filepath.Join(env.Tools.Bin, "kubectl")
	cmd := c.For(b.TempDir())

	b.Run("Surge", func(b *testing.B) {
		var took, violations []float64
		for i := range pairs {
			ns := fmt.Sprintf("surge-%d", i)
			addNodes(b, c, ns, []string{ns + "-00"})
			docs := []string{fixture.Namespace(ns)}
			for a := range surgeApps {
				app := fmt.Sprintf("solo-%d", a)
				docs = append(docs, fixture.Workload{Namespace: ns, Name: app, Replicas: 1, Pool: ns}.YAML(), fixture.Budget(ns, app, app, "minAvailable: 1"))
			}
			assert.NilError(b, c.ApplyYAML(ctx(b, time.Minute), fixture.Docs(docs...)))
			waitPods(b, c, ns, func(ready map[string]int) bool { return ready[ns+"-00"] == surgeApps })
			waitBudgetsSettled(b, c, ns, surgeApps, 1)
			addNodes(b, c, ns, []string{ns + "-spare"})
			stop := watchAppsDown(b, c, ns)
			took = append(took, measure(b, cmd, kubectl, "fleetdrain", "node", ns+"-00", "--surge", "--ignore-daemonsets").Wall.Seconds())
			violations = append(violations, float64(stop()))
			teardownPool(b, c, ns)
		}
		add(b, fmt.Sprintf("fleetdrain node --surge, %d single-replica Deployments each under a budget allowing no disruption (kubectl drain: waits forever)", surgeApps), "s", took, nil, "≤ readiness + 5 s per wave")
		add(b, fmt.Sprintf("budget violations (a Deployment with no Ready pod) during the --surge drain of %d single replicas", surgeApps), "violations", violations, nil, "0, checked on every event")
	})

	b.Run("Deadlock", func(b *testing.B) {
		var two, one []float64
		run := 0
		alternate(pairs,
			func(int) {
				run++
				ns := fmt.Sprintf("deadlock-%d", run)
				nodes := deadlockPool(b, c, ns)
				rctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				replaced, err := c.ReplaceFirstDrained(rctx, ns, nodes, ns+"-new", map[string]string{"pool": ns, "kubernetes.io/hostname": ns + "-new", "type": "kwok"})
				assert.NilError(b, err)
				two = append(two, measure(b, cmd, kubectl, "fleetdrain", "node", nodes[0], nodes[1], "--max-concurrent", "2", "--pdb-timeout", "5m").Wall.Seconds())
				select {
				case r := <-replaced:
					assert.NilError(b, r.Err)
				default:
					b.Fatalf("both nodes of %s drained, yet no node was seen empty", ns)
				}
				teardownPool(b, c, ns)
			},
			func(int) {
				run++
				ns := fmt.Sprintf("deadlock-%d", run)
				nodes := deadlockPool(b, c, ns)
				addNodes(b, c, ns, []string{ns + "-new"})
				one = append(one, measure(b, cmd, kubectl, "fleetdrain", "node", nodes[0]).Wall.Seconds())
				teardownPool(b, c, ns)
			})
		add(b, "fleetdrain node, 2 nodes in a budget deadlock (each holds a pod of budgets a and b, each allowing 1; room only once a node is drained and its Machine replaced), --max-concurrent 2 / one of those nodes drained alone, with room", "s", two, one, "≤ 2 (unordered: --pdb-timeout)")
	})

	b.Run("Unreachable", func(b *testing.B) {
		// Nodes no kubelet answers for, with pods bound to them: the node
		// lifecycle controller marks them Ready Unknown; then each is
		// drained, one after another.
		var nodes []string
		for i := range pairs {
			nodes = append(nodes, fmt.Sprintf("unreachable-%d", i))
		}
		assert.NilError(b, c.ApplyYAML(ctx(b, time.Minute), fixture.Namespace("unreachable")))
		for _, n := range nodes {
			_, err := c.Kube.CoreV1().Nodes().Create(ctx(b, time.Minute), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"kubernetes.io/hostname": n}}}, metav1.CreateOptions{})
			assert.NilError(b, err)
			assert.NilError(b, c.ApplyYAML(ctx(b, time.Minute), fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, namespace: unreachable}
spec:
  replicas: 4
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      nodeName: %[1]s
      containers: [{name: app, image: nginx}]`, n)))
		}
		for _, n := range nodes {
			assert.NilError(b, c.WaitUnreachable(ctx(b, 4*time.Minute), n))
		}
		const bound = 2 * time.Minute
		var took []float64
		for _, n := range nodes {
			took = append(took, measure(b, cmd, kubectl, "fleetdrain", "node", n, "--timeout", bound.String()).Wall.Seconds())
		}
		add(b, fmt.Sprintf("fleetdrain node on an unreachable node (4 pods that never finish terminating), --timeout %s (kubectl drain: waits forever)", bound), "s", took, nil,
			fmt.Sprintf("< %.0f (the bound); pods' grace period + 1 s", bound.Seconds()))
	})
}

// waitBudgetsSettled waits until the n budgets of ns have a current status
// counting healthy pods each.
func waitBudgetsSettled(b *testing.B, c *harness.Cluster, ns string, n, healthy int) {
	b.Helper()
	err := wait.PollUntilContextTimeout(ctx(b, 2*time.Minute), 200*time.Millisecond, 2*time.Minute, true, func(cx context.Context) (bool, error) {
		l, err := c.Kube.PolicyV1().PodDisruptionBudgets(ns).List(cx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		settled := 0
		for _, p := range l.Items {
			if p.Status.ObservedGeneration == p.Generation && p.Status.CurrentHealthy == int32(healthy) {
				settled++
			}
		}
		return settled == n, nil
	})
	assert.NilError(b, err, "waiting for the budgets of %s to settle", ns)
}

// deadlockPool is two nodes of pool ns, each running one pod of
// Deployments a and b, each Deployment under a budget that lets one pod go.
func deadlockPool(b *testing.B, c *harness.Cluster, ns string) []string {
	b.Helper()
	nodes := []string{ns + "-1", ns + "-2"}
	addNodes(b, c, ns, nodes)
	// The spread counts only nodes without taints: both must have lost the
	// not-ready taint a new node starts with.
	err := wait.PollUntilContextTimeout(ctx(b, 2*time.Minute), 200*time.Millisecond, 2*time.Minute, true, func(cx context.Context) (bool, error) {
		l, err := c.Kube.CoreV1().Nodes().List(cx, metav1.ListOptions{LabelSelector: "pool=" + ns})
		if err != nil {
			return false, err
		}
		for _, n := range l.Items {
			if len(n.Spec.Taints) > 0 {
				return false, nil
			}
		}
		return len(l.Items) == 2, nil
	})
	assert.NilError(b, err, "waiting for the nodes of %s to lose their taints", ns)
	assert.NilError(b, c.ApplyYAML(ctx(b, time.Minute), fixture.CrossedBudgets(ns, ns)))
	waitPods(b, c, ns, func(ready map[string]int) bool { return ready[nodes[0]] == 2 && ready[nodes[1]] == 2 })
	waitBudgetsSettled(b, c, ns, 2, 2)
	return nodes
}

// watchAppsDown follows the pods of ns until stop is called, and counts
// the apps (label app) that were ever left with no healthy pod: each one a
// budget of minAvailable 1 violated.
func watchAppsDown(b *testing.B, c *harness.Cluster, ns string) (stop func() int) {
	b.Helper()
	wctx, cancel := context.WithCancel(context.Background())
	lw := cache.NewListWatchFromClient(c.Kube.CoreV1().RESTClient(), "pods", ns, fields.Everything())
	var mu sync.Mutex
	down := map[string]bool{}
	var store cache.Store
	check := func() {
		mu.Lock()
		defer mu.Unlock()
		up := map[string]int{}
		apps := map[string]bool{}
		for _, o := range store.List() {
			p := o.(*corev1.Pod)
			apps[p.Labels["app"]] = true
			if healthy(p) {
				up[p.Labels["app"]]++
			}
		}
		for app := range apps {
			if up[app] == 0 {
				down[app] = true
			}
		}
	}
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw, ObjectType: &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { check() },
			UpdateFunc: func(any, any) { check() },
			DeleteFunc: func(any) { check() },
		},
	})
	go ctrl.RunWithContext(wctx)
	if !cache.WaitForCacheSync(wctx.Done(), ctrl.HasSynced) {
		b.Fatalf("the watch of the pods of %s did not sync", ns)
	}
	mu.Lock()
	clear(down) // the first list may be partial while it fills
	mu.Unlock()
	return func() int {
		cancel()
		mu.Lock()
		defer mu.Unlock()
		return len(down)
	}
}
