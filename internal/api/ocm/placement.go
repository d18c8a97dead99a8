package ocm

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PlacementSpec is what decides which clusters a Placement selects.
type PlacementSpec struct {
	// ClusterSets narrows the sets bound to the Placement's namespace
	// (empty: every bound set).
	ClusterSets []string `json:"clusterSets,omitempty"`
	// NumberOfClusters caps the decisions (nil: every eligible cluster).
	NumberOfClusters *int32 `json:"numberOfClusters,omitempty"`
	// Predicates are ORed; each one's selectors are ANDed.
	Predicates  []ClusterPredicate `json:"predicates,omitempty"`
	Tolerations []Toleration       `json:"tolerations,omitempty"`
}

// ClusterPredicate is one way a cluster can qualify for a Placement.
type ClusterPredicate struct {
	RequiredClusterSelector ClusterSelector `json:"requiredClusterSelector,omitzero"`
}

// ClusterSelector matches a cluster's labels, its claims (as labels, by
// matchExpressions only) and CEL expressions.
type ClusterSelector struct {
	LabelSelector metav1.LabelSelector `json:"labelSelector,omitzero"`
	ClaimSelector struct {
		MatchExpressions []metav1.LabelSelectorRequirement `json:"matchExpressions,omitempty"`
	} `json:"claimSelector,omitzero"`
	CelSelector struct {
		CelExpressions []string `json:"celExpressions,omitempty"`
	} `json:"celSelector,omitzero"`
}

// PlacementDisableAnnotation set to "true" stops the placement controller
// from scheduling a Placement: its decisions stay as they are.
const PlacementDisableAnnotation = "cluster.open-cluster-management.io/experimental-scheduling-disable"

// ManagedClusterSet groups clusters (cluster-scoped).
type ManagedClusterSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		ClusterSelector struct {
			SelectorType  string                `json:"selectorType,omitempty"`
			LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
		} `json:"clusterSelector,omitzero"`
	} `json:"spec,omitzero"`
}

// Cluster set selector types.
const (
	// ClusterSetSelectorExclusive (also the empty type): the clusters
	// labelled ClusterSetLabel=<set name>.
	ClusterSetSelectorExclusive = "ExclusiveClusterSetLabel"
	// ClusterSetSelectorLabels: the clusters its labelSelector matches.
	ClusterSetSelectorLabels = "LabelSelector"
	ClusterSetLabel          = "cluster.open-cluster-management.io/clusterset"
)

// ManagedClusterSetBinding lets the Placements of its namespace select from
// the set of its name.
type ManagedClusterSetBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		ClusterSet string `json:"clusterSet"`
	} `json:"spec,omitzero"`
}
