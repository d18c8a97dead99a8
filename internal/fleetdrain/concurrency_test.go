package fleetdrain

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// fourNodesOnOneBudget is four nodes, each with a pod of budget shop/api,
// which allows one disruption.
func fourNodesOnOneBudget() (names []string, objs []k8sruntime.Object) {
	objs = []k8sruntime.Object{budgetWithRV("api", 1)}
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		names = append(names, n)
		objs = append(objs, node(n, false, nil), budgetPod(n, "api", 0))
	}
	return names, objs
}

// Four nodes drained at once, each holding a pod of a budget that allows
// one disruption, on an API server whose budget status lags and which
// refuses nothing: only drains that share one view of the budgets (one
// watch, reservations seen by all) send a single eviction. Before, no test
// could tell: the API server's own refusals kept the budget either way.
func TestConcurrentDrainsShareOneViewOfTheBudgets(t *testing.T) {
	names, objs := fourNodesOnOneBudget()
	c := newBudgetCluster(t, false, false, objs...)
	o, out, _ := nodeOptions(c.Clientset, names...)
	o.MaxConcurrent, o.PDBTimeout = 4, 300*time.Millisecond
	err := o.drainNodes(context.Background())
	assert.ErrorContains(t, err, "1 of 4 node(s) drained")
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Check(t, is.Equal(c.overspent, 0), "evictions beyond what budget shop/api allowed")
	assert.Check(t, is.Equal(c.spent["shop/api"], 1))
	assert.Check(t, is.Equal(c.views.Load(), int32(1)), "budget watches opened by one run")
	assert.Check(t, is.Equal(strings.Count(out.String(), "blocked by a PodDisruptionBudget"), 3), out.String())
}

// The disruption controller rewrites a budget's status whenever a covered
// pod changes, often between a drain's reservation and the arrival of its
// eviction; that write does not count the eviction. A reservation ended by
// it let a second drain spend the same disruption: on a real API server
// one of the two evictions was refused (the one 429 TestConcurrentDrainKeepsBudgets
// saw in e2e); here, where nothing is refused, it is overspent.
func TestAReservationOutlivesStatusWritesThatDoNotCountItsEviction(t *testing.T) {
	names, objs := fourNodesOnOneBudget()
	c := newBudgetCluster(t, false, false, objs...)
	c.recount = true
	o, _, _ := nodeOptions(c.Clientset, names...)
	o.MaxConcurrent, o.PDBTimeout = 4, 2*time.Second
	err := o.drainNodes(context.Background())
	assert.ErrorContains(t, err, "1 of 4 node(s) drained")
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Check(t, is.Equal(c.overspent, 0), "evictions beyond what budget shop/api allowed")
	assert.Check(t, is.Equal(c.spent["shop/api"], 1))
}

// fleetdrain node drains --max-concurrent nodes at once: never more, and as
// many as it allows. Before, no test held the limit: draining one more, or
// one at a time, failed none.
func TestNodeDrainsRunMaxConcurrentAtOnce(t *testing.T) {
	for _, limit := range []int{1, 2, 3} {
		objs := workers(7)
		client, open := fakeCluster(t, objs...)
		crowd := &drainCrowd{open: open, want: int32(limit) + 1, bound: 300 * time.Millisecond}
		o, _, _ := nodeOptions(client, nodeNames(objs)...)
		o.client = crowdClient{Clientset: client, crowd: crowd}
		o.MaxConcurrent = limit
		assert.NilError(t, o.drainNodes(context.Background()))
		assert.Equal(t, crowd.peak, int32(limit), "nodes drained at once with --max-concurrent %d", limit)
	}
}

// drainCrowd counts the node drains under way by their open pod watches
// (one per drain). A drain opening its watch waits for one more than the
// limit to join it, up to a bound: every drain that may overlap it then
// does, and one too many shows.
type drainCrowd struct {
	open  *atomic.Int32
	want  int32
	bound time.Duration

	mu   sync.Mutex
	peak int32
}

// joined waits, within the watch's ctx, for the crowd to gather.
func (c *drainCrowd) joined(ctx context.Context) {
	_ = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, c.bound, true, func(context.Context) (bool, error) {
		now := c.open.Load()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.peak = max(c.peak, now)
		return now >= c.want, nil
	})
}

// crowdClient is the fake whose pod watches of one node report to crowd.
type crowdClient struct {
	*fake.Clientset
	crowd *drainCrowd
}

func (c crowdClient) CoreV1() corev1client.CoreV1Interface {
	return crowdCore{CoreV1Interface: c.Clientset.CoreV1(), crowd: c.crowd}
}

type crowdCore struct {
	corev1client.CoreV1Interface
	crowd *drainCrowd
}

func (c crowdCore) Pods(ns string) corev1client.PodInterface {
	return crowdPods{PodInterface: c.CoreV1Interface.Pods(ns), crowd: c.crowd}
}

type crowdPods struct {
	corev1client.PodInterface
	crowd *drainCrowd
}

func (p crowdPods) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := p.PodInterface.Watch(ctx, opts)
	if err == nil && strings.HasPrefix(opts.FieldSelector, "spec.nodeName=") {
		p.crowd.joined(ctx)
	}
	return w, err
}

var _ kubernetes.Interface = crowdClient{}

// A reservation ends when the budget's status lists its pod as disrupted
// at a time it did not list before (an entry an earlier eviction of a
// StatefulSet pod of that name left is no count), and a granted one whose
// count the view never sees ends after uncountedHold; one not granted yet
// never ends by itself.
func TestAReservationEndsWhenItsEvictionIsCounted(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	b := budgetWithRV("db", 1)
	b.Status.DisruptedPods = map[string]metav1.Time{"db-0": earlier}
	client, _ := fakeCluster(t, b)
	v, err := NewBudgetView(context.Background(), client)
	assert.NilError(t, err)
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	v.now = func() time.Time { return clock }
	db0, db1 := budgetPod("n1", "db", 0), budgetPod("n2", "db", 1)
	db0.Name, db1.Name = "db-0", "db-1"

	r, blocking := v.Reserve(db0)
	assert.Assert(t, blocking == nil)
	_, blocking = v.Reserve(db1)
	assert.Check(t, blocking != nil, "the one disruption is reserved")
	// The controller's write that lists nothing new: still reserved.
	update := func(disrupted map[string]metav1.Time) {
		t.Helper()
		b = b.DeepCopy()
		b.ResourceVersion += "0"
		b.Status.DisruptedPods = disrupted
		_, err := client.PolicyV1().PodDisruptionBudgets("shop").UpdateStatus(context.Background(), b, metav1.UpdateOptions{})
		assert.NilError(t, err)
		assert.NilError(t, wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			got, ok, err := v.informer.GetStore().GetByKey("shop/db")
			return ok && got.(*policyv1.PodDisruptionBudget).ResourceVersion == b.ResourceVersion, err
		}))
	}
	update(map[string]metav1.Time{"db-0": earlier})
	clock = clock.Add(time.Hour)
	_, blocking = v.Reserve(db1)
	assert.Check(t, blocking != nil, "a reservation not granted yet never ends by itself")
	// The eviction's own count, listed at a new time, then dropped again
	// by the next write: the view saw it.
	update(map[string]metav1.Time{"db-0": metav1.NewTime(earlier.Add(time.Hour))})
	update(nil)
	r1, blocking := v.Reserve(db1)
	assert.Assert(t, blocking == nil, "counted: the status allows one disruption again")
	r.Release()

	r1.Granted()
	_, blocking = v.Reserve(db0)
	assert.Check(t, blocking != nil)
	clock = clock.Add(uncountedHold)
	_, blocking = v.Reserve(db0)
	assert.Check(t, blocking == nil, "a granted eviction never counted is held uncountedHold")
}
