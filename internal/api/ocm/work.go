package ocm

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ManifestWork is a set of resources the hub asks a cluster's work agent to
// apply; it lives in the cluster's namespace on the hub. spokekit reads only
// its metadata: who made it decides whether it blocks a spoke's removal.
type ManifestWork struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

// ManagedClusterAddOnKind is the kind of the owner of an add-on's ManifestWorks.
const ManagedClusterAddOnKind = "ManagedClusterAddOn"

// IsAddOnWork tells whether the work belongs to an add-on: upstream's
// FleetConfig controller counts a work with any ManagedClusterAddOn owner as
// an add-on's, which the hub removes itself when a spoke leaves.
func (w *ManifestWork) IsAddOnWork() bool {
	for _, o := range w.OwnerReferences {
		if o.Kind == ManagedClusterAddOnKind {
			return true
		}
	}
	return false
}

// IsPlacementWork tells whether a placement-driven producer made the work:
// it leaves when the cluster drops out of the placement's decisions.
func (w *ManifestWork) IsPlacementWork() bool {
	_, ok := w.Labels[PlacementLabel]
	return ok
}

// PlacementsOf finds the placements that made a work with these labels: the
// placement it names, in the namespace of the ManifestWorkReplicaSet it
// names ("<namespace>.<name>"; namespaces hold no dots) when it names one.
func PlacementsOf(labels map[string]string, placements []Placement) []Placement {
	name := labels[PlacementLabel]
	if name == "" {
		return nil
	}
	ns, _, ok := strings.Cut(labels[ManifestWorkReplicaSetLabel], ".")
	if !ok {
		ns = ""
	}
	var out []Placement
	for _, p := range placements {
		if p.Name == name && (ns == "" || p.Namespace == ns) {
			out = append(out, p)
		}
	}
	return out
}
