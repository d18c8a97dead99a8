package fleetdrain

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// BudgetView is the one view of the cluster's PodDisruptionBudgets that all
// node drains of a run share. Before an eviction a drain reserves one
// disruption of every budget covering the pod; the reservation lasts until
// the view sees the API server's count of that eviction in the budget's
// status (the eviction lists the pod in status.disruptedPods in the same
// write that takes the disruption), so concurrent drains never spend the
// same allowed disruption twice and do not storm the API server with
// evictions it must refuse.
//
// Any other change of the status does not end a reservation: the
// disruption controller rewrites it whenever a covered pod changes (a
// replacement becoming Ready, an evicted pod gone), often between a
// reservation and the eviction's arrival. Ending reservations at any
// change, as before, let a second drain spend the disruption the first was
// about to use, and the API server refused one of the two.
type BudgetView struct {
	informer cache.SharedIndexInformer
	signal   *cli.Signal
	// now is the clock of uncountedHold.
	now func() time.Time

	mu sync.Mutex
	// reserved holds, per budget, its open reservations.
	reserved map[string][]*Reservation
}

// uncountedHold ends a granted reservation whose count the view never saw:
// a relist that skipped the version listing the pod, or a pod the API
// server evicted without taking a disruption (one that was not healthy).
// Until then the reservation errs on the side of the budget.
const uncountedHold = 30 * time.Second

// Reservation is one disruption taken of each budget covering a pod.
type Reservation struct {
	v        *BudgetView
	pod      string
	covering []*policyv1.PodDisruptionBudget
	// listed is the time each budget's status.disruptedPods gave the pod
	// when it was reserved (absent: not listed): an entry an earlier
	// eviction of a pod of that name left (a StatefulSet's) is no count of
	// this one.
	listed map[string]metav1.Time
	// granted is when the API server granted the eviction (zero: not yet).
	granted time.Time
}

// NewBudgetView starts watching budgets in every namespace and returns once
// it has listed them.
func NewBudgetView(ctx context.Context, client kubernetes.Interface) (*BudgetView, error) {
	budgets := client.PolicyV1().PodDisruptionBudgets("")
	followed, err := cli.Follow(cli.ListThenWatch(
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return budgets.List(ctx, o) },
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return budgets.Watch(ctx, o) },
	), &policyv1.PodDisruptionBudget{})
	if err != nil {
		return nil, err
	}
	inf := followed.Informer()
	v := &BudgetView{informer: inf, signal: cli.NewSignal(), now: time.Now, reserved: map[string][]*Reservation{}}
	// Every version the watch delivers is looked at, so a count that the
	// disruption controller's next write drops again (the pod gone) is seen.
	seen := func(obj any) {
		if b, ok := obj.(*policyv1.PodDisruptionBudget); ok {
			v.mu.Lock()
			v.open(b)
			v.mu.Unlock()
		}
		v.signal.Fire()
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
		DeleteFunc: func(any) { v.signal.Fire() },
	}); err != nil {
		return nil, err
	}
	go inf.RunWithContext(ctx)
	if err := followed.Synced(ctx); err != nil {
		if followed.Denied() != nil {
			// The plan and every eviction keep the budgets: unread, the
			// drain cannot keep them.
			return nil, exitcode.RefusedErrorf("cannot read the PodDisruptionBudgets every eviction must keep: %v; nothing was changed (the ClusterRole spokekit-fleetdrain-node of %s grants their list and watch)", err, RBACManifest)
		}
		return nil, fmt.Errorf("listing PodDisruptionBudgets: %w", err)
	}
	return v, nil
}

// List returns every budget.
func (v *BudgetView) List() []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, o := range v.informer.GetStore().List() {
		out = append(out, o.(*policyv1.PodDisruptionBudget))
	}
	return out
}

// Changed is closed at the next change of any budget.
func (v *BudgetView) Changed() <-chan struct{} { return v.signal.Wait() }

// Reserve takes one disruption of every budget covering pod. It returns the
// budget that has none left instead (nothing is reserved then). The
// reservation is to be Released when the eviction did not happen, and
// Granted when it did.
func (v *BudgetView) Reserve(pod *corev1.Pod) (r *Reservation, blocking *policyv1.PodDisruptionBudget) {
	v.mu.Lock()
	defer v.mu.Unlock()
	covering := Covering(v.List(), pod)
	for _, b := range covering {
		if int(b.Status.DisruptionsAllowed)-v.open(b) <= 0 {
			return nil, b
		}
	}
	r = &Reservation{v: v, pod: pod.Name, covering: covering, listed: map[string]metav1.Time{}}
	for _, b := range covering {
		key := namespacedName(b.Namespace, b.Name)
		if t, ok := b.Status.DisruptedPods[pod.Name]; ok {
			r.listed[key] = t
		}
		v.reserved[key] = append(v.reserved[key], r)
	}
	return r, nil
}

// Release gives the reservation back: the eviction did not happen.
func (r *Reservation) Release() {
	r.v.mu.Lock()
	defer r.v.mu.Unlock()
	for _, b := range r.covering {
		key := namespacedName(b.Namespace, b.Name)
		r.v.reserved[key] = slices.DeleteFunc(r.v.reserved[key], func(o *Reservation) bool { return o == r })
	}
}

// Granted notes that the API server granted the eviction: the reservation
// lasts until the view sees it counted, or uncountedHold.
func (r *Reservation) Granted() {
	r.v.mu.Lock()
	defer r.v.mu.Unlock()
	r.granted = r.v.now()
}

// open counts the reservations of b whose eviction b's status does not
// count yet, dropping those it counts (and the granted ones held past
// uncountedHold).
func (v *BudgetView) open(b *policyv1.PodDisruptionBudget) int {
	key := namespacedName(b.Namespace, b.Name)
	v.reserved[key] = slices.DeleteFunc(v.reserved[key], func(r *Reservation) bool {
		if t, ok := b.Status.DisruptedPods[r.pod]; ok {
			if was, listed := r.listed[key]; !listed || !t.Equal(&was) {
				return true
			}
		}
		return !r.granted.IsZero() && v.now().Sub(r.granted) >= uncountedHold
	})
	return len(v.reserved[key])
}
