package spoke

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
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
	out := map[string]time.Time{}
	leases := h.Kube.CoordinationV1().Leases("")
	err := cli.EachInChunks(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return leases.List(ctx, opts)
	},
		h.ChunkSize, metav1.ListOptions{FieldSelector: "metadata.name=" + clusterLeaseName}, func(l *coordinationv1.Lease) error {
			if t := l.Spec.RenewTime; t != nil {
				out[l.Namespace] = t.Time
			}
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("listing the clusters' leases (%s): %w", clusterLeaseName, err)
	}
	return out, nil
}

// readAddOns lists every ManagedClusterAddOn with its Available status.
func (h *HubClient) readAddOns(ctx context.Context) ([]addOnState, error) {
	l, err := listAll[listedAddOn](ctx, h, ocm.ManagedClusterAddOnResource, "", "")
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
func recordedCredentials(spokes []fleetconfig.Spoke, now time.Time) map[string]CredentialHealth {
	out := make(map[string]CredentialHealth, len(spokes))
	for i := range spokes {
		out[healthKey(spokes[i].Namespace, spokes[i].Name)] = recordedCredential(&spokes[i], now)
	}
	return out
}
