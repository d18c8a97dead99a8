// Package ocm holds the Open Cluster Management kinds spokekit reads and
// writes, reduced to the fields it uses. Objects are read with the dynamic
// client and converted.
package ocm

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OCM resources.
var (
	ManagedClusterResource           = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1", Resource: "managedclusters"}
	ManagedClusterKind               = schema.GroupKind{Group: "cluster.open-cluster-management.io", Kind: "ManagedCluster"}
	PlacementResource                = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta1", Resource: "placements"}
	PlacementDecisionResource        = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta1", Resource: "placementdecisions"}
	ManagedClusterSetResource        = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta2", Resource: "managedclustersets"}
	ManagedClusterSetBindingResource = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta2", Resource: "managedclustersetbindings"}
	ManifestWorkResource             = schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1", Resource: "manifestworks"}
	ManifestWorkReplicaSetResource   = schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1alpha1", Resource: "manifestworkreplicasets"}
	ManagedClusterAddOnResource      = schema.GroupVersionResource{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Resource: "managedclusteraddons"}
	ClusterManagementAddOnResource   = schema.GroupVersionResource{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Resource: "clustermanagementaddons"}
	// ClusterClaimResource is on the managed cluster: the claims its
	// registration agent copies into the ManagedCluster's status.
	ClusterClaimResource = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1alpha1", Resource: "clusterclaims"}
)

// Well-known OCM names.
const (
	ManagedClusterConditionJoined    = "ManagedClusterJoined"
	ManagedClusterConditionAvailable = "ManagedClusterConditionAvailable"
	ManagedClusterConditionAccepted  = "HubAcceptedManagedCluster"

	TaintUnavailable = "cluster.open-cluster-management.io/unavailable"
	TaintUnreachable = "cluster.open-cluster-management.io/unreachable"

	// DrainTaintKey is spokekit's own taint: `kubectl fleetdrain cluster`
	// puts it on a ManagedCluster (NoSelect) and `spoke health` reports it.
	DrainTaintKey = "fleetdrain.spokekit.io/drained"

	TaintEffectNoSelect       = "NoSelect"
	TaintEffectPreferNoSelect = "PreferNoSelect"
	TaintEffectNoSelectIfNew  = "NoSelectIfNew"

	// PlacementLabel is on the ManifestWorks a placement-driven producer
	// (a ManifestWorkReplicaSet) puts in a cluster namespace.
	PlacementLabel = "work.open-cluster-management.io/placementname"
	// ManifestWorkReplicaSetLabel names the replica set that made a work.
	ManifestWorkReplicaSetLabel = "work.open-cluster-management.io/manifestworkreplicaset"
	// AddonNameLabel names the add-on a work belongs to.
	AddonNameLabel = "open-cluster-management.io/addon-name"
	// PlacementDecisionLabel names the placement of a PlacementDecision.
	PlacementDecisionLabel = "cluster.open-cluster-management.io/placement"

	ManifestWorkCleanupFinalizer = "cluster.open-cluster-management.io/manifest-work-cleanup"

	// ClusterIDClaim is the reserved cluster claim that holds a unique
	// identifier of the cluster. OCM's registration agent only copies it
	// from the cluster's ClusterClaim of that name; it sets none itself.
	ClusterIDClaim = "id.k8s.io"

	// ClusterAnnotationPrefix starts the key of every annotation a
	// klusterlet asks for (registrationConfiguration.clusterAnnotations,
	// which `clusteradm join --klusterlet-annotation k=v` fills in as
	// ClusterAnnotationPrefix+k): its registration agent puts them on the
	// ManagedCluster it creates, and drops keys without the prefix.
	ClusterAnnotationPrefix = "agent.open-cluster-management.io/"
	// BrushIgnoreAnnotation is PaletteAI's mark on a cluster joined out of
	// band (`clusteradm join --klusterlet-annotation brush-ignore=true`):
	// its Brush controller then installs nothing there.
	BrushIgnoreAnnotation = ClusterAnnotationPrefix + "brush-ignore"
)

// ManagedCluster is a cluster registered to the hub (cluster-scoped; its
// namespace on the hub has the same name).
type ManagedCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ManagedClusterSpec   `json:"spec,omitempty"`
	Status            ManagedClusterStatus `json:"status,omitempty"`
}

// ManagedClusterSpec holds what the plugins read of a ManagedCluster's spec.
type ManagedClusterSpec struct {
	HubAcceptsClient            bool           `json:"hubAcceptsClient"`
	LeaseDurationSeconds        int32          `json:"leaseDurationSeconds,omitempty"`
	ManagedClusterClientConfigs []ClientConfig `json:"managedClusterClientConfigs,omitempty"`
	Taints                      []Taint        `json:"taints,omitempty"`
}

// ClientConfig is how the hub reaches the cluster's API server.
type ClientConfig struct {
	URL      string `json:"url"`
	CABundle []byte `json:"caBundle,omitempty"`
}

// Taint keeps placements from selecting a cluster unless they tolerate it.
// The hub sets TimeAdded; clients must send new taints without it.
type Taint struct {
	Key       string       `json:"key"`
	Value     string       `json:"value,omitempty"`
	Effect    string       `json:"effect"`
	TimeAdded *metav1.Time `json:"timeAdded"`
}

// ClusterClaim is a claim the cluster's agent reports.
type ClusterClaim struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Claim is the value of the claim called name ("" when not reported).
func (mc *ManagedCluster) Claim(name string) string {
	for _, c := range mc.Status.ClusterClaims {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// ManagedClusterStatus holds the conditions the plugins read.
type ManagedClusterStatus struct {
	Conditions    []metav1.Condition `json:"conditions,omitempty"`
	ClusterClaims []ClusterClaim     `json:"clusterClaims,omitempty"`
	Version       struct {
		Kubernetes string `json:"kubernetes,omitempty"`
	} `json:"version,omitzero"`
}

// Toleration lets a placement select a tainted cluster.
type Toleration struct {
	Key               string `json:"key,omitempty"`
	Operator          string `json:"operator,omitempty"`
	Value             string `json:"value,omitempty"`
	Effect            string `json:"effect,omitempty"`
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// Placement selects clusters for workloads (its spec in placement.go).
type Placement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PlacementSpec `json:"spec,omitzero"`
}

// PlacementDecision lists the clusters a placement chose.
type PlacementDecision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            struct {
		Decisions []struct {
			ClusterName string `json:"clusterName"`
			Reason      string `json:"reason"`
		} `json:"decisions,omitempty"`
	} `json:"status,omitzero"`
}
