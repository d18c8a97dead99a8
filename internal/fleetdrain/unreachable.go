package fleetdrain

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/drain"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// Node states that change how a drain can end.
const (
	// NodeUnreachable: the node's Ready condition is Unknown: its kubelet
	// stopped reporting, so its pods never finish terminating.
	NodeUnreachable = "Unreachable"
	// NodeNotReady: the kubelet reports the node not Ready; pods may
	// terminate late or not at all.
	NodeNotReady = "NotReady"
)

// unreachableSkipWait is the --skip-wait-for-delete-timeout Cluster API's
// Machine controller uses on an unreachable node: a pod terminating longer
// than a second counts as gone.
const unreachableSkipWait = 1

// nodeState is NodeUnreachable, NodeNotReady, or "" for a Ready node (or
// one that reports no Ready condition yet).
func nodeState(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		switch c.Status {
		case corev1.ConditionUnknown:
			return NodeUnreachable
		case corev1.ConditionFalse:
			return NodeNotReady
		}
	}
	return ""
}

// Values of --unhealthy-pods.
const (
	UnhealthyPodsNever               = "never"
	UnhealthyPodsEvictIfBudgetEmpty  = "evict-if-budget-empty"
	unhealthyPodsFlag                = "unhealthy-pods"
	skipWaitForDeleteTimeoutFlagName = "skip-wait-for-delete-timeout" //nolint:gosec // a flag name, not a credential
)

func validateUnhealthyPods(v string) error {
	if v != UnhealthyPodsNever && v != UnhealthyPodsEvictIfBudgetEmpty {
		return exitcode.UsageErrorf("--%s must be %s or %s, got %q", unhealthyPodsFlag, UnhealthyPodsNever, UnhealthyPodsEvictIfBudgetEmpty, v)
	}
	return nil
}

// NodeHealth is what a drain knows of the health of the nodes it drains.
type NodeHealth struct {
	// SkipWaitSet: the user gave --skip-wait-for-delete-timeout, which then
	// holds on every node.
	SkipWaitSet bool
	// UnhealthyPods is --unhealthy-pods.
	UnhealthyPods string
	// Timeout is --timeout (0: none), for the plan.
	Timeout string
}

// helperFor is the drain library's helper for node: on an unreachable node
// whose --skip-wait-for-delete-timeout the user left unset, Cluster API's
// one second; otherwise the run's.
func (d *NodeDrainer) helperFor(node *corev1.Node) *drain.Helper {
	if d.Health.SkipWaitSet || nodeState(node) != NodeUnreachable {
		return d.Helper
	}
	h := *d.Helper
	h.SkipWaitForDeleteTimeoutSeconds = unreachableSkipWait
	return &h
}

// stateNote is the plan's sentence on a node that is not Ready: what the
// drain does about it and what bounds the wait.
func (h NodeHealth) stateNote(n *corev1.Node, skipWait int) string {
	bound := "--timeout " + h.Timeout
	if h.Timeout == "" {
		bound = "nothing: no --timeout was given"
	}
	switch nodeState(n) {
	case NodeUnreachable:
		if !h.SkipWaitSet {
			skipWait = unreachableSkipWait
		}
		if skipWait == 0 {
			return fmt.Sprintf("node is Unreachable (Ready Unknown): its pods never finish terminating, and --skip-wait-for-delete-timeout=0 waits for them: the wait is bounded by %s", bound)
		}
		how := "defaulted as Cluster API does on an unreachable node"
		if h.SkipWaitSet {
			how = "as given"
		}
		return fmt.Sprintf("node is Unreachable (Ready Unknown): its pods never finish terminating; a pod terminating longer than %d s counts as gone (--skip-wait-for-delete-timeout=%d, %s)", skipWait, skipWait, how)
	case NodeNotReady:
		return fmt.Sprintf("node is NotReady (Ready False): its pods may terminate late or never; the wait is bounded by %s", bound)
	}
	return ""
}

// unhealthyDeletable tells whether pod may be deleted past its budgets with
// --unhealthy-pods=evict-if-budget-empty, as a budget with
// unhealthyPodEvictionPolicy AlwaysAllow lets it be evicted: the pod is not
// Ready, and every budget covering it has no healthy pod left to lose. It
// returns the budgets' names for the message.
func unhealthyDeletable(pod *corev1.Pod, budgets []*policyv1.PodDisruptionBudget) ([]string, bool) {
	if podReady(pod) || pod.DeletionTimestamp != nil {
		return nil, false
	}
	covering := Covering(budgets, pod)
	if len(covering) == 0 {
		return nil, false
	}
	var names []string
	for _, b := range covering {
		if b.Status.CurrentHealthy > 0 {
			return nil, false
		}
		names = append(names, namespacedName(b.Namespace, b.Name))
	}
	slices.Sort(names)
	return names, true
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// deleteUnhealthy deletes a pod whose eviction a budget refuses, when
// --unhealthy-pods=evict-if-budget-empty allows it: read fresh, not Ready,
// its budgets without a healthy pod, and deleted only as it was read (UID
// and resourceVersion preconditions), so a pod that turned Ready since is
// never deleted. It reports whether it deleted the pod.
func (d *NodeDrainer) deleteUnhealthy(ctx context.Context, node string, pod *corev1.Pod) (bool, error) {
	if d.Health.UnhealthyPods != UnhealthyPodsEvictIfBudgetEmpty {
		return false, nil
	}
	pods := d.Helper.Client.CoreV1().Pods(pod.Namespace)
	fresh, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading pod %s: %w", namespacedName(pod.Namespace, pod.Name), err)
	}
	names, ok := unhealthyDeletable(fresh, d.Budgets.List())
	if !ok || fresh.UID != pod.UID {
		return false, nil
	}
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &fresh.UID, ResourceVersion: &fresh.ResourceVersion}}
	if d.Helper.GracePeriodSeconds >= 0 {
		grace := int64(d.Helper.GracePeriodSeconds)
		opts.GracePeriodSeconds = &grace
	}
	if d.Helper.DryRunStrategy == cmdutil.DryRunServer {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	err = pods.Delete(ctx, pod.Name, opts)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case apierrors.IsConflict(err):
		// It changed since it was read: decide again at the next try.
		return false, nil
	case err != nil:
		return false, fmt.Errorf("deleting unhealthy pod %s: %w", namespacedName(pod.Namespace, pod.Name), err)
	}
	d.recordUnhealthy(node, namespacedName(pod.Namespace, pod.Name))
	d.Progress.p.Printf("pod/%s deleted: not Ready, and budget %s has no healthy pod to lose (--%s=%s)",
		namespacedName(pod.Namespace, pod.Name), strings.Join(names, ", "), unhealthyPodsFlag, UnhealthyPodsEvictIfBudgetEmpty)
	return true, nil
}

func (d *NodeDrainer) recordUnhealthy(node, pod string) {
	d.unhealthyMu.Lock()
	defer d.unhealthyMu.Unlock()
	if d.unhealthy == nil {
		d.unhealthy = map[string][]string{}
	}
	d.unhealthy[node] = append(d.unhealthy[node], pod)
}

// unhealthyDeleted are the pods of node deleted past their budgets, sorted.
func (d *NodeDrainer) unhealthyDeleted(node string) []string {
	d.unhealthyMu.Lock()
	defer d.unhealthyMu.Unlock()
	out := slices.Clone(d.unhealthy[node])
	slices.Sort(out)
	return out
}

// planHealth adds to a node's plan its state and, with
// --unhealthy-pods=evict-if-budget-empty, each pod that would be deleted
// past a budget that allows no disruption, named one by one.
func planHealth(r *NodeReport, found NodePods, budgets []*policyv1.PodDisruptionBudget, health NodeHealth, skipWait int) {
	r.NodeState = nodeState(found.Node)
	if note := health.stateNote(found.Node, skipWait); note != "" {
		r.Warnings = append([]string{note}, r.Warnings...)
	}
	if health.UnhealthyPods != UnhealthyPodsEvictIfBudgetEmpty {
		return
	}
	for i := range found.Evict {
		p := &found.Evict[i]
		if names, ok := unhealthyDeletable(p, budgets); ok {
			planned := found.planned(p)
			planned.Reason = fmt.Sprintf("not Ready, and budget %s has no healthy pod to lose: deleted if its eviction is refused (--%s=%s)",
				strings.Join(names, ", "), unhealthyPodsFlag, UnhealthyPodsEvictIfBudgetEmpty)
			r.UnhealthyDeletes = append(r.UnhealthyDeletes, planned)
		}
	}
}
