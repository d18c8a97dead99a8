package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// InstallHubCRDs installs what a fleet hub serves: the CRDs of the OCM
// release the test bed runs and the FleetConfig Spoke and Hub CRDs (upstream
// when ../shared/crds exists, otherwise the project's generated ones; it
// says which).
func InstallHubCRDs(ctx context.Context, c *Cluster) error {
	ocm, err := ModuleGlob(ctx, OCMComponents, OCMHubCRDs)
	if err != nil {
		return err
	}
	fc, source, err := FleetConfigCRDs()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "harness: %s: the %s Spoke and Hub CRDs from %s\n", c.Name, source, filepath.Dir(fc[0]))
	if err := c.InstallCRDs(ctx, append(ocm, fc...)...); err != nil {
		return fmt.Errorf("installing the hub CRDs: %w", err)
	}
	return nil
}

// CreateUnacceptedSpokes creates, 16 at a time, a Spoke in namespace ns for
// each name (joining the Hub "hub" of hubNamespace) and a ManagedCluster the
// hub does not accept: the registration controller then leaves it alone (no
// namespace, no RBAC), so thousands cost no more than their objects. Those
// that exist are kept, so a second call adds only what is missing.
// addOns are the add-ons each Spoke lists (the agent's in FleetConfig's
// addon mode, whose webhook requires it).
func CreateUnacceptedSpokes(ctx context.Context, c *Cluster, ns, hubNamespace string, names []string, addOns []any) error {
	spokes := schema.GroupVersionResource{Group: "fleetconfig.open-cluster-management.io", Version: "v1beta1", Resource: "spokes"}
	clusters := schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1", Resource: "managedclusters"}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, name := range names {
		g.Go(func() error {
			s := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": spokes.GroupVersion().String(), "kind": "Spoke",
				"metadata": map[string]any{"name": name, "namespace": ns},
				"spec": map[string]any{
					"hubRef":     map[string]any{"name": "hub", "namespace": hubNamespace},
					"kubeconfig": map[string]any{"secretReference": map[string]any{"name": name + "-kubeconfig"}},
				},
			}}
			if addOns != nil {
				s.Object["spec"].(map[string]any)["addOns"] = addOns
			}
			if _, err := c.Dynamic.Resource(spokes).Namespace(ns).Create(gctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating Spoke %s/%s: %w", ns, name, err)
			}
			mc := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": clusters.GroupVersion().String(), "kind": "ManagedCluster",
				"metadata": map[string]any{"name": name},
				"spec":     map[string]any{"hubAcceptsClient": false},
			}}
			if _, err := c.Dynamic.Resource(clusters).Create(gctx, mc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating ManagedCluster %s: %w", name, err)
			}
			return nil
		})
	}
	return g.Wait()
}
