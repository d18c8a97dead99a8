package spoke

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/scrub"
	"github.com/spokekit/spokekit/internal/spoke/health"
	"github.com/spokekit/spokekit/internal/spoke/hubclient"
	"github.com/spokekit/spokekit/internal/spoke/probe"
)

// clusterLeaseName is the Lease an OCM registration agent renews in its
// cluster namespace on the hub (open-cluster-management.io/ocm
// pkg/registration/spoke/lease): the hub marks the cluster Unknown when it
// goes stale.
const clusterLeaseName = "managed-cluster-lease"

var leaseResource = coordinationv1.SchemeGroupVersion.WithResource("leases")

// listedAddOn is what health reads of a ManagedClusterAddOn.
type listedAddOn struct {
	Metadata listedMeta `json:"metadata"`
	Status   struct {
		Conditions []metav1.Condition `json:"conditions"`
	} `json:"status"`
}

// readLeases is when each cluster's agent last renewed its lease, by cluster.
func (h *HubClient) readLeases(ctx context.Context) (map[string]time.Time, error) {
	out, err := h.LeaseRenewals(ctx, clusterLeaseName)
	if err != nil {
		return nil, fmt.Errorf("listing the clusters' leases (%s): %w", clusterLeaseName, err)
	}
	return out, nil
}

// readAddOns lists every ManagedClusterAddOn with its Available status.
func (h *HubClient) readAddOns(ctx context.Context) ([]addOnState, error) {
	l, err := hubclient.List[listedAddOn](ctx, h.Client, ocm.ManagedClusterAddOnResource, "", "")
	if err != nil {
		return nil, fmt.Errorf("listing ManagedClusterAddOns: %w", err)
	}
	out := make([]addOnState, len(l))
	for i, a := range l {
		out[i] = addOnState{Cluster: a.Metadata.Namespace, Name: a.Metadata.Name, Available: conditionStatus(a.Status.Conditions, "Available")}
	}
	return out, nil
}

// recordedCredentials judges the stored credential of every spoke from its
// record (see recordedCredential), reading no Secret.
func recordedCredentials(spokes []fleetconfig.Spoke, now time.Time) map[string]health.Credential {
	out := make(map[string]health.Credential, len(spokes))
	for i := range spokes {
		out[healthKey(spokes[i].Namespace, spokes[i].Name)] = recordedCredential(&spokes[i], now)
	}
	return out
}

// readDeep reaches every spoke through its stored kubeconfig, maxConcurrent
// at a time, each within timeout from the read of its Secret on: a spoke
// that hangs holds one slot for timeout at most, never the others. It
// judges the credentials on the way, from the Secrets it reads one by one
// (the Role that grants each one alone allows that, and no list).
func (h *HubClient) readDeep(ctx context.Context, spokes []fleetconfig.Spoke, maxConcurrent int, timeout time.Duration, now time.Time) (map[string]health.Credential, map[string]*probe.Result) {
	creds := make(map[string]health.Credential, len(spokes))
	deep := make(map[string]*probe.Result, len(spokes))
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(maxConcurrent)
	for i := range spokes {
		s := &spokes[i]
		g.Go(func() error {
			c, d := h.deepSpoke(ctx, s, timeout, now)
			mu.Lock()
			defer mu.Unlock()
			creds[healthKey(s.Namespace, s.Name)], deep[healthKey(s.Namespace, s.Name)] = c, d
			return nil
		})
	}
	_ = g.Wait() // the goroutines return no error: each result says its own
	return creds, deep
}

// deepSpoke reads one spoke's Secret, judges the credential, and reaches
// the spoke with it when it is usable.
func (h *HubClient) deepSpoke(ctx context.Context, s *fleetconfig.Spoke, timeout time.Duration, now time.Time) (health.Credential, *probe.Result) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var sec *corev1.Secret
	var readErr error
	if ref := s.Spec.Kubeconfig.SecretReference; ref != nil {
		sec, readErr = h.Secret(ctx, s.Namespace, ref.Name)
	}
	cred, kc := assessCredential(s, sec, readErr, now)
	if kc == nil {
		return cred, &probe.Result{Skipped: "no usable stored kubeconfig (credential " + cred.State + ")"}
	}
	d := &probe.Result{}
	if err := probe.Reach(ctx, kc, timeout, d); err != nil {
		d.Error = scrub.URLs(err.Error())
		// The client's own timeout may fire a moment before the context's:
		// either way the spoke did not answer in time.
		var netErr net.Error
		if errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
			d.Error = fmt.Sprintf("no answer within --spoke-timeout %s", timeout)
		}
	}
	return cred, d
}
