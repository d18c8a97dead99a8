package fleet

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// InstallRelease creates what the fleet's Helm release installs on a hub
// whose CRDs are in place: the release namespace and a Hub named "hub"
// (with the cluster manager the chart renders), marked as owned by the
// Helm release.
func InstallRelease(ctx context.Context, hub *rest.Config, namespace, release string) error {
	kube, err := kubernetes.NewForConfig(hub)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(hub)
	if err != nil {
		return err
	}
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	h := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": hubGVR.GroupVersion().String(), "kind": "Hub",
		"metadata": map[string]any{
			"name": "hub", "namespace": namespace,
			"labels":      map[string]any{"app.kubernetes.io/managed-by": "Helm"},
			"annotations": map[string]any{"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": namespace},
		},
		"spec": map[string]any{"kubeconfig": map[string]any{"inCluster": true}, "clusterManager": map[string]any{}},
	}}
	// An Established CRD can take a moment more to be served.
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(hubGVR).Namespace(namespace).Create(ctx, h, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil || apierrors.IsAlreadyExists(err), ignoreAlreadyExists(err)
	})
}

func ignoreAlreadyExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
