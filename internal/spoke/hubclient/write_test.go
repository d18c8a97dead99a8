package hubclient

import (
	"encoding/json"
	"errors"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/cli"
)

var helmReleaseGVR = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}

func spokeObject(name, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(fleetconfig.SpokeResource.GroupVersion().String())
	u.SetKind("Spoke")
	u.SetNamespace("mural-system")
	u.SetName(name)
	u.SetResourceVersion(rv)
	u.SetUID(types.UID("uid-" + name))
	return u
}

// newClient is a hub holding Spoke s1 and no Secret, with the fakes that
// record every request.
func newClient() (*Client, *dynamicfake.FakeDynamicClient, *kubefake.Clientset) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		fleetconfig.SpokeResource: "SpokeList", helmReleaseGVR: "HelmReleaseList",
	}, spokeObject("s1", "7"))
	kube := kubefake.NewClientset()
	return NewForClients(dyn, kube, "mural-system"), dyn, kube
}

// A write without its guard is a bug: it is refused before any request.
func TestUnguardedWritesAreRefusedBeforeAnyRequest(t *testing.T) {
	c, dyn, kube := newClient()
	ctx := t.Context()
	helmRelease := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "fleet"}}}
	for name, err := range map[string]error{
		"a JSON patch without a test":             c.PatchSpoke(ctx, "mural-system", "s1", []api.PatchOp{{Op: "add", Path: "/metadata/annotations", Value: map[string]any{}}}, cli.DryRunNone),
		"a merge patch without a resourceVersion": c.SetSpokeFields(ctx, "s1", "", map[string]any{"logVerbosity": 3}, cli.DryRunNone),
		"a delete without a UID":                  c.DeleteSpoke(ctx, "mural-system", "s1", "", cli.DryRunNone),
		"an update of a Secret read without a resourceVersion": c.WriteSecret(ctx,
			SecretWrite{Namespace: "mural-system", Name: "s1-kubeconfig", Key: "value", Existing: &corev1.Secret{}}, cli.DryRunNone),
		"an apply without a resourceVersion":    second(c.ApplyHelmRelease(ctx, helmReleaseGVR, "mural-system", helmRelease, cli.DryRunNone)),
		"an approval without a resourceVersion": c.UpdateCSRApproval(ctx, &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr-1"}}),
	} {
		assert.Check(t, errors.Is(err, errUnguarded), "%s: %v", name, err)
	}
	assert.Check(t, is.Len(dyn.Actions(), 0))
	assert.Check(t, is.Len(kube.Actions(), 0))
}

func second[T any](_ T, err error) error { return err }

// Each guarded write sends its guard: what the API server checks so that
// a racing writer's change is never overwritten.
func TestGuardedWritesSendTheirGuard(t *testing.T) {
	c, dyn, kube := newClient()
	ctx := t.Context()

	ops := []api.PatchOp{{Op: "test", Path: "/metadata/uid", Value: "uid-s1"}, {Op: "add", Path: "/metadata/labels", Value: map[string]any{"a": "b"}}}
	assert.NilError(t, c.PatchSpoke(ctx, "mural-system", "s1", ops, cli.DryRunServer))
	patch := dyn.Actions()[0].(k8stesting.PatchAction)
	var sent []api.PatchOp
	assert.NilError(t, json.Unmarshal(patch.GetPatch(), &sent))
	assert.Check(t, is.DeepEqual(sent, ops))

	assert.NilError(t, c.SetSpokeFields(ctx, "s1", "7", map[string]any{"logVerbosity": 3}, cli.DryRunNone))
	var merge map[string]any
	assert.NilError(t, json.Unmarshal(dyn.Actions()[1].(k8stesting.PatchAction).GetPatch(), &merge))
	assert.Check(t, is.DeepEqual(merge["metadata"], map[string]any{"resourceVersion": "7"}))

	assert.NilError(t, c.DeleteSpoke(ctx, "mural-system", "s1", "uid-s1", cli.DryRunNone))
	del := dyn.Actions()[2].(k8stesting.DeleteAction)
	assert.Assert(t, del.GetDeleteOptions().Preconditions != nil)
	assert.Check(t, is.Equal(*del.GetDeleteOptions().Preconditions.UID, types.UID("uid-s1")))

	existing := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mural-system", Name: "s1-kubeconfig", ResourceVersion: "3"}}
	assert.NilError(t, kube.Tracker().Add(existing))
	assert.NilError(t, c.WriteSecret(ctx, SecretWrite{Namespace: "mural-system", Name: "s1-kubeconfig", Key: "value", Data: []byte("x"), Existing: existing}, cli.DryRunNone))
	update := kube.Actions()[0].(k8stesting.UpdateAction)
	assert.Check(t, is.Equal(update.GetObject().(*corev1.Secret).ResourceVersion, "3"))
}

// Create-only: a Spoke or Secret that exists is never overwritten by a
// create, and the error says someone else made it.
func TestCreatesNeverOverwrite(t *testing.T) {
	c, _, _ := newClient()
	ctx := t.Context()
	err := c.CreateSpoke(ctx, &fleetconfig.Spoke{ObjectMeta: metav1.ObjectMeta{Namespace: "mural-system", Name: "s1"}}, cli.DryRunNone)
	assert.ErrorContains(t, err, "spoke mural-system/s1 was created by someone else while this command ran")

	w := SecretWrite{Namespace: "mural-system", Name: "s2-kubeconfig", Key: "value", Data: []byte("x")}
	assert.NilError(t, c.WriteSecret(ctx, w, cli.DryRunNone))
	err = c.WriteSecret(ctx, w, cli.DryRunNone)
	assert.ErrorContains(t, err, "secret mural-system/s2-kubeconfig was created or changed by someone else")
	s, err := c.Secret(ctx, "mural-system", "s2-kubeconfig")
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(s.Labels, ManagedByLabel))
}
