package fleetdrain

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// BudgetView is the one view of the cluster's PodDisruptionBudgets that all
// node drains of a run share. Before an eviction a drain reserves one
// disruption of every budget covering the pod; the reservation lasts until
// the budget's status changes (the API server counts the eviction then), so
// concurrent drains never spend the same allowed disruption twice and do not
// storm the API server with evictions it must refuse.
type BudgetView struct {
	informer cache.SharedIndexInformer
	signal   *signal

	mu sync.Mutex
	// reserved holds, per budget, the resourceVersion each open reservation saw.
	reserved map[string][]string
}

// NewBudgetView starts watching budgets in every namespace and returns once
// it has listed them.
func NewBudgetView(ctx context.Context, client kubernetes.Interface) (*BudgetView, error) {
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Policy().V1().PodDisruptionBudgets().Informer()
	v := &BudgetView{informer: inf, signal: newSignal(), reserved: map[string][]string{}}
	if _, err := inf.AddEventHandler(v.signal.handler()); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("listing PodDisruptionBudgets: %w", context.Cause(ctx))
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
func (v *BudgetView) Changed() <-chan struct{} { return v.signal.wait() }

// Reserve takes one disruption of every budget covering pod. It returns the
// budget that has none left instead (nothing is reserved then). release
// gives the reservation back when the eviction did not happen.
func (v *BudgetView) Reserve(pod *corev1.Pod) (release func(), blocking *policyv1.PodDisruptionBudget) {
	v.mu.Lock()
	defer v.mu.Unlock()
	covering := Covering(v.List(), pod)
	for _, b := range covering {
		if int(b.Status.DisruptionsAllowed)-v.open(b) <= 0 {
			return nil, b
		}
	}
	for _, b := range covering {
		key := namespacedName(b.Namespace, b.Name)
		v.reserved[key] = append(v.reserved[key], b.ResourceVersion)
	}
	return func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		for _, b := range covering {
			key := namespacedName(b.Namespace, b.Name)
			rvs := v.reserved[key]
			for i, rv := range rvs {
				if rv == b.ResourceVersion {
					v.reserved[key] = append(rvs[:i], rvs[i+1:]...)
					break
				}
			}
		}
	}, nil
}

// open counts the reservations of b the API server has not yet reflected in
// its status, dropping those it has.
func (v *BudgetView) open(b *policyv1.PodDisruptionBudget) int {
	key := namespacedName(b.Namespace, b.Name)
	var keep []string
	for _, rv := range v.reserved[key] {
		if rv == b.ResourceVersion {
			keep = append(keep, rv)
		}
	}
	v.reserved[key] = keep
	return len(keep)
}

// signal wakes every waiter at the next event of an informer.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }

func (s *signal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

func (s *signal) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.ch)
	s.ch = make(chan struct{})
}

func (s *signal) handler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.fire() },
		UpdateFunc: func(any, any) { s.fire() },
		DeleteFunc: func(any) { s.fire() },
	}
}
