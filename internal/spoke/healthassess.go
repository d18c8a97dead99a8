package spoke

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
	"github.com/spokekit/spokekit/internal/spoke/health"
	"github.com/spokekit/spokekit/internal/spoke/probe"
)

// addOnState is one ManagedClusterAddOn: its cluster (namespace), name and
// Available condition status.
type addOnState struct {
	Cluster, Name, Available string
}

// healthInput is everything health read, for AssessHealth. Credentials
// and Deep are keyed by healthKey; a key missing from Credentials was not
// read; Deep is nil without --deep.
type healthInput struct {
	Spokes      []fleetconfig.Spoke
	Clusters    []ocm.ManagedCluster
	Leases      map[string]time.Time
	AddOns      []addOnState
	Credentials map[string]health.Credential
	Deep        map[string]*probe.Result
	// OutOfBand adds the ManagedClusters no Spoke registers.
	OutOfBand bool
}

// healthKey names a spoke in healthInput's maps: namespace/name, or the
// ManagedCluster's name for a cluster joined out of band.
func healthKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// AssessHealth judges every spoke (pure): rows in list's order, each with
// the problems that make it unhealthy.
func AssessHealth(in healthInput, now time.Time) []health.Row {
	rows := BuildRows(in.Spokes, in.Clusters)
	if in.OutOfBand {
		rows = append(rows, OutOfBandRows(in.Spokes, in.Clusters)...)
	}
	clusters := make(map[string]*ocm.ManagedCluster, len(in.Clusters))
	for i := range in.Clusters {
		clusters[in.Clusters[i].Name] = &in.Clusters[i]
	}
	addOns := map[string][]addOnState{}
	for _, a := range in.AddOns {
		addOns[a.Cluster] = append(addOns[a.Cluster], a)
	}
	out := make([]health.Row, 0, len(rows))
	for _, r := range rows {
		h := health.Row{
			ReportMeta: api.NewNamespacedReportMeta("SpokeHealth", r.Metadata.Namespace, r.Metadata.Name),
			OutOfBand:  r.OutOfBand, Phase: r.Phase, Joined: r.Joined, Available: r.Available, ManagedCluster: r.ManagedCluster,
		}
		key := healthKey(r.Metadata.Namespace, r.Metadata.Name)
		h.Credential = in.Credentials[key]
		if r.OutOfBand {
			h.Phase = PhaseOutOfBand
			h.Credential = health.Credential{State: health.CredentialNone, Detail: "joined out of band: the hub stores no kubeconfig"}
		} else if h.Credential.State == "" {
			h.Credential = health.Credential{State: health.CredentialUnknown}
		}
		h.Deep = in.Deep[key]
		if in.Deep != nil && r.OutOfBand {
			h.Deep = &probe.Result{Skipped: "joined out of band: the hub stores no kubeconfig"}
		}
		if mc := clusters[r.Metadata.Name]; mc != nil && r.ManagedCluster {
			h.KubernetesVersion = mc.Status.Version.Kubernetes
			h.Drained = slices.ContainsFunc(mc.Spec.Taints, func(t ocm.Taint) bool { return t.Key == ocm.DrainTaintKey })
			if t, ok := in.Leases[mc.Name]; ok {
				h.LeaseRenewed = &metav1.Time{Time: t}
			}
			for _, a := range addOns[mc.Name] {
				h.AddOns++
				if a.Available != string(metav1.ConditionTrue) {
					h.AddOnsNotAvailable = append(h.AddOnsNotAvailable, a.Name)
				}
			}
			slices.Sort(h.AddOnsNotAvailable)
		}
		h.Judge(clusters[r.Metadata.Name], now)
		out = append(out, h)
	}
	return out
}

// assessCredential judges the kubeconfig a Spoke's secret holds (pure): sec
// and readErr are the read of that secret (nil, nil: it does not exist).
// The kubeconfig is loaded by the untrusted loader only, and never used here.
func assessCredential(s *fleetconfig.Spoke, sec *corev1.Secret, readErr error, now time.Time) (health.Credential, *kubeconfig.Kubeconfig) {
	ref := s.Spec.Kubeconfig.SecretReference
	switch {
	case ref == nil:
		return health.Credential{State: health.CredentialNone, Detail: "in-cluster credentials"}, nil
	case apierrors.IsForbidden(readErr):
		return health.Credential{State: health.CredentialNotReadable, Detail: "the current user may not read secret " + ref.Name}, nil
	case readErr != nil:
		return health.Credential{State: health.CredentialUnknown, Detail: readErr.Error()}, nil
	case sec == nil:
		if m := missingSecret(s); !m.Purged {
			return health.Credential{State: health.CredentialMissing, Detail: m.Problem}, nil
		}
		return health.Credential{State: health.CredentialPurged, Detail: "the agent on the spoke manages it; cleanupConfig.purgeKubeconfigSecret had the stored kubeconfig deleted"}, nil
	}
	key := ref.KubeconfigKey
	if key == "" {
		key = fleetconfig.DefaultKubeconfigKey
	}
	kc, err := kubeconfig.FromSecretContext(sec, key, s.Spec.Kubeconfig.Context)
	if err != nil {
		state := health.CredentialInvalid
		if exitcode.IsRefused(err) {
			state = health.CredentialRefused
		}
		return health.Credential{State: state, Detail: err.Error()}, nil
	}
	// With no minimum lifetime Credential fails on a credential that
	// expired, which it still describes: that one is judged below.
	c, err := kc.Credential(now, 0)
	if err != nil && c.Expires == nil {
		return health.Credential{State: health.CredentialInvalid, Detail: err.Error()}, kc
	}
	return health.JudgeExpiry(c, now), kc
}

// recordedCredential judges a Spoke's stored credential from what kubectl
// spoke recorded when it wrote the Secret (pure): the Secret, which holds a
// credential as strong as the spoke's admin, is not read. A record that is
// not well formed is refused (a problem); one that names another Secret
// than the Spoke does, or none, tells nothing.
func recordedCredential(s *fleetconfig.Spoke, now time.Time) health.Credential {
	ref := s.Spec.Kubeconfig.SecretReference
	if ref == nil {
		return health.Credential{State: health.CredentialNone, Detail: "in-cluster credentials"}
	}
	if m := missingSecret(s); m.Purged {
		return health.Credential{State: health.CredentialPurged, Detail: "the agent on the spoke manages it; cleanupConfig.purgeKubeconfigSecret had the stored kubeconfig deleted"}
	}
	rec, err := readRecord(s)
	switch {
	case err != nil:
		return health.Credential{State: health.CredentialRefused, Detail: err.Error()}
	case rec.Secret == "" || rec.Credential.Kind == "":
		return health.Credential{State: health.CredentialUnknown, Detail: fmt.Sprintf("not recorded: kubectl spoke recorded no credential for secret %s on the Spoke; run kubectl spoke add %s --spoke-kubeconfig FILE again to record it, or read the Secret with health --deep", ref.Name, s.Name)}
	case rec.Secret != ref.Name:
		return health.Credential{State: health.CredentialUnknown, Detail: fmt.Sprintf("not recorded: the Spoke names secret %s, and kubectl spoke recorded writing %s", ref.Name, rec.Secret)}
	}
	return health.JudgeExpiry(rec.Credential, now)
}
