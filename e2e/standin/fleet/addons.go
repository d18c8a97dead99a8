package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// enableAddOns is upstream's handleSpokeAddons on the hub: a
// ManagedClusterAddOn for each listed add-on (what `clusteradm addon
// enable` creates), those no longer listed disabled. It returns the
// enabled add-ons.
func (f *Fleet) enableAddOns(ctx context.Context, s *spoke) ([]string, error) {
	var want []string
	for _, a := range s.Spec.AddOns {
		want = append(want, a.ConfigName)
	}
	for _, name := range s.Status.EnabledAddons {
		if !slices.Contains(want, name) {
			if err := f.disableAddOn(ctx, s.Name, name); err != nil {
				return nil, err
			}
		}
	}
	for _, name := range want {
		mca := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": addOnGVR.GroupVersion().String(), "kind": managedClusterAddOnKind,
			"metadata": map[string]any{"name": name, "namespace": s.Name},
			"spec":     map[string]any{},
		}}
		// OCM's add-on manager renders the add-on's template into its work.
		_, err := f.dyn.Resource(addOnGVR).Namespace(s.Name).Create(ctx, mca, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("enabling add-on %s: %w", name, err)
		}
	}
	return want, nil
}

// disableAddOn deletes the add-on's ManagedClusterAddOn, as `clusteradm
// addon disable` does; its works, which it owns, are the garbage
// collector's to delete.
func (f *Fleet) disableAddOn(ctx context.Context, cluster, name string) error {
	err := f.dyn.Resource(addOnGVR).Namespace(cluster).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("disabling add-on %s of %s: %w", name, cluster, err)
	}
	return nil
}

// stripFinalizers removes a ManifestWork's finalizers: once the spoke's
// work agent is gone nothing else would.
func (f *Fleet) stripFinalizers(ctx context.Context, w *unstructured.Unstructured) error {
	if len(w.GetFinalizers()) == 0 {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": nil}})
	_, err := f.dyn.Resource(manifestWorkGVR).Namespace(w.GetNamespace()).Patch(ctx, w.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the finalizers of ManifestWork %s/%s: %w", w.GetNamespace(), w.GetName(), err)
	}
	return nil
}

func createNamespace(ctx context.Context, c kubernetes.Interface, name string) error {
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s on the spoke: %w", name, err)
	}
	return nil
}
