package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// reconcileDelete takes a deleted Spoke through upstream's steps on the
// hub, one finalizer at a time: the pre-flight, the unjoin (the hub's own
// only for hub-as-spoke, a pivot that never completed, or unified mode;
// otherwise it waits for the spoke's agent), the hub cleanup. It says when
// to come back.
func (f *Fleet) reconcileDelete(ctx context.Context, s *spoke) next {
	if s.Status.Phase != phaseDeleting {
		f.setDeleting(ctx, s, cleanupCondition(false, ""))
		return requeue
	}
	if s.Annotations[forceDeleteAnnotation] == "true" && (s.has(finalizerHubCleanupPreflight) || s.has(finalizerSpokeCleanup)) {
		// The escape hatch: the hub stops waiting for the spoke. Whatever
		// runs there (the klusterlet, the agent) is left running.
		if err := f.dropManifestWorks(ctx, s.Name); err != nil {
			f.fail(ctx, err)
			return failed
		}
		f.setFinalizers(ctx, s, without(s.Finalizers, finalizerHubCleanupPreflight, finalizerSpokeCleanup))
		return again
	}
	switch {
	case s.has(finalizerHubCleanupPreflight):
		return f.hubPreflight(ctx, s)
	case !s.has(finalizerHubCleanup):
		return waitChange
	}
	// Upstream's doHubCleanup checks for blocking works on every pass until
	// hub-cleanup goes, not only before the pre-flight finalizer goes.
	if n, blocked := f.blockedByWorks(ctx, s); blocked {
		return n
	}
	switch {
	case s.has(finalizerSpokeCleanup):
		if f.mode == ModeAddon && !s.hubAsSpoke() && s.pivotComplete() {
			// "Hub preflight complete, waiting for spoke agent to deregister":
			// the agent's removal of spoke-cleanup brings the next reconcile.
			return waitChange
		}
		return f.hubUnjoin(ctx, s)
	default:
		return f.hubCleanup(ctx, s)
	}
}

// blockedByWorks is upstream's block on works no add-on owns, once the
// ManagedCluster exists: CleanupFailed with upstream's message, and the
// queue's backoff.
func (f *Fleet) blockedByWorks(ctx context.Context, s *spoke) (next, bool) {
	if _, err := f.managedCluster(ctx, s.Name); apierrors.IsNotFound(err) {
		return 0, false
	} else if err != nil {
		f.fail(ctx, err)
		return failed, true
	}
	works, err := f.dyn.Resource(manifestWorkGVR).Namespace(s.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		f.fail(ctx, fmt.Errorf("listing ManifestWorks in %s: %w", s.Name, err))
		return failed, true
	}
	for _, w := range works.Items {
		if !addOnOwned(&w) {
			// An error upstream: the queue backs off, and the work's
			// deletion brings no reconcile (upstream watches no works).
			f.setDeleting(ctx, s, cleanupCondition(true, BlockingMessage(s.Name)))
			return failed, true
		}
	}
	return 0, false
}

func without(list []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return slices.Contains(drop, s) })
}

// cleanAll is upstream's shouldCleanAll: every add-on goes, the agent's
// too, when the hub itself unjoins the spoke.
func (f *Fleet) cleanAll(s *spoke) bool {
	return s.hubAsSpoke() || !s.pivotComplete() || f.mode == ModeUnified
}

func (f *Fleet) hubPreflight(ctx context.Context, s *spoke) next {
	mc, err := f.managedCluster(ctx, s.Name)
	if apierrors.IsNotFound(err) && f.hub.StopAgent(s.Name) {
		// Upstream joins within one reconcile (clusteradm join --wait, then
		// accept), so the Spoke it deletes has its ManagedCluster or no agent
		// at all. Here the agent registers in the background: one started but
		// not registered yet would create the ManagedCluster after this check,
		// and nothing would ever delete it. Stop it, then look again.
		mc, err = f.managedCluster(ctx, s.Name)
	}
	if apierrors.IsNotFound(err) {
		// Never joined: in addon mode nothing holds the Spoke any more.
		f.setFinalizers(ctx, s, without(s.Finalizers, finalizerHubCleanupPreflight, finalizerHubCleanup))
		return again
	}
	if err != nil {
		f.fail(ctx, err)
		return failed
	}
	if s.Spec.CleanupConfig.ForceClusterDrain && !f.addTaint(ctx, mc, TaintWorkloadCleanup) {
		return again
	}
	if n, blocked := f.blockedByWorks(ctx, s); blocked {
		return n
	}
	if !f.addTaint(ctx, mc, TaintTerminating) {
		return again
	}
	// Upstream disables the spoke's add-ons here (all but the agent's while
	// the agent is to unjoin) and waits for their works to go.
	all := f.cleanAll(s)
	for _, name := range s.Status.EnabledAddons {
		if name != AgentAddOn || all {
			if err := f.disableAddOn(ctx, s.Name, name); err != nil {
				f.fail(ctx, err)
				return failed
			}
		}
	}
	works, err := f.dyn.Resource(manifestWorkGVR).Namespace(s.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		f.fail(ctx, fmt.Errorf("listing ManifestWorks in %s: %w", s.Name, err))
		return failed
	}
	if slices.ContainsFunc(works.Items, func(w unstructured.Unstructured) bool {
		return all || w.GetLabels()[addOnNameLabel] != AgentAddOn
	}) {
		return pollAddons
	}
	f.setFinalizers(ctx, s, without(s.Finalizers, finalizerHubCleanupPreflight))
	return again
}

// addOnOwned is upstream's test: some owner of the work is a ManagedClusterAddOn.
func addOnOwned(w *unstructured.Unstructured) bool {
	return slices.ContainsFunc(w.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.Kind == managedClusterAddOnKind })
}

// addTaint adds a NoSelect taint (the hub's webhook sets timeAdded); it says
// whether the taint was already there.
func (f *Fleet) addTaint(ctx context.Context, mc *unstructured.Unstructured, key string) bool {
	taints, _, _ := unstructured.NestedSlice(mc.Object, "spec", "taints")
	for _, t := range taints {
		if m, _ := t.(map[string]any); m["key"] == key {
			return true
		}
	}
	op := map[string]any{"op": "add", "path": "/spec/taints/-", "value": map[string]any{"key": key, "effect": "NoSelect"}}
	if len(taints) == 0 {
		op = map[string]any{"op": "add", "path": "/spec/taints", "value": []any{op["value"]}}
	}
	patch, _ := json.Marshal([]any{map[string]any{"op": "test", "path": "/metadata/resourceVersion", "value": mc.GetResourceVersion()}, op})
	_, err := f.dyn.Resource(managedClusterGVR).Patch(ctx, mc.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsInvalid(err) {
		f.fail(ctx, fmt.Errorf("tainting ManagedCluster %s %s: %w", mc.GetName(), key, err))
	}
	return false
}

// hubUnjoin is upstream's doSpokeCleanup run by the hub: with the Spoke's
// kubeconfig, which needs the spoke's API server to answer.
func (f *Fleet) hubUnjoin(ctx context.Context, s *spoke) next {
	kubeconfig, err := f.loadKubeconfig(ctx, s)
	var c kubernetes.Interface
	if err == nil {
		c, err = reachSpoke(ctx, kubeconfig)
	}
	if err == nil {
		err = f.unjoinWith(ctx, s, c)
	} else {
		err = fmt.Errorf("failed to unjoin spoke cluster: %w", err)
	}
	if err != nil {
		f.setDeleting(ctx, s, cleanupCondition(true, err.Error()))
		return failed
	}
	f.setFinalizers(ctx, s, without(s.Finalizers, finalizerSpokeCleanup))
	return again
}

// csrSuffix is what the registration agent's CSR names add to the cluster name.
var csrSuffix = regexp.MustCompile(`-[a-zA-Z0-9]{5}$`)

// hubCleanup is the rest of upstream's doHubCleanup once the spoke is
// unjoined: the cluster's CSRs (labelled, and named after it), the agent
// add-on and its work, the ManagedCluster, the cluster namespace.
func (f *Fleet) hubCleanup(ctx context.Context, s *spoke) next {
	csrs, err := f.kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: clusterNameLabel})
	if err != nil {
		f.fail(ctx, fmt.Errorf("listing CSRs: %w", err))
		return failed
	}
	for _, c := range csrs.Items {
		if csrSuffix.ReplaceAllString(c.Name, "") != s.Name {
			continue
		}
		if err := f.kube.CertificatesV1().CertificateSigningRequests().Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			f.fail(ctx, fmt.Errorf("deleting CSR %s: %w", c.Name, err))
			return failed
		}
	}
	if err := f.disableAddOn(ctx, s.Name, AgentAddOn); err != nil {
		f.fail(ctx, err)
		return failed
	}
	works, err := f.dyn.Resource(manifestWorkGVR).Namespace(s.Name).List(ctx, metav1.ListOptions{LabelSelector: addOnNameLabel + "=" + AgentAddOn})
	if err != nil {
		f.fail(ctx, fmt.Errorf("listing ManifestWorks in %s: %w", s.Name, err))
		return failed
	}
	if len(works.Items) > 0 {
		// The spoke's work agent is gone: nothing else would let them go
		// (the garbage collector deletes them, their add-on being disabled).
		for i := range works.Items {
			if err := f.stripFinalizers(ctx, &works.Items[i]); err != nil {
				f.fail(ctx, err)
			}
		}
		return pollAddons
	}
	if err := f.dyn.Resource(managedClusterGVR).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		f.fail(ctx, fmt.Errorf("deleting ManagedCluster %s: %w", s.Name, err))
		return failed
	}
	if err := f.kube.CoreV1().Namespaces().Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		f.fail(ctx, fmt.Errorf("deleting namespace %s: %w", s.Name, err))
		return failed
	}
	f.setFinalizers(ctx, s, without(s.Finalizers, finalizerHubCleanup))
	return again
}

// dropManifestWorks deletes every ManifestWork of the cluster and strips
// their finalizers (the spoke's work agent, which would, is unreachable).
func (f *Fleet) dropManifestWorks(ctx context.Context, ns string) error {
	ri := f.dyn.Resource(manifestWorkGVR).Namespace(ns)
	works, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing ManifestWorks in %s: %w", ns, err)
	}
	for i, w := range works.Items {
		if err := ri.Delete(ctx, w.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ManifestWork %s/%s: %w", ns, w.GetName(), err)
		}
		if err := f.stripFinalizers(ctx, &works.Items[i]); err != nil {
			return err
		}
	}
	return nil
}

func cleanupCondition(failed bool, msg string) condition {
	status := metav1.ConditionFalse
	if failed {
		status = metav1.ConditionTrue
	}
	return cond(conditionCleanupFailed, status, metav1.ConditionFalse, msg)
}
