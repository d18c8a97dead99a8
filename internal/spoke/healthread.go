package spoke

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// readCredentials judges the stored kubeconfig of every spoke with one
// paginated LIST of the Secrets of each namespace that holds spokes, page
// by page (no Secret is kept). The shipped roles grant no Secret by kind:
// then those credentials are not readable, and note says how to see them.
func (h *HubClient) readCredentials(ctx context.Context, spokes []fleetconfig.Spoke, now time.Time) (creds map[string]CredentialHealth, note string, err error) {
	creds = map[string]CredentialHealth{}
	byNamespace := map[string][]*fleetconfig.Spoke{}
	bySecret := map[string][]*fleetconfig.Spoke{}
	var namespaces []string
	for i := range spokes {
		s := &spokes[i]
		ref := s.Spec.Kubeconfig.SecretReference
		if ref == nil {
			creds[healthKey(s.Namespace, s.Name)], _ = assessCredential(s, nil, nil, now)
			continue
		}
		if len(byNamespace[s.Namespace]) == 0 {
			namespaces = append(namespaces, s.Namespace)
		}
		byNamespace[s.Namespace] = append(byNamespace[s.Namespace], s)
		bySecret[healthKey(s.Namespace, ref.Name)] = append(bySecret[healthKey(s.Namespace, ref.Name)], s)
	}
	var forbidden []string
	for _, ns := range namespaces {
		secrets := h.Kube.CoreV1().Secrets(ns)
		err := cli.EachInChunks(cli.HideBodies(ctx), func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return secrets.List(ctx, opts)
		},
			h.ChunkSize, metav1.ListOptions{}, func(sec *corev1.Secret) error {
				for _, s := range bySecret[healthKey(ns, sec.Name)] {
					creds[healthKey(s.Namespace, s.Name)], _ = assessCredential(s, sec, nil, now)
				}
				return nil
			})
		var readErr error
		switch {
		case apierrors.IsForbidden(err):
			forbidden, readErr = append(forbidden, ns), err
		case err != nil:
			return nil, "", fmt.Errorf("listing the Secrets of namespace %s: %w", ns, err)
		}
		// A Secret the list did not hold does not exist (or was not listed).
		for _, s := range byNamespace[ns] {
			if _, done := creds[healthKey(s.Namespace, s.Name)]; !done {
				creds[healthKey(s.Namespace, s.Name)], _ = assessCredential(s, nil, readErr, now)
			}
		}
	}
	if len(forbidden) > 0 {
		note = fmt.Sprintf("stored credentials not readable: the current user may not list the Secrets of %s (no shipped role lists Secrets); --deep reads each spoke's Secret through the Role that grants that one alone (see kubectl-spoke's rbac.yaml)",
			strings.Join(forbidden, ", "))
	}
	return creds, note, nil
}
