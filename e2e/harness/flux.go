package harness

import (
	"context"
	"fmt"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// HelmReleaseResource is Flux's HelmRelease, served by the CRD
// InstallHelmReleaseCRD installs.
var HelmReleaseResource = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}

// helmReleaseCRD serves Flux's HelmRelease at v2 with a status subresource.
// Its schema keeps every field: the test bed checks what the plugin sends
// and applies, not Flux's validation.
const helmReleaseCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: helmreleases.helm.toolkit.fluxcd.io
spec:
  group: helm.toolkit.fluxcd.io
  names: {kind: HelmRelease, listKind: HelmReleaseList, plural: helmreleases, singular: helmrelease, shortNames: [hr]}
  scope: Namespaced
  versions:
  - name: v2
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// InstallHelmReleaseCRD serves Flux's HelmRelease on the cluster.
func (c *Cluster) InstallHelmReleaseCRD(ctx context.Context) error {
	if err := c.ApplyYAML(ctx, helmReleaseCRD); err != nil {
		return err
	}
	return c.waitEstablished(ctx, "helmreleases.helm.toolkit.fluxcd.io")
}

// FluxHelmController plays Flux's helm-controller for the HelmReleases of
// one namespace, each of a release of that namespace of the same name: for
// each generation it has not observed, it upgrades the release with the
// chart the release runs and the HelmRelease's spec.values as the whole of
// its values (waiting for its hooks, which SpokesJob plays), then writes
// status.observedGeneration and a Ready condition, as helm-controller does.
type FluxHelmController struct {
	cluster   *Cluster
	namespace string
	errs      chan error
}

// StartFluxHelmController runs the stand-in until ctx ends. Errors reports
// what it could not do.
func (c *Cluster) StartFluxHelmController(ctx context.Context, namespace string) *FluxHelmController {
	f := &FluxHelmController{cluster: c, namespace: namespace, errs: make(chan error, 16)}
	go func() {
		_ = wait.PollUntilContextCancel(ctx, 300*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			l, err := c.Dynamic.Resource(HelmReleaseResource).Namespace(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for i := range l.Items {
				hr := &l.Items[i]
				observed, _, _ := unstructured.NestedInt64(hr.Object, "status", "observedGeneration")
				if observed >= hr.GetGeneration() {
					continue
				}
				if err := f.reconcile(ctx, hr); err != nil {
					select {
					case f.errs <- fmt.Errorf("HelmRelease %s: %w", hr.GetName(), err):
					default:
					}
				}
			}
			return false, nil
		})
	}()
	return f
}

// Errors is what the stand-in could not do, so far.
func (f *FluxHelmController) Errors() []error {
	var out []error
	for {
		select {
		case err := <-f.errs:
			out = append(out, err)
		default:
			return out
		}
	}
}

func (f *FluxHelmController) reconcile(ctx context.Context, hr *unstructured.Unstructured) error {
	values, _, _ := unstructured.NestedMap(hr.Object, "spec", "values")
	last, err := f.cluster.HelmRevision(f.namespace, hr.GetName(), 0)
	if err != nil {
		return err
	}
	cfg, err := f.cluster.Helm(f.namespace)
	if err != nil {
		return err
	}
	u := action.NewUpgrade(cfg)
	u.Namespace, u.ResetValues = f.namespace, true
	u.WaitStrategy, u.Timeout = kube.HookOnlyStrategy, 2*time.Minute
	ready := map[string]any{"type": "Ready", "status": "True", "reason": "UpgradeSucceeded", "message": "Helm upgrade succeeded"}
	if _, err := u.RunWithContext(ctx, hr.GetName(), last.Chart, values); err != nil {
		ready = map[string]any{"type": "Ready", "status": "False", "reason": "UpgradeFailed", "message": err.Error()}
	}
	ready["observedGeneration"] = hr.GetGeneration()
	ready["lastTransitionTime"] = time.Now().UTC().Format(time.RFC3339)
	if err := unstructured.SetNestedField(hr.Object, map[string]any{
		"observedGeneration": hr.GetGeneration(),
		"conditions":         []any{ready},
	}, "status"); err != nil {
		return err
	}
	_, err = f.cluster.Dynamic.Resource(HelmReleaseResource).Namespace(f.namespace).UpdateStatus(ctx, hr, metav1.UpdateOptions{})
	return err
}
