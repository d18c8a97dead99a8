package spoke

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/spoke/hubclient"
)

// What list and get read of Spokes and ManagedClusters: only the fields a
// row shows. On a fleet of thousands, decoding whole objects (managed
// fields, labels, klusterlet values) was most of the command's CPU time.

type listedMeta struct {
	Name              string      `json:"name"`
	Namespace         string      `json:"namespace"`
	CreationTimestamp metav1.Time `json:"creationTimestamp"`
}

type listedSpoke struct {
	Metadata struct {
		listedMeta
		// Only the record's annotations (health's credential column).
		Annotations struct {
			Secret     *string `json:"spoke.spokekit.io/kubeconfig-secret"`
			Credential *string `json:"spoke.spokekit.io/credential-kind"`
			Expires    *string `json:"spoke.spokekit.io/credential-expires"`
			ClusterUID *string `json:"spoke.spokekit.io/kube-system-uid"`
		} `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		HubRef        fleetconfig.HubRef        `json:"hubRef"`
		Kubeconfig    fleetconfig.Kubeconfig    `json:"kubeconfig"`
		CleanupConfig fleetconfig.CleanupConfig `json:"cleanupConfig"`
		// The agent add-on tells addon mode, where a pivot purges the secret.
		AddOns []fleetconfig.AddOn `json:"addOns"`
	} `json:"spec"`
	Status struct {
		Phase string `json:"phase"`
		// Health reads PivotComplete to tell a purged secret.
		Conditions []fleetconfig.Condition `json:"conditions"`
	} `json:"status"`
}

type listedCluster struct {
	Metadata struct {
		listedMeta
		// Only the one annotation a row shows: decoding a struct field
		// skips the other keys without building a map per cluster.
		Annotations struct {
			BrushIgnore *string `json:"agent.open-cluster-management.io/brush-ignore"`
		} `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Taints []ocm.Taint `json:"taints"`
	} `json:"spec"`
	Status struct {
		Conditions []metav1.Condition `json:"conditions"`
		Version    struct {
			Kubernetes string `json:"kubernetes"`
		} `json:"version"`
	} `json:"status"`
}

// listedSpokes lists the Spokes of the release namespace with the fields
// BuildRows reads.
func (h *HubClient) listedSpokes(ctx context.Context, ns, selector string) ([]fleetconfig.Spoke, error) {
	l, err := hubclient.List[listedSpoke](ctx, h.Client, fleetconfig.SpokeResource, ns, selector)
	if err != nil {
		return nil, fmt.Errorf("listing Spokes in %s: %w", hubclient.NamespaceOrAll(ns), err)
	}
	out := make([]fleetconfig.Spoke, len(l))
	for i, s := range l {
		out[i].ObjectMeta = metav1.ObjectMeta{Name: s.Metadata.Name, Namespace: s.Metadata.Namespace, CreationTimestamp: s.Metadata.CreationTimestamp}
		a := s.Metadata.Annotations
		for key, v := range map[string]*string{RecordSecretAnnotation: a.Secret, RecordCredentialAnnotation: a.Credential, RecordExpiresAnnotation: a.Expires, RecordClusterUIDAnnotation: a.ClusterUID} {
			if v != nil {
				if out[i].Annotations == nil {
					out[i].Annotations = map[string]string{}
				}
				out[i].Annotations[key] = *v
			}
		}
		out[i].Spec.HubRef, out[i].Spec.Kubeconfig, out[i].Spec.CleanupConfig, out[i].Spec.AddOns = s.Spec.HubRef, s.Spec.Kubeconfig, s.Spec.CleanupConfig, s.Spec.AddOns
		out[i].Status.Phase, out[i].Status.Conditions = s.Status.Phase, s.Status.Conditions
	}
	return out, nil
}

// listedClusters lists the ManagedClusters with the fields BuildRows reads.
func (h *HubClient) listedClusters(ctx context.Context) ([]ocm.ManagedCluster, error) {
	l, err := hubclient.List[listedCluster](ctx, h.Client, ocm.ManagedClusterResource, "", "")
	if err != nil {
		return nil, fmt.Errorf("listing ManagedClusters: %w", err)
	}
	out := make([]ocm.ManagedCluster, len(l))
	for i, c := range l {
		out[i].ObjectMeta = metav1.ObjectMeta{Name: c.Metadata.Name, CreationTimestamp: c.Metadata.CreationTimestamp}
		if v := c.Metadata.Annotations.BrushIgnore; v != nil {
			out[i].Annotations = map[string]string{ocm.BrushIgnoreAnnotation: *v}
		}
		out[i].Spec.Taints = c.Spec.Taints
		out[i].Status.Conditions = c.Status.Conditions
		out[i].Status.Version.Kubernetes = c.Status.Version.Kubernetes
	}
	return out, nil
}
