package spoke

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/cli"
)

// secretName is the kubeconfig Secret kubectl spoke writes for a spoke:
// NAME-kubeconfig.
func secretName(spoke string) string { return spoke + "-kubeconfig" }

// secretWrite is a kubeconfig to store under Key in the secret Name of the
// release namespace. Existing is the secret as read before (nil: there was
// none): the write is then an update carrying its resourceVersion, else a
// create, so a secret someone else created or changed in between is never
// overwritten.
type secretWrite struct {
	Namespace string
	Name      string
	Key       string
	Data      []byte
	Existing  *corev1.Secret
}

// ManagedByLabel marks the Secrets kubectl spoke creates. The admission
// policy beside rbac.yaml lets a holder of the opt-in create role create
// only Opaque Secrets with exactly this label, so that role cannot mint a
// token or plant a Secret another component (Helm, the FleetConfig
// controller) would take for its own.
var ManagedByLabel = map[string]string{"app.kubernetes.io/managed-by": FieldManager}

// object is the secret as written: the one read with the key replaced, or a
// new one holding only the key, with ManagedByLabel.
func (w secretWrite) object() *corev1.Secret {
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

// writeSecret creates the secret or updates the one read, never logging its
// body.
func (h *HubClient) writeSecret(ctx context.Context, w secretWrite, dryRun cli.DryRun) error {
	secrets := h.Kube.CoreV1().Secrets(w.Namespace)
	var err error
	if w.Existing == nil {
		_, err = secrets.Create(cli.HideBodies(ctx), w.object(), metav1.CreateOptions{FieldManager: FieldManager, DryRun: cli.DryRunOption(dryRun)})
	} else {
		_, err = secrets.Update(cli.HideBodies(ctx), w.object(), metav1.UpdateOptions{FieldManager: FieldManager, DryRun: cli.DryRunOption(dryRun)})
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("secret %s/%s was created or changed by someone else while this command ran; nothing was changed: run the same command again", w.Namespace, w.Name)
	}
	if err != nil {
		return fmt.Errorf("writing secret %s/%s: %w; nothing else was changed", w.Namespace, w.Name, err)
	}
	return nil
}
