// Package fleetconfig is the FleetConfig API
// (fleetconfig.open-cluster-management.io/v1beta1) as spokekit uses it: only
// the fields the plugins read or write, with the upstream defaults, enums and
// validation. The Spoke and Hub CRDs in internal/api/crds are generated from
// these types (make generate).
//
// +kubebuilder:object:generate=false
// +groupName=fleetconfig.open-cluster-management.io
// +versionName=v1beta1
package fleetconfig
