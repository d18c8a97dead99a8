package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/spokekit/spokekit/e2e/harness"
)

// reconcileDelete takes a deleted Spoke through the upstream steps, one
// finalizer at a time: hub pre-flight, unjoin on the spoke, hub cleanup.
func (f *Fleet) reconcileDelete(ctx context.Context, s *spoke) {
	if s.Status.Phase != phaseDeleting {
		f.setStatus(ctx, s, phaseDeleting, cleanupCondition(false, ""))
		return
	}
	has := func(fin string) bool { return slices.Contains(s.Finalizers, fin) }
	if s.Annotations[forceDeleteAnnotation] == "true" && (has(finalizerHubCleanupPreflight) || has(finalizerSpokeCleanup)) {
		// The escape hatch: the hub stops waiting for the spoke. The agent,
		// on a cluster nobody reaches any more, is as good as gone.
		f.hub.StopAgent(s.Name)
		if err := f.dropManifestWorks(ctx, s.Name); err != nil {
			f.fail(ctx, err)
			return
		}
		f.setFinalizers(ctx, s, without(s.Finalizers, finalizerHubCleanupPreflight, finalizerSpokeCleanup))
		return
	}
	switch {
	case has(finalizerHubCleanupPreflight):
		f.hubPreflight(ctx, s)
	case has(finalizerSpokeCleanup):
		f.unjoin(ctx, s)
	case has(finalizerHubCleanup):
		f.hubCleanup(ctx, s)
	}
}

func without(list []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return slices.Contains(drop, s) })
}

func (f *Fleet) hubPreflight(ctx context.Context, s *spoke) {
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
		f.setFinalizers(ctx, s, without(s.Finalizers, finalizerHubCleanupPreflight, finalizerHubCleanup))
		return
	}
	if err != nil {
		f.fail(ctx, err)
		return
	}
	if s.Spec.CleanupConfig.ForceClusterDrain && !f.addTaint(ctx, mc, TaintWorkloadCleanup) {
		return
	}
	works, err := f.dyn.Resource(manifestWorkGVR).Namespace(s.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		f.fail(ctx, fmt.Errorf("listing ManifestWorks in %s: %w", s.Name, err))
		return
	}
	for _, w := range works.Items {
		if !addOnOwned(&w) {
			f.setStatus(ctx, s, phaseDeleting, cleanupCondition(true, BlockingMessage(s.Name)))
			return
		}
	}
	if !f.addTaint(ctx, mc, TaintTerminating) {
		return
	}
	// Upstream disables the spoke's add-ons here and waits for their works
	// to go; deleting the works is what disabling comes to on the hub.
	if len(works.Items) > 0 {
		for _, w := range works.Items {
			err := f.dyn.Resource(manifestWorkGVR).Namespace(s.Name).Delete(ctx, w.GetName(), metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				f.fail(ctx, fmt.Errorf("deleting add-on ManifestWork %s/%s: %w", s.Name, w.GetName(), err))
			}
		}
		return
	}
	f.setFinalizers(ctx, s, without(s.Finalizers, finalizerHubCleanupPreflight))
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

// unjoin removes the spoke's agent: it needs the spoke's API server to
// answer. The tests join several Spokes through one spoke API server, so
// it removes this agent's hub credential rather than the shared agent
// namespace upstream deletes.
func (f *Fleet) unjoin(ctx context.Context, s *spoke) {
	_, c, err := f.spokeKubeconfig(ctx, s)
	if err != nil {
		f.setStatus(ctx, s, phaseDeleting, cleanupCondition(true, "failed to unjoin spoke cluster: "+err.Error()))
		return
	}
	f.hub.StopAgent(s.Name)
	err = c.CoreV1().Secrets(harness.AgentNamespace).Delete(ctx, "hub-kubeconfig-"+s.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		f.setStatus(ctx, s, phaseDeleting, cleanupCondition(true, "failed to unjoin spoke cluster: "+err.Error()))
		return
	}
	f.setFinalizers(ctx, s, without(s.Finalizers, finalizerSpokeCleanup))
}

func (f *Fleet) hubCleanup(ctx context.Context, s *spoke) {
	f.hub.StopAgent(s.Name)
	err := f.kube.CertificatesV1().CertificateSigningRequests().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: clusterNameLabel + "=" + s.Name})
	if err != nil {
		f.fail(ctx, fmt.Errorf("deleting the CSRs of %s: %w", s.Name, err))
		return
	}
	if err := f.dyn.Resource(managedClusterGVR).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		f.fail(ctx, fmt.Errorf("deleting ManagedCluster %s: %w", s.Name, err))
		return
	}
	if err := f.kube.CoreV1().Namespaces().Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		f.fail(ctx, fmt.Errorf("deleting namespace %s: %w", s.Name, err))
		return
	}
	f.setFinalizers(ctx, s, without(s.Finalizers, finalizerHubCleanup))
}

// dropManifestWorks deletes every ManifestWork of the cluster and strips
// their finalizers (the spoke's work agent, which would, is gone).
func (f *Fleet) dropManifestWorks(ctx context.Context, ns string) error {
	ri := f.dyn.Resource(manifestWorkGVR).Namespace(ns)
	works, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing ManifestWorks in %s: %w", ns, err)
	}
	for _, w := range works.Items {
		if err := ri.Delete(ctx, w.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ManifestWork %s/%s: %w", ns, w.GetName(), err)
		}
		if len(w.GetFinalizers()) > 0 {
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": nil}})
			if _, err := ri.Patch(ctx, w.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("removing the finalizers of ManifestWork %s/%s: %w", ns, w.GetName(), err)
			}
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
