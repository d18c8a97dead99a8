package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
)

// reconcileDelete takes a deleted Spoke through the upstream steps, one
// finalizer at a time: hub pre-flight, unjoin on the spoke, hub cleanup.
func (f *Fleet) reconcileDelete(ctx context.Context, s *fleetconfig.Spoke) {
	if s.Status.Phase != fleetconfig.SpokePhaseDeleting {
		f.setStatus(ctx, s, fleetconfig.SpokePhaseDeleting, cleanupCondition(false, ""))
		return
	}
	has := func(fin string) bool { return slices.Contains(s.Finalizers, fin) }
	if s.Annotations[fleetconfig.ForceDeleteAnnotation] == "true" && (has(fleetconfig.FinalizerHubCleanupPreflight) || has(fleetconfig.FinalizerSpokeCleanup)) {
		// The escape hatch: the hub stops waiting for the spoke.
		if err := f.dropManifestWorks(ctx, s.Name); err != nil {
			f.fail(err)
			return
		}
		f.setFinalizers(ctx, s, without(s.Finalizers, fleetconfig.FinalizerHubCleanupPreflight, fleetconfig.FinalizerSpokeCleanup))
		return
	}
	switch {
	case has(fleetconfig.FinalizerHubCleanupPreflight):
		f.hubPreflight(ctx, s)
	case has(fleetconfig.FinalizerSpokeCleanup):
		f.unjoin(ctx, s)
	case has(fleetconfig.FinalizerHubCleanup):
		f.hubCleanup(ctx, s)
	}
}

func without(list []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return slices.Contains(drop, s) })
}

func (f *Fleet) hubPreflight(ctx context.Context, s *fleetconfig.Spoke) {
	mc, _, err := f.managedCluster(ctx, s.Name)
	if apierrors.IsNotFound(err) {
		f.setFinalizers(ctx, s, without(s.Finalizers, fleetconfig.FinalizerHubCleanupPreflight, fleetconfig.FinalizerHubCleanup))
		return
	}
	if err != nil {
		return
	}
	if s.Spec.CleanupConfig.ForceClusterDrain && !f.addTaint(ctx, mc, TaintWorkloadCleanup) {
		return
	}
	works, err := f.manifestWorks(ctx, s.Name)
	if err != nil {
		f.fail(err)
		return
	}
	for _, w := range works {
		if !w.IsAddOnWork() {
			f.setStatus(ctx, s, fleetconfig.SpokePhaseDeleting, cleanupCondition(true, BlockingMessage(s.Name)))
			return
		}
	}
	if !f.addTaint(ctx, mc, TaintTerminating) {
		return
	}
	f.setFinalizers(ctx, s, without(s.Finalizers, fleetconfig.FinalizerHubCleanupPreflight))
}

// addTaint adds a NoSelect taint; it says whether the taint is there.
func (f *Fleet) addTaint(ctx context.Context, mc *ocm.ManagedCluster, key string) bool {
	if taintIndex(mc, key) >= 0 {
		return true
	}
	now := metav1.Now()
	if err := f.patchTaints(ctx, mc, append(slices.Clone(mc.Spec.Taints), ocm.Taint{Key: key, Effect: ocm.TaintEffectNoSelect, TimeAdded: &now})); err != nil {
		f.fail(err)
	}
	return false
}

// unjoin removes the klusterlet from the spoke: it needs the spoke to answer.
func (f *Fleet) unjoin(ctx context.Context, s *fleetconfig.Spoke) {
	c, _, err := f.spokeClient(ctx, s)
	if err != nil {
		f.setStatus(ctx, s, fleetconfig.SpokePhaseDeleting, cleanupCondition(true, "failed to unjoin spoke cluster: "+err.Error()))
		return
	}
	namespaces := []string{AgentNamespace}
	if s.Spec.CleanupConfig.PurgeKlusterletOperator {
		namespaces = append(namespaces, OperatorNamespace)
	}
	for _, ns := range namespaces {
		if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			f.setStatus(ctx, s, fleetconfig.SpokePhaseDeleting, cleanupCondition(true, "failed to unjoin spoke cluster: "+err.Error()))
			return
		}
	}
	f.setFinalizers(ctx, s, without(s.Finalizers, fleetconfig.FinalizerSpokeCleanup))
}

func (f *Fleet) hubCleanup(ctx context.Context, s *fleetconfig.Spoke) {
	if err := f.mcs().Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		f.fail(err)
		return
	}
	if err := f.kube.CoreV1().Namespaces().Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		f.fail(err)
		return
	}
	f.setFinalizers(ctx, s, without(s.Finalizers, fleetconfig.FinalizerHubCleanup))
}

func (f *Fleet) manifestWorks(ctx context.Context, ns string) ([]ocm.ManifestWork, error) {
	l, err := f.dyn.Resource(ocm.ManifestWorkResource).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ManifestWorks in %s: %w", ns, err)
	}
	out := make([]ocm.ManifestWork, len(l.Items))
	for i := range l.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(l.Items[i].Object, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// dropManifestWorks deletes every ManifestWork of the cluster and strips
// their finalizers (the spoke's work agent, which would, is gone).
func (f *Fleet) dropManifestWorks(ctx context.Context, ns string) error {
	works, err := f.manifestWorks(ctx, ns)
	if err != nil {
		return err
	}
	ri := f.dyn.Resource(ocm.ManifestWorkResource).Namespace(ns)
	for _, w := range works {
		if err := ri.Delete(ctx, w.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if len(w.Finalizers) > 0 {
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": nil}})
			if _, err := ri.Patch(ctx, w.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}
