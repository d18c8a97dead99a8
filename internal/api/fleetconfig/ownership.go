package fleetconfig

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ComputePoolOf names the Compute Pool that owns an object (a Spoke, or
// the ManagedCluster it registers): an owner reference of kind
// ComputePoolKind, or else the ComputePoolLabel. "" when none.
func ComputePoolOf(obj metav1.Object) string {
	for _, o := range obj.GetOwnerReferences() {
		if o.Kind == ComputePoolKind {
			return o.Name
		}
	}
	return obj.GetLabels()[ComputePoolLabel]
}
