package fleetdrain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubectl/pkg/drain"

	"github.com/spokekit/spokekit/internal/cli"
)

// evictRetry bounds the wait between two tries of an eviction the API server
// refused, in case the budget's status does not change in between.
const evictRetry = 5 * time.Second

// NodeDrainer evicts the pods of nodes with the eviction semantics of
// k8s.io/kubectl/pkg/drain (its Helper carries the filters, grace period,
// dry-run and delete-or-evict choice), within the budgets of a shared
// BudgetView, and waits for the pods to be gone by watching them.
type NodeDrainer struct {
	Helper  *drain.Helper
	Budgets *BudgetView
	// PDBTimeout bounds how long one pod's eviction waits for a budget.
	PDBTimeout time.Duration
	// Eviction is the policy API version for evictions; empty means delete.
	Eviction schema.GroupVersion
	Progress *DrainProgress
	// Rules decide, as Cluster API does, the drain of the nodes that belong
	// to a Machine, by node name (ReadNodeRules).
	Rules map[string]NodeRules
	// Health is what the run does on nodes that are not Ready.
	Health NodeHealth

	unhealthyMu sync.Mutex
	// unhealthy are the pods deleted past their budgets, by node.
	unhealthy map[string][]string
	// Turns orders the nodes of budget deadlocks; nil orders nothing.
	Turns *budgetTurns
	// Surge starts replacements first (--surge); nil surges nothing.
	Surge *surger
}

// ErrBudgetBlocked is the cause of a drain stopped by a budget that allowed
// no disruption for the whole --pdb-timeout.
var ErrBudgetBlocked = errors.New("blocked by a PodDisruptionBudget")

// Find lists what the drain library would do on node, for the plan.
func (d *NodeDrainer) Find(ctx context.Context, node *corev1.Node) (NodePods, error) {
	found := NodePods{Node: node}
	list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return d.Helper.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
	}
	err := cli.EachInChunks(ctx, list, d.Helper.ChunkSize, metav1.ListOptions{
		LabelSelector: d.Helper.PodSelector,
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node.Name).String(),
	}, func(p *corev1.Pod) error {
		found.All = append(found.All, *p)
		return nil
	})
	if err != nil {
		return found, fmt.Errorf("listing the pods of node %s: %w", node.Name, err)
	}
	deletion, errs := d.helperFor(node).GetPodsForDeletion(node.Name)
	if deletion == nil {
		return found, fmt.Errorf("listing the pods of node %s: %w", node.Name, errors.Join(errs...))
	}
	found.Evict, found.Refusals, found.Warnings = deletion.Pods(), errs, deletion.Warnings()
	sort.Slice(found.All, func(i, j int) bool {
		return namespacedName(found.All[i].Namespace, found.All[i].Name) < namespacedName(found.All[j].Namespace, found.All[j].Name)
	})
	sort.Slice(found.Evict, func(i, j int) bool {
		return namespacedName(found.Evict[i].Namespace, found.Evict[i].Name) < namespacedName(found.Evict[j].Namespace, found.Evict[j].Name)
	})
	if rules, ok := d.Rules[node.Name]; ok {
		return ApplyDrainRules(found, rules)
	}
	return found, nil
}

// ErrNodeTimedOut ends the drain of a node that --timeout ran out on.
var ErrNodeTimedOut = errors.New("--timeout ran out")

// Drain evicts the drainable pods of a cordoned node and waits until they
// are gone. It lists them again: pods may have landed before the cordon.
func (d *NodeDrainer) Drain(ctx context.Context, node *corev1.Node) (evicted int, err error) {
	if d.Helper.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d.Helper.Timeout, fmt.Errorf("%w after %s", ErrNodeTimedOut, d.Helper.Timeout))
		defer cancel()
	}
	// However it ends, the node's turns at contended budgets end with it.
	defer d.Turns.leave(node.Name)
	found, err := d.Find(ctx, node)
	if err != nil {
		return 0, err
	}
	if len(found.Refusals) > 0 {
		return 0, fmt.Errorf("pods the flags do not allow to remove appeared on node %s: %w", node.Name, errors.Join(found.Refusals...))
	}
	pods, stop, err := watchNodePods(ctx, d.helperFor(node), node.Name)
	if err != nil {
		return 0, err
	}
	defer stop()
	d.Progress.start(node.Name, len(found.Evict))
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	// A batch (Cluster API's drain order) starts once the pods of the ones
	// before are gone.
	for _, batch := range drainBatches(found) {
		for _, pod := range batch.Evict {
			wg.Go(func() {
				err := d.evict(ctx, node.Name, pod)
				if err == nil {
					err = pods.waitGone(ctx, pod)
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				evicted++
				d.Progress.evicted(node.Name)
			})
		}
		for _, pod := range batch.Wait {
			wg.Go(func() {
				if err := pods.waitCompleted(ctx, pod); err != nil {
					mu.Lock()
					defer mu.Unlock()
					errs = append(errs, err)
				}
			})
		}
		wg.Wait()
		if len(errs) > 0 {
			break
		}
	}
	if len(errs) > 0 {
		sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
		return evicted, errors.Join(errs...)
	}
	return evicted, nil
}

// evict removes one pod: deleted with --disable-eviction, otherwise evicted
// once the shared view has a disruption to spare for it. A budget that
// allows none is waited on (woken by its changes) up to PDBTimeout.
func (d *NodeDrainer) evict(ctx context.Context, node string, pod *corev1.Pod) (err error) {
	if d.Eviction.Empty() {
		if err := d.removePod(*pod); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting pod %s: %w", namespacedName(pod.Namespace, pod.Name), err)
		}
		return nil
	}
	budgets := budgetKeys(Covering(d.Budgets.List(), pod))
	if err := d.Turns.wait(ctx, node, budgets); err != nil {
		return fmt.Errorf("evicting pod %s: %w", namespacedName(pod.Namespace, pod.Name), err)
	}
	giveBack, err := d.Surge.begin(ctx, node, pod)
	if err != nil {
		return err
	}
	if giveBack != nil {
		defer func() { err = errors.Join(err, giveBack()) }()
	}
	var blockedSince time.Time
	for {
		changed := d.Budgets.Changed()
		reservation, blocking := d.Budgets.Reserve(pod)
		if blocking == nil {
			err := d.removePod(*pod)
			switch {
			case err == nil:
				reservation.Granted()
				d.Progress.unblocked(node, pod)
				d.Turns.took(node, budgets)
				return nil
			case apierrors.IsNotFound(err):
				reservation.Release()
				d.Turns.took(node, budgets)
				return nil
			case apierrors.IsTooManyRequests(err):
				reservation.Release()
				blocking = firstOr(Covering(d.Budgets.List(), pod), nil)
			default:
				reservation.Release()
				return fmt.Errorf("evicting pod %s: %w", namespacedName(pod.Namespace, pod.Name), err)
			}
		}
		if deleted, err := d.deleteUnhealthy(ctx, node, pod); err != nil || deleted {
			return err
		}
		if blockedSince.IsZero() {
			blockedSince = time.Now()
		}
		d.Progress.blocked(node, pod, blocking)
		left := d.PDBTimeout - time.Since(blockedSince)
		if left <= 0 {
			return budgetError(pod, blocking, d.PDBTimeout)
		}
		timer := time.NewTimer(min(left, evictRetry))
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("evicting pod %s: %w", namespacedName(pod.Namespace, pod.Name), context.Cause(ctx))
		}
		timer.Stop()
	}
}

// removePod sends the one request that takes pod off its node: an eviction,
// or a delete with --disable-eviction. Under --dry-run=server the helper
// sends it with dryRun.
func (d *NodeDrainer) removePod(pod corev1.Pod) error {
	if d.Eviction.Empty() {
		return d.Helper.DeletePod(pod)
	}
	return d.Helper.EvictPod(pod, d.Eviction)
}

func budgetError(pod *corev1.Pod, b *policyv1.PodDisruptionBudget, waited time.Duration) error {
	if b == nil {
		return fmt.Errorf("pod %s: eviction refused for %s: %w", namespacedName(pod.Namespace, pod.Name), waited, ErrBudgetBlocked)
	}
	return fmt.Errorf("pod %s: PodDisruptionBudget %s allowed %d disruptions (%d of %d expected pods healthy) for %s: %w",
		namespacedName(pod.Namespace, pod.Name), namespacedName(b.Namespace, b.Name), b.Status.DisruptionsAllowed,
		b.Status.CurrentHealthy, b.Status.ExpectedPods, waited, ErrBudgetBlocked)
}

func firstOr[T any](s []T, def T) T {
	if len(s) == 0 {
		return def
	}
	return s[0]
}

// nodePodWatch follows the pods of one node.
type nodePodWatch struct {
	store    cache.Store
	signal   *cli.Signal
	helper   *drain.Helper
	followed *cli.Followed
	node     string
}

// lost is the error of a wait whose pod watch the server denied mid-drain.
func (w *nodePodWatch) lost() error {
	return fmt.Errorf("cannot follow the pods of node %s: %w", w.node, w.followed.Denied())
}

// watchNodePods starts following the pods of node until stop is called;
// stop returns once the watch is closed and its goroutines have ended, so a
// node's watch never outlives its drain.
func watchNodePods(ctx context.Context, h *drain.Helper, node string) (w *nodePodWatch, stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	pods := h.Client.CoreV1().Pods("")
	onNode := fields.OneTermEqualSelector("spec.nodeName", node).String()
	followed, err := cli.Follow(cli.ListThenWatch(
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = onNode
			return pods.List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = onNode
			return pods.Watch(ctx, o)
		},
	), &corev1.Pod{})
	if err != nil {
		cancel()
		return nil, nil, err
	}
	inf := followed.Informer()
	var running sync.WaitGroup
	stop = func() {
		cancel()
		running.Wait()
	}
	w = &nodePodWatch{store: inf.GetStore(), signal: cli.NewSignal(), helper: h, followed: followed, node: node}
	if _, err := inf.AddEventHandler(w.signal.Handler()); err != nil {
		stop()
		return nil, nil, err
	}
	running.Go(func() { inf.RunWithContext(ctx) })
	if err := followed.Synced(ctx); err != nil {
		stop()
		return nil, nil, fmt.Errorf("watching the pods of node %s: %w", node, err)
	}
	return w, stop, nil
}

// waitGone waits until pod (this UID) is gone from the node, or has been
// terminating longer than --skip-wait-for-delete-timeout.
func (w *nodePodWatch) waitGone(ctx context.Context, pod *corev1.Pod) error {
	for {
		changed := w.signal.Wait()
		obj, exists, _ := w.store.GetByKey(namespacedName(pod.Namespace, pod.Name))
		if !exists || obj.(*corev1.Pod).UID != pod.UID || w.skip(obj.(*corev1.Pod)) {
			return nil
		}
		skipCheck := make(<-chan time.Time)
		if w.helper.SkipWaitForDeleteTimeoutSeconds > 0 {
			skipCheck = time.After(time.Second)
		}
		select {
		case <-changed:
		case <-skipCheck:
		case <-w.followed.Lost():
			return w.lost()
		case <-ctx.Done():
			return fmt.Errorf("waiting for pod %s to terminate: %w", namespacedName(pod.Namespace, pod.Name), context.Cause(ctx))
		}
	}
}

// waitCompleted waits until pod (this UID) has completed (Succeeded or
// Failed) or is gone: Cluster API's WaitCompleted, never evicted.
func (w *nodePodWatch) waitCompleted(ctx context.Context, pod *corev1.Pod) error {
	for {
		changed := w.signal.Wait()
		obj, exists, _ := w.store.GetByKey(namespacedName(pod.Namespace, pod.Name))
		if !exists || obj.(*corev1.Pod).UID != pod.UID {
			return nil
		}
		if phase := obj.(*corev1.Pod).Status.Phase; phase == corev1.PodSucceeded || phase == corev1.PodFailed {
			return nil
		}
		select {
		case <-changed:
		case <-w.followed.Lost():
			return w.lost()
		case <-ctx.Done():
			return fmt.Errorf("waiting for pod %s to complete (Cluster API's WaitCompleted: it is never evicted): %w", namespacedName(pod.Namespace, pod.Name), context.Cause(ctx))
		}
	}
}

func (w *nodePodWatch) skip(p *corev1.Pod) bool {
	n := w.helper.SkipWaitForDeleteTimeoutSeconds
	return n > 0 && p.DeletionTimestamp != nil && time.Since(p.DeletionTimestamp.Time) > time.Duration(n)*time.Second
}

// DrainProgress is the live line of a run: nodes drained and failed, per
// running node evicted/total, and the budget a node waits on.
type DrainProgress struct {
	mu      sync.Mutex
	p       *cli.Progress
	total   int
	drained int
	failed  int
	nodes   map[string]*nodeProgress
	running []string
}

type nodeProgress struct {
	evicted, total int
	blocked        map[string]string // pod -> budget
}

// NewDrainProgress reports on p about a run over total nodes.
func NewDrainProgress(p *cli.Progress, total int) *DrainProgress {
	return &DrainProgress{p: p, total: total, nodes: map[string]*nodeProgress{}}
}

func (d *DrainProgress) start(node string, pods int) {
	d.change(func() {
		d.nodes[node] = &nodeProgress{total: pods, blocked: map[string]string{}}
		d.running = append(d.running, node)
	})
}

func (d *DrainProgress) evicted(node string) {
	d.change(func() { d.nodes[node].evicted++ })
}

func (d *DrainProgress) blocked(node string, pod *corev1.Pod, b *policyv1.PodDisruptionBudget) {
	name := "a disruption budget"
	if b != nil {
		name = "budget " + namespacedName(b.Namespace, b.Name)
	}
	d.change(func() { d.nodes[node].blocked[namespacedName(pod.Namespace, pod.Name)] = name })
}

func (d *DrainProgress) unblocked(node string, pod *corev1.Pod) {
	d.change(func() { delete(d.nodes[node].blocked, namespacedName(pod.Namespace, pod.Name)) })
}

// Finished marks a node's drain as over, drained or not.
func (d *DrainProgress) Finished(node string, drained bool) {
	d.change(func() {
		if drained {
			d.drained++
		} else {
			d.failed++
		}
		d.running = slices.DeleteFunc(d.running, func(n string) bool { return n == node })
	})
}

// Done ends the live line with the count of drained (and failed) nodes.
func (d *DrainProgress) Done() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.p.Done("%s", d.counts())
}

func (d *DrainProgress) counts() string {
	s := fmt.Sprintf("%d/%d nodes drained", d.drained, d.total)
	if d.failed > 0 {
		s += fmt.Sprintf(", %d not drained", d.failed)
	}
	return s
}

func (d *DrainProgress) change(f func()) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	f()
	parts := []string{d.counts()}
	for _, n := range d.running {
		s := d.nodes[n]
		part := fmt.Sprintf("%s %d/%d evicted", n, s.evicted, s.total)
		var waits []string
		for _, b := range s.blocked {
			if !slices.Contains(waits, b) {
				waits = append(waits, b)
			}
		}
		slices.Sort(waits)
		for _, b := range waits {
			part += ", waiting on " + b
		}
		parts = append(parts, part)
	}
	d.p.Update("%s", strings.Join(parts, " | "))
}
