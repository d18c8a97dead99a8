//go:build e2e

package bench

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/spokekit/spokekit/e2e/harness"
)

const addNamespace = "fleet-add"

var (
	hubsGVR   = schema.GroupVersionResource{Group: "fleetconfig.open-cluster-management.io", Version: "v1beta1", Resource: "hubs"}
	spokesGVR = schema.GroupVersionResource{Group: "fleetconfig.open-cluster-management.io", Version: "v1beta1", Resource: "spokes"}
)

// BenchmarkSpokeAdd compares `kubectl spoke add NAME --apply` (every check
// it makes of the kubeconfig, the names and the user's permissions, then
// the Secret and the Spoke written) with `kubectl create secret` of the
// same kubeconfig, the one write a user would otherwise start from. The
// hub serves the FleetConfig and OCM CRDs with no controller, one Hub, and
// is also the spoke the kubeconfig names. Between runs the Spoke and the
// Secret are deleted, outside both windows. The access and rules reviews
// the add sends are counted from apiserver_request_total.
func BenchmarkSpokeAdd(b *testing.B) {
	hub, err := env.StartCluster(ctx(b, 10*time.Minute), "bench-add-hub")
	assert.NilError(b, err)
	assert.NilError(b, installAddHub(b, hub))
	c := hub.For(b.TempDir())
	kubectl := filepath.Join(env.Tools.Bin, "kubectl")
	const name = "bench-spoke"
	secret := name + "-kubeconfig"
	cleanup := func() {
		err := hub.Dynamic.Resource(spokesGVR).Namespace(addNamespace).Delete(ctx(b, time.Minute), name, metav1.DeleteOptions{})
		if !apierrors.IsNotFound(err) {
			assert.NilError(b, err)
		}
		err = hub.Kube.CoreV1().Secrets(addNamespace).Delete(ctx(b, time.Minute), secret, metav1.DeleteOptions{})
		if !apierrors.IsNotFound(err) {
			assert.NilError(b, err)
		}
	}
	plugin := func() Usage {
		defer cleanup()
		return measure(b, c, kubectl, "spoke", "add", name, "-n", addNamespace, "--spoke-kubeconfig", hub.Kubeconfig, "--apply")
	}
	create := func() Usage {
		defer cleanup()
		return measure(b, c, kubectl, "create", "secret", "generic", secret, "-n", addNamespace, "--from-file=kubeconfig="+hub.Kubeconfig)
	}
	plugin()
	create()
	reviews := func(verb, resource string) bool {
		return verb == "POST" && (resource == "selfsubjectaccessreviews" || resource == "selfsubjectrulesreviews")
	}
	before := requests(b, hub, reviews)
	plugin()
	sent := requests(b, hub, reviews) - before
	var ours, theirs []Usage
	alternate(pairs, func(int) { ours = append(ours, plugin()) }, func(int) { theirs = append(theirs, create()) })
	add(b, "spoke add --apply / kubectl create secret of the same kubeconfig", "s", seconds(ours), seconds(theirs), "≤ the secret's + 1 s")
	add(b, "spoke add --apply, access and rules reviews sent (hub and spoke)", "requests", []float64{sent}, nil, "—")
}

// installAddHub gives the hub its CRDs, the namespace and a Hub.
func installAddHub(b *testing.B, hub *harness.Cluster) error {
	b.Helper()
	if err := harness.InstallHubCRDs(ctx(b, 5*time.Minute), hub); err != nil {
		return err
	}
	if _, err := hub.Kube.CoreV1().Namespaces().Create(ctx(b, time.Minute), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: addNamespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", addNamespace, err)
	}
	h := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": hubsGVR.GroupVersion().String(), "kind": "Hub",
		"metadata": map[string]any{"name": "hub", "namespace": addNamespace},
		"spec":     map[string]any{"kubeconfig": map[string]any{"inCluster": true}},
	}}
	if _, err := hub.Dynamic.Resource(hubsGVR).Namespace(addNamespace).Create(ctx(b, time.Minute), h, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the Hub: %w", err)
	}
	return nil
}
