package spoke

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
)

// What kubectl spoke wrote for a spoke, recorded in annotations on its
// Spoke whenever it writes the kubeconfig Secret: the Secret's name, the
// credential's kind and expiry (so status and health need not read the
// Secret), and the kube-system namespace UID of the cluster the kubeconfig
// reached (so a later command can tell that cluster again, and add can tell
// a cluster the hub already has under another name).
const (
	recordPrefix = "spoke.spokekit.io/"
	// RecordSecretAnnotation is the kubeconfig Secret kubectl spoke wrote.
	RecordSecretAnnotation = recordPrefix + "kubeconfig-secret"
	// RecordCredentialAnnotation is the kind of credential it holds.
	RecordCredentialAnnotation = recordPrefix + "credential-kind"
	// RecordExpiresAnnotation is when that credential expires (RFC 3339,
	// or "never").
	RecordExpiresAnnotation = recordPrefix + "credential-expires"
	// RecordClusterUIDAnnotation is the UID of the cluster's kube-system
	// namespace when the kubeconfig was stored.
	RecordClusterUIDAnnotation = recordPrefix + "kube-system-uid"
)

// recordKeys are the record's annotations, in the order they are written.
var recordKeys = []string{RecordSecretAnnotation, RecordCredentialAnnotation, RecordExpiresAnnotation, RecordClusterUIDAnnotation}

// Record is what kubectl spoke recorded on a Spoke. The zero Record is none.
type Record struct {
	Secret     string
	Credential kubeconfig.Credential
	ClusterUID string
}

// credentialKinds are the kinds kubeconfig.Credential names.
var credentialKinds = []string{"client certificate", "token", "basic auth"}

// readRecord parses the record on s. Anyone who may patch the Spoke may
// have written it, so each value is checked for its form; a record that
// is not well formed is an error that names the annotation.
func readRecord(s *fleetconfig.Spoke) (Record, error) {
	a := s.Annotations
	var r Record
	if v, ok := a[RecordSecretAnnotation]; ok {
		if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
			return Record{}, recordError(s, RecordSecretAnnotation, "is not a secret name")
		}
		r.Secret = v
	}
	if v, ok := a[RecordCredentialAnnotation]; ok {
		if !slices.Contains(credentialKinds, v) {
			return Record{}, recordError(s, RecordCredentialAnnotation, "is not a credential kind kubectl spoke writes")
		}
		r.Credential.Kind = v
	}
	if v, ok := a[RecordExpiresAnnotation]; ok && v != "never" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return Record{}, recordError(s, RecordExpiresAnnotation, "is neither an RFC 3339 time nor never")
		}
		r.Credential.Expires = &t
	}
	if v, ok := a[RecordClusterUIDAnnotation]; ok {
		// Kubernetes makes UUIDs; letters, digits and dashes are all a UID
		// may need to be printed safely.
		if v == "" || len(v) > 64 || strings.Trim(v, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-") != "" {
			return Record{}, recordError(s, RecordClusterUIDAnnotation, "is not a UID")
		}
		r.ClusterUID = v
	}
	return r, nil
}

func recordError(s *fleetconfig.Spoke, key, what string) error {
	return exitcode.RefusedErrorf("spoke %s's annotation %s %s: kubectl spoke did not write it; check who changed the Spoke (kubectl get spoke %s -o yaml)", s.Name, key, what, s.Name)
}

// annotations is the record as the Spoke's annotations; a value not known
// (no UID) is left out.
func (r Record) annotations() map[string]string {
	out := map[string]string{
		RecordSecretAnnotation:     r.Secret,
		RecordCredentialAnnotation: r.Credential.Kind,
		RecordExpiresAnnotation:    r.Credential.ExpiryString(),
	}
	if r.ClusterUID != "" {
		out[RecordClusterUIDAnnotation] = r.ClusterUID
	}
	return out
}

// recordOps writes r onto s, whose annotations were as read: an add of the
// whole map when it has none (a test that it still has none guards it),
// else an add (which replaces) of each key. A UID not known leaves the one
// recorded before untouched.
func recordOps(s *fleetconfig.Spoke, r Record) []api.PatchOp {
	want := r.annotations()
	if len(s.Annotations) == 0 {
		return []api.PatchOp{
			{Op: "test", Path: "/metadata/annotations", Value: api.Absent},
			{Op: "add", Path: "/metadata/annotations", Value: want},
		}
	}
	var ops []api.PatchOp
	for _, k := range recordKeys {
		if v, ok := want[k]; ok {
			ops = append(ops, api.PatchOp{Op: "add", Path: api.AnnotationPath(k), Value: v})
		}
	}
	return ops
}

// recorded says whether s carries r's record already.
func recorded(s *fleetconfig.Spoke, r Record) bool {
	for k, v := range r.annotations() {
		if s.Annotations[k] != v {
			return false
		}
	}
	return true
}

// recordPatch is the JSON patch that records r on s: guarded by s's UID,
// so a Spoke made again under the name is never given another's record.
func recordPatch(s *fleetconfig.Spoke, r Record) []api.PatchOp {
	return append([]api.PatchOp{{Op: "test", Path: "/metadata/uid", Value: s.UID}}, recordOps(s, r)...)
}

// kubeconfigSecretOf says whether secret is named as kubectl spoke names
// the kubeconfig Secrets it writes for spoke: NAME-kubeconfig, or with
// --secret NAME-kubeconfig-SUFFIX.
func kubeconfigSecretOf(spoke, secret string) bool {
	own := secretName(spoke)
	return secret == own || strings.HasPrefix(secret, own+"-")
}

// secretGrantFor is whose kubeconfig a Secret is, for deciding whether a
// grant may be printed for it: Spoke is the spoke's name; NamedBy is the
// Spoke when the Secret's name came from its reference (nil: the command
// made the name, or the user gave it).
type secretGrantFor struct {
	Spoke   string
	NamedBy *fleetconfig.Spoke
}

// grantRefusal says why no grant is printed for secret (nil: one may be).
// A holder of a role that may patch Spokes can point a Spoke at any Secret,
// and a grant printed for it would hand that Secret to whoever runs the
// printed commands. So a grant is printed only for a Secret named as
// kubectl spoke names its own, that no Hub or other Spoke names, and, when
// the name came from a Spoke, that kubectl spoke recorded writing for it.
func (h *HubClient) grantRefusal(ctx context.Context, g secretGrantFor, secret string) error {
	why := ""
	var rec Record
	var recErr error
	if g.NamedBy != nil {
		rec, recErr = readRecord(g.NamedBy)
	}
	switch {
	case !kubeconfigSecretOf(g.Spoke, secret):
		why = fmt.Sprintf("kubectl spoke names the kubeconfig Secrets it writes for spoke %s %s or %s-SUFFIX, and this is neither", g.Spoke, secretName(g.Spoke), secretName(g.Spoke))
	case recErr != nil:
		why = recErr.Error()
	case g.NamedBy != nil && rec.Secret == "":
		why = fmt.Sprintf("kubectl spoke recorded writing no Secret for spoke %s (no annotation %s)", g.Spoke, RecordSecretAnnotation)
	case g.NamedBy != nil && rec.Secret != secret:
		why = fmt.Sprintf("kubectl spoke recorded writing secret %s for spoke %s, not this one (annotation %s)", rec.Secret, g.Spoke, RecordSecretAnnotation)
	default:
		users, err := h.secretUsers(ctx, secret, g.Spoke)
		switch {
		case err != nil:
			why = fmt.Sprintf("whether anything else uses it cannot be checked: %v", err)
		case len(users) > 0:
			why = "it is " + strings.Join(users, " and ")
		}
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("no grant is printed for secret %s/%s: %s. If someone pointed spoke %s at it, find out who (kubectl get spoke %s -n %s --show-managed-fields -o yaml) and point it back; otherwise an administrator who checked what the Secret holds grants it by hand",
		h.Namespace, secret, why, g.Spoke, g.Spoke, h.Namespace)
}
