//go:build e2e

package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/spokekit/spokekit/e2e/fixture"
	"github.com/spokekit/spokekit/e2e/harness"
)

// drainShape is one drain benchmark: nodes loaded with 50 pods each, of
// which guarded per node belong to a Deployment under a
// PodDisruptionBudget allowing budgetUnavailable at a time.
type drainShape struct {
	nodes, guarded, maxConcurrent int
}

const (
	podsPerNode       = 50
	budgetUnavailable = 4
)

// pool is a namespace with the shape's Deployments (spread evenly over the
// pool's nodes) and, with guarded pods, their budget.
func pool(ns string, s drainShape) string {
	docs := []string{fixture.Namespace(ns), fixture.Workload{Namespace: ns, Name: "load", Replicas: (podsPerNode - s.guarded) * s.nodes, Pool: ns, Spread: true}.YAML()}
	if s.guarded > 0 {
		docs = append(docs,
			fixture.Workload{Namespace: ns, Name: "guarded", Replicas: s.guarded * s.nodes, Pool: ns, Spread: true}.YAML(),
			fixture.Budget(ns, "guarded", "guarded", fmt.Sprintf("maxUnavailable: %d", budgetUnavailable)))
	}
	return fixture.Docs(docs...)
}

// BenchmarkDrain compares `fleetdrain node` with `kubectl drain` run on the
// same nodes one after another (what a runbook does), on one cluster: every
// run gets a fresh, settled pool of the same shape (all pods Ready, the
// budget's status current, spare nodes as many as loaded ones), and its
// pool is gone again before the next run starts. At 16 nodes a budget
// covers a fifth of the pods, and it is checked on every pod event while
// either tool drains: a drain that ever leaves fewer healthy pods than the
// budget allows fails the benchmark.
func BenchmarkDrain(b *testing.B) {
	c, err := env.StartCluster(ctx(b, 10*time.Minute), "bench-drain")
	assert.NilError(b, err)
	kubectl := filepath.Join(env.Tools.Bin, "kubectl")
	cmd := c.For(b.TempDir())
	run := 0
	// Each shape is a sub-benchmark, so that one can run alone:
	// make bench BENCH=Drain/16nodes.
	for _, s := range []drainShape{{nodes: 4, maxConcurrent: 4}, {nodes: 16, guarded: 10, maxConcurrent: 8}} {
		b.Run(fmt.Sprintf("%dnodes", s.nodes), func(b *testing.B) {
			n := pairs
			if s.nodes == 16 {
				var err error
				n, err = pairsFrom("SPOKEKIT_BENCH_PAIRS_16", pairs)
				assert.NilError(b, err)
			}
			var ours, theirs []Usage
			var ourLow, theirLow []float64
			drain := func(into *[]Usage, low *[]float64, do func(nodes []string) Usage) func(int) {
				return func(int) {
					run++
					ns := fmt.Sprintf("drain-%d", run)
					nodes := setupPool(b, c, ns, s)
					stop := watchBudget(b, c, ns, s)
					*into = append(*into, do(nodes))
					*low = append(*low, float64(stop()))
					teardownPool(b, c, ns)
				}
			}
			alternate(n,
				drain(&ours, &ourLow, func(nodes []string) Usage {
					args := append([]string{"fleetdrain", "node", "--ignore-daemonsets", "--max-concurrent", strconv.Itoa(s.maxConcurrent)}, nodes...)
					return measure(b, cmd, kubectl, args...)
				}),
				drain(&theirs, &theirLow, func(nodes []string) Usage {
					var u Usage
					for _, node := range nodes {
						u = u.plus(measure(b, cmd, kubectl, "drain", node, "--ignore-daemonsets"))
					}
					return u
				}))
			what := fmt.Sprintf("fleetdrain node, %d nodes x %d pods, --max-concurrent %d / kubectl drain one node after another", s.nodes, podsPerNode, s.maxConcurrent)
			goal := "≤ 0.35"
			if s.guarded > 0 {
				what += fmt.Sprintf(", PDB over %d pods never violated", s.guarded*s.nodes)
				goal = "scaling"
			}
			add(b, what, "s", seconds(ours), seconds(theirs), goal)
			if s.guarded > 0 {
				add(b, fmt.Sprintf("fewest healthy guarded pods while draining %d nodes (of %d)", s.nodes, s.guarded*s.nodes), "pods",
					ourLow, theirLow, fmt.Sprintf("≥ %d, checked on every event", s.guarded*s.nodes-budgetUnavailable))
			}
		})
	}
}

// setupPool makes a settled pool named ns and returns its loaded nodes.
func setupPool(b *testing.B, c *harness.Cluster, ns string, s drainShape) []string {
	b.Helper()
	var loaded, spare []string
	for i := range s.nodes {
		loaded = append(loaded, fmt.Sprintf("%s-%02d", ns, i))
		spare = append(spare, fmt.Sprintf("%s-spare-%02d", ns, i))
	}
	addNodes(b, c, ns, loaded)
	assert.NilError(b, c.ApplyYAML(ctx(b, time.Minute), pool(ns, s)))
	waitPods(b, c, ns, func(ready map[string]int) bool {
		for _, n := range loaded {
			if ready[n] != podsPerNode {
				return false
			}
		}
		return true
	})
	addNodes(b, c, ns, spare)
	if s.guarded > 0 {
		err := wait.PollUntilContextTimeout(ctx(b, 2*time.Minute), 200*time.Millisecond, 2*time.Minute, true, func(cx context.Context) (bool, error) {
			pdb, err := c.Kube.PolicyV1().PodDisruptionBudgets(ns).Get(cx, "guarded", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.DisruptionsAllowed == budgetUnavailable, nil
		})
		assert.NilError(b, err, "waiting for the budget of %s to settle", ns)
	}
	return loaded
}

func addNodes(b *testing.B, c *harness.Cluster, pool string, names []string) {
	b.Helper()
	for _, n := range names {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        n,
			Labels:      map[string]string{"pool": pool, "kubernetes.io/hostname": n, "type": "kwok"},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		}}
		_, err := c.Kube.CoreV1().Nodes().Create(ctx(b, time.Minute), node, metav1.CreateOptions{})
		assert.NilError(b, err)
	}
	err := wait.PollUntilContextTimeout(ctx(b, 2*time.Minute), 200*time.Millisecond, 2*time.Minute, true, func(cx context.Context) (bool, error) {
		l, err := c.Kube.CoreV1().Nodes().List(cx, metav1.ListOptions{LabelSelector: "pool=" + pool})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, n := range l.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == len(l.Items) && len(l.Items) >= len(names), nil
	})
	assert.NilError(b, err, "waiting for the nodes of %s to be Ready", pool)
}

// healthy says whether a pod counts for a budget: Ready and not terminating.
func healthy(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// waitPods waits until the Ready pods of ns, counted per node, satisfy cond.
func waitPods(b *testing.B, c *harness.Cluster, ns string, cond func(ready map[string]int) bool) {
	b.Helper()
	err := wait.PollUntilContextTimeout(ctx(b, 5*time.Minute), 500*time.Millisecond, 5*time.Minute, true, func(cx context.Context) (bool, error) {
		l, err := c.Kube.CoreV1().Pods(ns).List(cx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		ready := map[string]int{}
		for i := range l.Items {
			if healthy(&l.Items[i]) {
				ready[l.Items[i].Spec.NodeName]++
			}
		}
		return cond(ready), nil
	})
	assert.NilError(b, err, "waiting for the pods of %s", ns)
}

// watchBudget follows the guarded pods of ns from before the drain starts
// until stop is called, and fails the benchmark if their healthy count ever
// fell below what the budget promises; stop returns the lowest count seen.
func watchBudget(b *testing.B, c *harness.Cluster, ns string, s drainShape) (stop func() int) {
	b.Helper()
	if s.guarded == 0 {
		return func() int { return 0 }
	}
	want := s.guarded*s.nodes - budgetUnavailable
	wctx, cancel := context.WithCancel(context.Background())
	lw := cache.NewFilteredListWatchFromClient(c.Kube.CoreV1().RESTClient(), "pods", ns, func(o *metav1.ListOptions) { o.LabelSelector = "app=guarded" })
	var (
		store    cache.Store
		low      = -1
		lowEvent string
		synced   = make(chan struct{})
		done     sync.WaitGroup
	)
	count := func() int {
		n := 0
		for _, o := range store.List() {
			if healthy(o.(*corev1.Pod)) {
				n++
			}
		}
		return n
	}
	done.Add(1)
	go func() {
		defer done.Done()
		_, _ = watchtools.UntilWithSync(wctx, lw, &corev1.Pod{},
			func(st cache.Store) (bool, error) {
				store = st
				low = count()
				close(synced)
				return false, nil
			},
			func(ev watch.Event) (bool, error) {
				if n := count(); n < low {
					low = n
					if p, ok := ev.Object.(*corev1.Pod); ok {
						lowEvent = string(ev.Type) + " " + p.Name
					}
				}
				return false, nil
			})
	}()
	select {
	case <-synced:
	case <-time.After(time.Minute):
		b.Fatalf("the watch of the guarded pods of %s did not sync", ns)
	}
	return func() int {
		cancel()
		done.Wait()
		assert.Assert(b, low >= want, "budget of %s violated: %d healthy guarded pods at %s, the budget keeps %d", ns, low, lowEvent, want)
		return low
	}
}

// teardownPool removes a pool and waits until it is gone, so the next run
// starts on a quiet cluster.
func teardownPool(b *testing.B, c *harness.Cluster, ns string) {
	b.Helper()
	cx := ctx(b, 5*time.Minute)
	assert.NilError(b, c.Kube.CoreV1().Namespaces().Delete(cx, ns, metav1.DeleteOptions{}))
	err := wait.PollUntilContextTimeout(cx, 500*time.Millisecond, 5*time.Minute, true, func(cx context.Context) (bool, error) {
		_, err := c.Kube.CoreV1().Namespaces().Get(cx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	assert.NilError(b, err, "waiting for namespace %s to go", ns)
	assert.NilError(b, c.Kube.CoreV1().Nodes().DeleteCollection(cx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "pool=" + ns}))
	err = wait.PollUntilContextTimeout(cx, 500*time.Millisecond, 5*time.Minute, true, func(cx context.Context) (bool, error) {
		l, err := c.Kube.CoreV1().Nodes().List(cx, metav1.ListOptions{LabelSelector: "pool=" + ns})
		return err == nil && len(l.Items) == 0, nil
	})
	assert.NilError(b, err, "waiting for the nodes of %s to go", ns)
}
