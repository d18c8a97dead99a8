// Package health judges a spoke's health from what was read of it: the
// problems that make it unhealthy, what `spoke health --deep` could not
// check, and the state of its stored credential. It sends no request and
// prints nothing (depguard holds it to that): the command in package spoke
// reads the hub, builds the rows and prints them, so every rule of what is
// healthy lives here, in pure functions a unit test reaches directly.
package health

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/kubeconfig"
	"github.com/spokekit/spokekit/internal/spoke/probe"
)

// ExpiryWarning is how close to its expiry a stored credential or a spoke's
// API server certificate makes the spoke unhealthy: time enough to rotate.
const ExpiryWarning = 30 * 24 * time.Hour

// Row is one spoke's health, as `kubectl spoke health` reports it.
type Row struct {
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
	Drained    bool       `json:"drained,omitempty"`
	Credential Credential `json:"credential"`
	// Deep is what --deep found on the spoke itself.
	Deep     *probe.Result `json:"deep,omitempty"`
	Healthy  bool          `json:"healthy"`
	Problems []string      `json:"problems,omitempty"`
	// NotChecked says what --deep could not check on the spoke (no
	// readable stored kubeconfig, a list the credential may not make): not a
	// pass, so health exits 3 when nothing is unhealthy.
	NotChecked []string `json:"notChecked,omitempty"`
}

// Credential is the state of the kubeconfig the hub stores for a spoke.
type Credential struct {
	State   string       `json:"state"`
	Kind    string       `json:"kind,omitempty"`
	Expires *metav1.Time `json:"expires,omitempty"`
	Detail  string       `json:"detail,omitempty"`
}

// Credential states. Only the ones Credential.Problem names make a spoke
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

// Judge sets what is wrong with the spoke of r, filled in but for these:
// Problems (what makes it unhealthy), Healthy, and NotChecked. mc is its
// ManagedCluster (nil when the hub has none).
func (r *Row) Judge(mc *ocm.ManagedCluster, now time.Time) {
	r.Problems = problems(r, mc, now)
	r.Healthy = len(r.Problems) == 0
	r.NotChecked = deepNotChecked(r.Deep)
}

// problems says what is wrong with a spoke, in the order a reader would
// look: the join, the availability, add-ons, credential, the spoke itself.
func problems(h *Row, mc *ocm.ManagedCluster, now time.Time) []string {
	var p []string
	switch {
	case !h.ManagedCluster:
		p = append(p, "no ManagedCluster on the hub: the spoke has not joined")
	case !h.OutOfBand && h.Phase != fleetconfig.SpokePhaseRunning:
		p = append(p, "phase "+cmp.Or(h.Phase, "none"))
	}
	if h.ManagedCluster && h.Joined != string(metav1.ConditionTrue) {
		p = append(p, "joined "+h.Joined)
	}
	if h.ManagedCluster && h.Available != string(metav1.ConditionTrue) {
		msg := "available " + h.Available
		if mc != nil {
			if c := meta.FindStatusCondition(mc.Status.Conditions, ocm.ManagedClusterConditionAvailable); c != nil && c.Message != "" {
				msg += ": " + strings.TrimSuffix(c.Message, ".")
			}
		}
		p = append(p, msg)
	}
	for _, a := range h.AddOnsNotAvailable {
		p = append(p, "add-on "+a+" not available")
	}
	if msg := h.Credential.Problem(); msg != "" {
		p = append(p, msg)
	}
	if h.Deep != nil {
		p = append(p, deepProblems(h.Deep, now)...)
	}
	return p
}

// Problem is the problem a stored credential's state makes, "" for none.
func (c Credential) Problem() string {
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

// JudgeExpiry is the state of a credential by its expiry.
func JudgeExpiry(c kubeconfig.Credential, now time.Time) Credential {
	h := Credential{State: CredentialValid, Kind: c.Kind}
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
