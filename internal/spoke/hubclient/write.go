package hubclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
)

// The guards. Every write below is one of:
//   - a create, which fails on an object that exists (CreateSpoke, a new
//     Secret in WriteSecret, CreateToken);
//   - an update or apply carrying the resourceVersion read (WriteSecret of
//     an existing Secret, SetSpokeFields, ApplyHelmRelease,
//     UpdateCSRApproval);
//   - a JSON patch whose test operations pin what was read (PatchSpoke,
//     AcceptCluster): errUnguarded refuses one without any;
//   - a delete with the UID read as precondition (DeleteSpoke).
// A racing writer's change makes the write fail, and the command says to
// run it again; it is never overwritten.

// errUnguarded is a write without its guard: a bug, refused before it is
// sent.
var errUnguarded = errors.New("refusing an unguarded write (no test operation or resourceVersion): this is a bug in kubectl spoke")

// CreateSpoke creates a Spoke; one that exists already is not touched.
func (c *Client) CreateSpoke(ctx context.Context, s *fleetconfig.Spoke, dryRun cli.DryRun) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		return err
	}
	_, err = c.resource(fleetconfig.SpokeResource, s.Namespace).Create(ctx, &unstructured.Unstructured{Object: obj},
		metav1.CreateOptions{FieldManager: FieldManager, DryRun: cli.DryRunOption(dryRun)})
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("spoke %s/%s was created by someone else while this command ran; it was not changed", s.Namespace, s.Name)
	}
	if err != nil {
		return fmt.Errorf("creating Spoke %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// PatchSpoke sends a JSON patch, guarded by its own test operations, to
// the Spoke name of namespace ns. A failed test comes back as the API's
// Invalid error.
func (c *Client) PatchSpoke(ctx context.Context, ns, name string, ops []api.PatchOp, dryRun cli.DryRun) error {
	return patchJSON(ctx, c.resource(fleetconfig.SpokeResource, ns), name, ops, dryRun)
}

// patchJSON sends a JSON patch that tests before it changes.
func patchJSON(ctx context.Context, ri dynamic.ResourceInterface, name string, ops []api.PatchOp, dryRun cli.DryRun) error {
	if !guarded(ops) {
		return errUnguarded
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	_, err = ri.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: FieldManager, DryRun: cli.DryRunOption(dryRun)})
	return err
}

// guarded tells whether a JSON patch tests anything before it changes.
func guarded(ops []api.PatchOp) bool {
	for _, op := range ops {
		if op.Op == "test" {
			return true
		}
	}
	return false
}

// SetSpokeFields merge-patches fields of the spec of the Spoke name of the
// release namespace, guarded by the resourceVersion it was read at.
func (c *Client) SetSpokeFields(ctx context.Context, name, resourceVersion string, spec map[string]any, dryRun cli.DryRun) error {
	if resourceVersion == "" {
		return errUnguarded
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": resourceVersion}, "spec": spec})
	if err != nil {
		return err
	}
	_, err = c.resource(fleetconfig.SpokeResource, c.Namespace).Patch(ctx, name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager, DryRun: cli.DryRunOption(dryRun)})
	return err
}

// DeleteSpoke deletes the Spoke name of namespace ns, if it still is the
// one of uid.
func (c *Client) DeleteSpoke(ctx context.Context, ns, name string, uid types.UID, dryRun cli.DryRun) error {
	if uid == "" {
		return errUnguarded
	}
	return c.resource(fleetconfig.SpokeResource, ns).Delete(ctx, name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, DryRun: cli.DryRunOption(dryRun)})
}

// ManagedByLabel marks the Secrets kubectl spoke creates. The admission
// policy beside rbac.yaml lets a holder of the opt-in create role create
// only Opaque Secrets with exactly this label, so that role cannot mint a
// token or plant a Secret another component (Helm, the FleetConfig
// controller) would take for its own.
var ManagedByLabel = map[string]string{"app.kubernetes.io/managed-by": FieldManager}

// SecretWrite is a kubeconfig to store under Key in the Secret Name of
// Namespace. Existing is the Secret as read before (nil: there was none):
// the write is then an update carrying its resourceVersion, else a create,
// so a Secret someone else created or changed in between is never
// overwritten.
type SecretWrite struct {
	Namespace string
	Name      string
	Key       string
	Data      []byte
	Existing  *corev1.Secret
}

// Object is the Secret as written: the one read with the key replaced, or
// a new one holding only the key, with ManagedByLabel.
func (w SecretWrite) Object() *corev1.Secret {
	if w.Existing != nil {
		s := w.Existing.DeepCopy()
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[w.Key] = w.Data
		return s
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: maps.Clone(ManagedByLabel)},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{w.Key: w.Data},
	}
}

// WriteSecret creates the Secret or updates the one read, never logging its
// body.
func (c *Client) WriteSecret(ctx context.Context, w SecretWrite, dryRun cli.DryRun) error {
	secrets := c.kube.CoreV1().Secrets(w.Namespace)
	var err error
	if w.Existing == nil {
		_, err = secrets.Create(cli.HideBodies(ctx), w.Object(), metav1.CreateOptions{FieldManager: FieldManager, DryRun: cli.DryRunOption(dryRun)})
	} else {
		if w.Existing.ResourceVersion == "" {
			return errUnguarded
		}
		_, err = secrets.Update(cli.HideBodies(ctx), w.Object(), metav1.UpdateOptions{FieldManager: FieldManager, DryRun: cli.DryRunOption(dryRun)})
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("secret %s/%s was created or changed by someone else while this command ran; nothing was changed: run the same command again", w.Namespace, w.Name)
	}
	if err != nil {
		return fmt.Errorf("writing secret %s/%s: %w; nothing else was changed", w.Namespace, w.Name, err)
	}
	return nil
}

// ApplyHelmRelease server-side applies obj, a Flux HelmRelease of resource
// gvr in namespace ns, taking its fields from whoever applied them before.
// obj carries the resourceVersion it was compared at: one changed since is
// refused. It returns the generation the apply made.
func (c *Client) ApplyHelmRelease(ctx context.Context, gvr schema.GroupVersionResource, ns string, obj *unstructured.Unstructured, dryRun cli.DryRun) (int64, error) {
	if obj.GetResourceVersion() == "" {
		return 0, errUnguarded
	}
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return 0, err
	}
	force := true
	opts := metav1.PatchOptions{FieldManager: FieldManager, Force: &force, DryRun: cli.DryRunOption(dryRun)}
	out, err := c.resource(gvr, ns).Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts)
	if apierrors.IsConflict(err) {
		return 0, fmt.Errorf("HelmRelease %s/%s changed on the hub while this command ran, so it was not applied: run the same command again", ns, obj.GetName())
	}
	if err != nil {
		return 0, fmt.Errorf("applying HelmRelease %s/%s: %w", ns, obj.GetName(), err)
	}
	return out.GetGeneration(), nil
}

// AcceptCluster sets hubAcceptsClient on the ManagedCluster name, guarded
// by the resourceVersion it read; one accepted meanwhile is left as it is,
// one changed meanwhile is read again.
func (c *Client) AcceptCluster(ctx context.Context, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc, err := c.ManagedCluster(ctx, name)
		if err != nil {
			return err
		}
		if mc == nil {
			return fmt.Errorf("ManagedCluster %s was deleted while it was being accepted", name)
		}
		if mc.Spec.HubAcceptsClient {
			return nil
		}
		err = patchJSON(ctx, c.resource(ocm.ManagedClusterResource, ""), name, []api.PatchOp{
			{Op: "test", Path: "/metadata/resourceVersion", Value: mc.ResourceVersion},
			{Op: "add", Path: "/spec/hubAcceptsClient", Value: true},
		}, cli.DryRunNone)
		if apierrors.IsInvalid(err) {
			// The test failed: the cluster changed since it was read.
			return apierrors.NewConflict(ocm.ManagedClusterResource.GroupResource(), name, err)
		}
		if err != nil {
			return fmt.Errorf("accepting ManagedCluster %s: %w", name, err)
		}
		return nil
	})
}

// UpdateCSRApproval writes csr's conditions, as read with its
// resourceVersion, to its approval subresource.
func (c *Client) UpdateCSRApproval(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error {
	if csr.ResourceVersion == "" {
		return errUnguarded
	}
	_, err := c.kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{FieldManager: FieldManager})
	return err
}

// CreateToken mints a token of the ServiceAccount ns/name that expires
// after seconds. Request logs never show it.
func (c *Client) CreateToken(ctx context.Context, ns, name string, seconds int64) (*authenticationv1.TokenRequest, error) {
	return c.kube.CoreV1().ServiceAccounts(ns).CreateToken(cli.HideBodies(ctx), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
}
