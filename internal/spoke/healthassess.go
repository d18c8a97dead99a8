package spoke

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
	"github.com/spokekit/spokekit/internal/spoke/probe"
)

// ExpiryWarning is how close to its expiry a stored credential or a spoke's
// API server certificate makes the spoke unhealthy: time enough to rotate.
const ExpiryWarning = 30 * 24 * time.Hour

// HealthRow is one spoke's health, as `kubectl spoke health` reports it.
type HealthRow struct {
	api.ReportMeta `json:",inline"`
	// OutOfBand marks a ManagedCluster that no Spoke registers.
	OutOfBand bool   `json:"outOfBand,omitempty"`
	Phase     string `json:"phase"`
	Joined    string `json:"joined"`
	Available string `json:"available"`
	// ManagedCluster says whether the hub has a ManagedCluster for the spoke.
	ManagedCluster bool `json:"managedCluster"`
	// LeaseRenewed is when the cluster's registration agent last renewed
	// its lease (managed-cluster-lease in the cluster namespace) on the hub.
	LeaseRenewed *metav1.Time `json:"leaseRenewed,omitempty"`
	// AddOns counts the cluster's ManagedClusterAddOns; AddOnsNotAvailable
	// names those whose Available condition is not True.
	AddOns             int      `json:"addOns"`
	AddOnsNotAvailable []string `json:"addOnsNotAvailable,omitempty"`
	// KubernetesVersion is what the cluster's agent reports.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Drained: the cluster carries fleetdrain's taint (taken out of
	// scheduling on purpose, so not a problem in itself).
	Drained    bool             `json:"drained,omitempty"`
	Credential CredentialHealth `json:"credential"`
	// Deep is what --deep found on the spoke itself.
	Deep     *probe.Result `json:"deep,omitempty"`
	Healthy  bool          `json:"healthy"`
	Problems []string      `json:"problems,omitempty"`
	// NotChecked says what --deep could not check on the spoke (no
	// readable stored kubeconfig, a list the credential may not make): not a
	// pass, so health exits 3 when nothing is unhealthy.
	NotChecked []string `json:"notChecked,omitempty"`
}

// CredentialHealth is the state of the kubeconfig the hub stores for a spoke.
type CredentialHealth struct {
	State   string       `json:"state"`
	Kind    string       `json:"kind,omitempty"`
	Expires *metav1.Time `json:"expires,omitempty"`
	Detail  string       `json:"detail,omitempty"`
}

// Credential states. Only the ones credentialProblem names make a spoke
// unhealthy: purged, none and not readable are normal states, or ones this
// user cannot see into.
const (
	CredentialValid       = "valid"
	CredentialExpiring    = "expiring"
	CredentialExpired     = "expired"
	CredentialPurged      = "purged"
	CredentialNone        = "none"
	CredentialNotReadable = "not readable"
	CredentialMissing     = "missing"
	CredentialRefused     = "refused"
	CredentialInvalid     = "invalid"
	CredentialUnknown     = "unknown"
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
	Credentials map[string]CredentialHealth
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
func AssessHealth(in healthInput, now time.Time) []HealthRow {
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
	out := make([]HealthRow, 0, len(rows))
	for _, r := range rows {
		h := HealthRow{
			ReportMeta: api.NewNamespacedReportMeta("SpokeHealth", r.Metadata.Namespace, r.Metadata.Name),
			OutOfBand:  r.OutOfBand, Phase: r.Phase, Joined: r.Joined, Available: r.Available, ManagedCluster: r.ManagedCluster,
		}
		key := healthKey(r.Metadata.Namespace, r.Metadata.Name)
		h.Credential = in.Credentials[key]
		if r.OutOfBand {
			h.Phase = PhaseOutOfBand
			h.Credential = CredentialHealth{State: CredentialNone, Detail: "joined out of band: the hub stores no kubeconfig"}
		} else if h.Credential.State == "" {
			h.Credential = CredentialHealth{State: CredentialUnknown}
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
		h.Problems = healthProblems(h, clusters[r.Metadata.Name], r.ManagedCluster, now)
		h.Healthy = len(h.Problems) == 0
		h.NotChecked = deepNotChecked(h.Deep)
		out = append(out, h)
	}
	return out
}

// healthProblems says what is wrong with a spoke, in the order a reader
// would look: the join, the availability, add-ons, credential, the spoke itself.
func healthProblems(h HealthRow, mc *ocm.ManagedCluster, hasCluster bool, now time.Time) []string {
	var p []string
	switch {
	case !hasCluster:
		p = append(p, "no ManagedCluster on the hub: the spoke has not joined")
	case !h.OutOfBand && h.Phase != fleetconfig.SpokePhaseRunning:
		p = append(p, "phase "+orNone(h.Phase))
	}
	if hasCluster && h.Joined != string(metav1.ConditionTrue) {
		p = append(p, "joined "+h.Joined)
	}
	if hasCluster && h.Available != string(metav1.ConditionTrue) {
		msg := "available " + h.Available
		if c := availableCondition(mc); c != nil && c.Message != "" {
			msg += ": " + strings.TrimSuffix(c.Message, ".")
		}
		p = append(p, msg)
	}
	for _, a := range h.AddOnsNotAvailable {
		p = append(p, "add-on "+a+" not available")
	}
	if msg := credentialProblem(h.Credential); msg != "" {
		p = append(p, msg)
	}
	if h.Deep != nil {
		p = append(p, deepProblems(h.Deep, now)...)
	}
	return p
}

// credentialProblem is the problem a stored credential's state makes, ""
// for none.
func credentialProblem(c CredentialHealth) string {
	switch c.State {
	case CredentialExpiring, CredentialExpired:
		return fmt.Sprintf("stored credential (%s) %s at %s", c.Kind, c.State, c.Expires.UTC().Format(time.RFC3339))
	case CredentialMissing, CredentialRefused, CredentialInvalid:
		return "stored kubeconfig " + c.State + ": " + c.Detail
	}
	return ""
}

// deepNotChecked is what --deep could not check on a spoke (nil without
// --deep): all of it when the spoke was skipped, each list the credential
// may not make. A spoke not reached is a problem, not this.
func deepNotChecked(d *probe.Result) []string {
	switch {
	case d == nil:
		return nil
	case d.Skipped != "":
		return []string{"not checked: " + d.Skipped}
	}
	var out []string
	for _, u := range d.Unchecked {
		out = append(out, u+" not readable with the stored kubeconfig")
	}
	return out
}

func deepProblems(d *probe.Result, now time.Time) []string {
	var p []string
	switch {
	case d.Skipped != "":
		return nil
	case d.Error != "":
		return []string{"not reached: " + d.Error}
	}
	if len(d.NotReadyNodes) > 0 {
		p = append(p, fmt.Sprintf("%d of %d nodes not Ready: %s", len(d.NotReadyNodes), d.Nodes, strings.Join(d.NotReadyNodes, ", ")))
	}
	if len(d.UnreadySystemPods) > 0 {
		p = append(p, "kube-system pods not ready: "+strings.Join(d.UnreadySystemPods, ", "))
	}
	if len(d.PendingCSRs) > 0 {
		p = append(p, "CSRs pending (not approved by this command): "+strings.Join(d.PendingCSRs, ", "))
	}
	if d.APIServerCert != nil && d.APIServerCert.Time.Before(now.Add(ExpiryWarning)) {
		p = append(p, "API server certificate expires at "+d.APIServerCert.UTC().Format(time.RFC3339))
	}
	return p
}

// assessCredential judges the kubeconfig a Spoke's secret holds (pure): sec
// and readErr are the read of that secret (nil, nil: it does not exist).
// The kubeconfig is loaded by the untrusted loader only, and never used here.
func assessCredential(s *fleetconfig.Spoke, sec *corev1.Secret, readErr error, now time.Time) (CredentialHealth, *kubeconfig.Kubeconfig) {
	ref := s.Spec.Kubeconfig.SecretReference
	switch {
	case ref == nil:
		return CredentialHealth{State: CredentialNone, Detail: "in-cluster credentials"}, nil
	case apierrors.IsForbidden(readErr):
		return CredentialHealth{State: CredentialNotReadable, Detail: "the current user may not read secret " + ref.Name}, nil
	case readErr != nil:
		return CredentialHealth{State: CredentialUnknown, Detail: readErr.Error()}, nil
	case sec == nil:
		if m := missingSecret(s); !m.Purged {
			return CredentialHealth{State: CredentialMissing, Detail: m.Problem}, nil
		}
		return CredentialHealth{State: CredentialPurged, Detail: "the agent on the spoke manages it; cleanupConfig.purgeKubeconfigSecret had the stored kubeconfig deleted"}, nil
	}
	key := ref.KubeconfigKey
	if key == "" {
		key = fleetconfig.DefaultKubeconfigKey
	}
	kc, err := kubeconfig.FromSecretContext(sec, key, s.Spec.Kubeconfig.Context)
	if err != nil {
		state := CredentialInvalid
		if exitcode.IsRefused(err) {
			state = CredentialRefused
		}
		return CredentialHealth{State: state, Detail: err.Error()}, nil
	}
	// With no minimum lifetime Credential fails on a credential that
	// expired, which it still describes: that one is judged below.
	c, err := kc.Credential(now, 0)
	if err != nil && c.Expires == nil {
		return CredentialHealth{State: CredentialInvalid, Detail: err.Error()}, kc
	}
	return judgeExpiry(c, now), kc
}

// judgeExpiry is the state of a credential by its expiry.
func judgeExpiry(c kubeconfig.Credential, now time.Time) CredentialHealth {
	h := CredentialHealth{State: CredentialValid, Kind: c.Kind}
	if c.Expires != nil {
		h.Expires = &metav1.Time{Time: *c.Expires}
		switch {
		case !c.Expires.After(now):
			h.State = CredentialExpired
		case c.Expires.Before(now.Add(ExpiryWarning)):
			h.State = CredentialExpiring
		}
	}
	return h
}

// recordedCredential judges a Spoke's stored credential from what kubectl
// spoke recorded when it wrote the Secret (pure): the Secret, which holds a
// credential as strong as the spoke's admin, is not read. A record that is
// not well formed is refused (a problem); one that names another Secret
// than the Spoke does, or none, tells nothing.
func recordedCredential(s *fleetconfig.Spoke, now time.Time) CredentialHealth {
	ref := s.Spec.Kubeconfig.SecretReference
	if ref == nil {
		return CredentialHealth{State: CredentialNone, Detail: "in-cluster credentials"}
	}
	if m := missingSecret(s); m.Purged {
		return CredentialHealth{State: CredentialPurged, Detail: "the agent on the spoke manages it; cleanupConfig.purgeKubeconfigSecret had the stored kubeconfig deleted"}
	}
	rec, err := readRecord(s)
	switch {
	case err != nil:
		return CredentialHealth{State: CredentialRefused, Detail: err.Error()}
	case rec.Secret == "" || rec.Credential.Kind == "":
		return CredentialHealth{State: CredentialUnknown, Detail: fmt.Sprintf("not recorded: kubectl spoke recorded no credential for secret %s on the Spoke; run kubectl spoke add %s --spoke-kubeconfig FILE again to record it, or read the Secret with health --deep", ref.Name, s.Name)}
	case rec.Secret != ref.Name:
		return CredentialHealth{State: CredentialUnknown, Detail: fmt.Sprintf("not recorded: the Spoke names secret %s, and kubectl spoke recorded writing %s", ref.Name, rec.Secret)}
	}
	return judgeExpiry(rec.Credential, now)
}
