package fleetconfig

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of Spoke and Hub.
var GroupVersion = schema.GroupVersion{Group: "fleetconfig.open-cluster-management.io", Version: "v1beta1"}

// SpokeResource and HubResource are the resources of Spoke and Hub; SpokeKind names a Spoke for -o name.
var (
	SpokeResource = GroupVersion.WithResource("spokes")
	SpokeKind     = GroupVersion.WithKind("Spoke").GroupKind()
	HubResource   = GroupVersion.WithResource("hubs")
)

// Well-known FleetConfig names.
const (
	// ForceDeleteAnnotation, set to "true" on a Spoke being deleted, makes the
	// hub clean up without waiting for the spoke to unjoin.
	ForceDeleteAnnotation = "fleetconfig.open-cluster-management.io/force-delete"
	// DefaultKubeconfigKey is the key of the kubeconfig in a spoke's secret.
	DefaultKubeconfigKey = "kubeconfig"
	// HubAsSpokeName is the name of the spoke that is the hub itself.
	HubAsSpokeName = "hub-as-spoke"
	// AgentAddOn is the add-on that runs the FleetConfig controller's agent
	// on each spoke in addon mode (the chart's default, addonMode: true).
	// Its ClusterManagementAddOn on the hub shows that mode.
	AgentAddOn = "fleetconfig-controller-agent"

	FinalizerHubCleanupPreflight = "fleetconfig.open-cluster-management.io/hub-cleanup-preflight"
	FinalizerHubCleanup          = "fleetconfig.open-cluster-management.io/hub-cleanup"
	FinalizerSpokeCleanup        = "fleetconfig.open-cluster-management.io/spoke-cleanup"

	// Spoke phases.
	SpokePhaseJoining   = "Joining"
	SpokePhaseRunning   = "Running"
	SpokePhaseUnhealthy = "Unhealthy"
	SpokePhaseDeleting  = "Deleting"

	// Spoke condition types.
	SpokeConditionJoined           = "SpokeJoined"
	SpokeConditionCleanupFailed    = "CleanupFailed"
	SpokeConditionAddonsConfigured = "AddonsConfigured"
	SpokeConditionPivotComplete    = "PivotComplete"
	SpokeConditionKlusterletSynced = "KlusterletSynced"
)

// Spoke is one spoke cluster registered to a hub. Its name is the OCM cluster name.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="PHASE",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type Spoke struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SpokeSpec   `json:"spec,omitempty"`
	Status SpokeStatus `json:"status,omitempty"`
}

// IsHubAsSpoke tells whether the Spoke is the hub's own cluster, as
// FleetConfig decides it: the name hub-as-spoke, or in-cluster credentials.
func (s *Spoke) IsHubAsSpoke() bool {
	return s.Name == HubAsSpokeName || s.Spec.Kubeconfig.InCluster
}

// SpokeList is a list of Spokes.
//
// +kubebuilder:object:root=true
type SpokeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Spoke `json:"items"`
}

// SpokeSpec is the desired registration of a spoke.
type SpokeSpec struct {
	// +kubebuilder:default:=true
	// +optional
	CreateNamespace bool `json:"createNamespace,omitempty"`
	// +required
	HubRef HubRef `json:"hubRef"`
	// +optional
	SyncLabels bool `json:"syncLabels,omitempty"`
	// +required
	Kubeconfig Kubeconfig `json:"kubeconfig"`
	// +optional
	ProxyCa string `json:"proxyCa,omitempty"`
	// +optional
	ProxyURL string `json:"proxyUrl,omitempty"`
	// +kubebuilder:default:={}
	// +optional
	Klusterlet Klusterlet `json:"klusterlet,omitzero"`
	// +optional
	ClusterARN string `json:"clusterARN,omitempty"`
	// +optional
	AddOns []AddOn `json:"addOns,omitempty"`
	// Timeout of the join in seconds.
	// +kubebuilder:default:=300
	// +optional
	Timeout int `json:"timeout,omitempty"`
	// +kubebuilder:validation:Enum=0;1;2;3;4;5;6;7;8;9;10
	// +kubebuilder:default:=0
	// +optional
	LogVerbosity int `json:"logVerbosity,omitempty"`
	// +kubebuilder:default:={}
	// +required
	CleanupConfig CleanupConfig `json:"cleanupConfig"`
}

// HubRef names the Hub a spoke joins.
type HubRef struct {
	// +required
	Name string `json:"name"`
	// +required
	Namespace string `json:"namespace"`
}

// Kubeconfig says how to reach a cluster: a secret holding a kubeconfig (in
// the Spoke's namespace), or the controller's in-cluster credentials.
type Kubeconfig struct {
	// +optional
	SecretReference *SecretReference `json:"secretReference,omitempty"`
	// +optional
	InCluster bool `json:"inCluster,omitempty"`
	// +optional
	Context string `json:"context,omitempty"`
}

// SecretReference names a secret and the key of the kubeconfig in it.
type SecretReference struct {
	// +required
	Name string `json:"name"`
	// +kubebuilder:default:="kubeconfig"
	// +optional
	KubeconfigKey string `json:"kubeconfigKey,omitempty"`
}

// ChartCleanupDefaults are the cleanupConfig defaults the PaletteAI chart
// documents for a spoke entry. They differ from the CRD's: the chart drains
// placement workloads on removal (forceClusterDrain), the CRD does not.
var ChartCleanupDefaults = CleanupConfig{PurgeKlusterletOperator: true, ForceClusterDrain: true}

// CleanupConfig says what is removed when the spoke is deleted.
type CleanupConfig struct {
	// The fields have no omitempty: a false left out of a write would take
	// the CRD's default, which is true for purgeKlusterletOperator.

	// +kubebuilder:default:=false
	// +optional
	PurgeAgentNamespace bool `json:"purgeAgentNamespace"`
	// +kubebuilder:default:=true
	// +optional
	PurgeKlusterletOperator bool `json:"purgeKlusterletOperator"`
	// +kubebuilder:default:=false
	// +optional
	PurgeKubeconfigSecret bool `json:"purgeKubeconfigSecret"`
	// +kubebuilder:default:=false
	// +optional
	ForceClusterDrain bool `json:"forceClusterDrain"`
}

// Klusterlet configures the OCM agent on the spoke.
type Klusterlet struct {
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +kubebuilder:default:="AddonManagement=true,ClusterClaim=true"
	// +optional
	FeatureGates string `json:"featureGates,omitempty"`
	// +kubebuilder:validation:Enum=Default;Hosted
	// +kubebuilder:default:=Default
	// +optional
	Mode string `json:"mode,omitempty"`
	// +optional
	ForceInternalEndpointLookup bool `json:"forceInternalEndpointLookup,omitempty"`
	// +optional
	ManagedClusterKubeconfig Kubeconfig `json:"managedClusterKubeconfig,omitzero"`
	// +optional
	ForceInternalEndpointLookupManaged bool `json:"forceInternalEndpointLookupManaged,omitempty"`
	// +kubebuilder:default:={}
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Resources *Values `json:"resources,omitempty"`
	// +optional
	Singleton bool `json:"singleton,omitempty"`
	// +optional
	ValuesFrom *ConfigMapRef `json:"valuesFrom,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Values *Values `json:"values,omitempty"`
}

// ConfigMapRef names a key of a ConfigMap in the Spoke's namespace.
type ConfigMapRef struct {
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	// +required
	Key string `json:"key"`
}

// AddOn is an add-on enabled on the spoke.
type AddOn struct {
	// +required
	ConfigName string `json:"configName"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	DeploymentConfig *Values `json:"deploymentConfig,omitempty"`
}

// Values is free-form configuration passed through to a chart.
type Values map[string]any

// SpokeStatus is what the controller reports.
type SpokeStatus struct {
	// +optional
	Phase string `json:"phase,omitempty"`
	// +optional
	Conditions []Condition `json:"conditions,omitempty"`
	// +kubebuilder:default:={}
	// +optional
	EnabledAddons []string `json:"enabledAddons,omitempty"`
	// +kubebuilder:default:=""
	// +optional
	KlusterletHash string `json:"klusterletHash,omitempty"`
}

// Condition is a metav1 condition plus the status the controller wants it to
// reach; a condition whose status differs from wantStatus makes the spoke Unhealthy.
type Condition struct {
	metav1.Condition `json:",inline"`
	// +required
	WantStatus metav1.ConditionStatus `json:"wantStatus"`
}

// Hub is the hub of a fleet; its namespace is the release namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="PHASE",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type Hub struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HubSpec   `json:"spec,omitempty"`
	Status HubStatus `json:"status,omitempty"`
}

// HubList is a list of Hubs.
//
// +kubebuilder:object:root=true
type HubList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Hub `json:"items"`
}

// HubSpec is the hub's configuration; spokekit reads little of it.
type HubSpec struct {
	// +optional
	APIServer string `json:"apiServer,omitempty"`
	// +optional
	Ca string `json:"ca,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	ClusterManager *Values `json:"clusterManager,omitempty"`
	// +kubebuilder:default:=true
	// +optional
	CreateNamespace bool `json:"createNamespace,omitempty"`
	// +optional
	Force bool `json:"force,omitempty"`
	// +required
	Kubeconfig Kubeconfig `json:"kubeconfig"`
	// +kubebuilder:default:=300
	// +optional
	Timeout int `json:"timeout,omitempty"`
	// +kubebuilder:validation:Enum=0;1;2;3;4;5;6;7;8;9;10
	// +kubebuilder:default:=0
	// +optional
	LogVerbosity int `json:"logVerbosity,omitempty"`
}

// HubStatus is what the controller reports about the hub.
type HubStatus struct {
	// +optional
	Phase string `json:"phase,omitempty"`
	// +optional
	Conditions []Condition `json:"conditions,omitempty"`
}

// Ownership marks the plugins read on a Spoke.
const (
	// ComputePoolKind is the kind of the owner of Spokes that a PaletteAI
	// Compute Pool registers and deregisters by itself.
	ComputePoolKind = "ComputePool"
	// ComputePoolLabel names the Compute Pool that made a Spoke.
	ComputePoolLabel = "spectrocloud.com/compute-pool"
	// HelmReleaseNameAnnotation and HelmReleaseNamespaceAnnotation name the
	// Helm release that owns an object; ManagedByLabel is "Helm" on it.
	HelmReleaseNameAnnotation      = "meta.helm.sh/release-name"
	HelmReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
	ManagedByLabel                 = "app.kubernetes.io/managed-by"
	// HelmResourcePolicyAnnotation "keep" makes helm uninstall leave the object.
	HelmResourcePolicyAnnotation = "helm.sh/resource-policy"
)
