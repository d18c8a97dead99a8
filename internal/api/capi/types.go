// Package capi holds the Cluster API kinds spokekit reads and writes, reduced
// to the fields it uses. The fields named here have the same paths in
// v1beta2 and v1beta1, so one set of types reads either version; objects are
// read with the dynamic client and converted.
package capi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/spokekit/spokekit/internal/api"
)

// Group is the Cluster API core group.
const Group = "cluster.x-k8s.io"

// Versions are the served versions spokekit understands, preferred first:
// v1beta2 is the storage version since Cluster API v1.11, v1beta1 is still
// served by older management clusters.
var Versions = []string{"v1beta2", "v1beta1"}

// The Cluster API kinds spokekit uses.
var (
	ClusterKind            = schema.GroupKind{Group: Group, Kind: "Cluster"}
	MachineDeploymentKind  = schema.GroupKind{Group: Group, Kind: "MachineDeployment"}
	MachinePoolKind        = schema.GroupKind{Group: Group, Kind: "MachinePool"}
	MachineKind            = schema.GroupKind{Group: Group, Kind: "Machine"}
	MachineHealthCheckKind = schema.GroupKind{Group: Group, Kind: "MachineHealthCheck"}
)

// Resources of the kinds above, at a version found by discovery.
const (
	ClusterResource            = "clusters"
	MachineDeploymentResource  = "machinedeployments"
	MachinePoolResource        = "machinepools"
	MachineResource            = "machines"
	MachineHealthCheckResource = "machinehealthchecks"
)

// GVR is the resource of the core group at a version.
func GVR(version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: Group, Version: version, Resource: resource}
}

// Labels and annotations Cluster API (and the platform around it) sets.
const (
	// ClusterNameLabel is on every object that belongs to a cluster.
	ClusterNameLabel = "cluster.x-k8s.io/cluster-name"
	// MachineDeploymentNameLabel names the MachineDeployment of a Machine.
	MachineDeploymentNameLabel = "cluster.x-k8s.io/deployment-name"
	// MachineControlPlaneLabel is on the Machines of a control plane made of
	// Machines (a hosted one, e.g. Kamaji's, has none).
	MachineControlPlaneLabel = "cluster.x-k8s.io/control-plane"
	// MachinePoolNameLabel names the MachinePool of a Machine.
	MachinePoolNameLabel = "cluster.x-k8s.io/pool-name"
	// TopologyOwnedLabel marks objects the topology controller manages.
	TopologyOwnedLabel = "topology.cluster.x-k8s.io/owned"
	// TopologyDeploymentNameLabel names the topology pool (not the object)
	// a MachineDeployment and its Machines were made for.
	TopologyDeploymentNameLabel = "topology.cluster.x-k8s.io/deployment-name"
	// TopologyPoolNameLabel is TopologyDeploymentNameLabel for MachinePools.
	TopologyPoolNameLabel = "topology.cluster.x-k8s.io/pool-name"

	// AutoscalerMinSizeAnnotation and AutoscalerMaxSizeAnnotation hand a
	// pool's replicas to the cluster autoscaler; a topology pool must not set
	// replicas while it carries them.
	AutoscalerMinSizeAnnotation = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
	AutoscalerMaxSizeAnnotation = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"

	// MachineAnnotation is on a workload cluster's Node and names its Machine.
	MachineAnnotation = "cluster.x-k8s.io/machine"

	// KamajiNameLabel is on the control-plane pods a Kamaji tenant control
	// plane runs in the cluster's namespace on the platform; its value is the
	// name of the control plane (ControlPlaneName), not of the cluster.
	KamajiNameLabel = "kamaji.clastix.io/name"

	// EventMachineMarkedUnhealthy is the reason of the event the
	// MachineHealthCheck records on a Machine it sends to remediation.
	EventMachineMarkedUnhealthy = "MachineMarkedUnhealthy"

	// KubeconfigSecretKey is the key of the admin kubeconfig in the
	// NAME-kubeconfig secret.
	KubeconfigSecretKey = "value"
)

// The Machine condition that tells how its deletion goes, and its reason
// while the Machine's Node is being drained.
const (
	MachineDeletingCondition  = "Deleting"
	MachineDrainingNodeReason = "DrainingNode"
)

// Machine phases.
const (
	MachinePhasePending      = "Pending"
	MachinePhaseProvisioning = "Provisioning"
	MachinePhaseProvisioned  = "Provisioned"
	MachinePhaseRunning      = "Running"
	MachinePhaseDeleting     = "Deleting"
	MachinePhaseFailed       = "Failed"
)

// KubeconfigSecretName is the secret that holds a cluster's admin kubeconfig.
func KubeconfigSecretName(cluster string) string { return cluster + "-kubeconfig" }

// Cluster is a Cluster API cluster.
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ClusterSpec   `json:"spec,omitempty"`
	Status            ClusterStatus `json:"status,omitempty"`
}

// ClusterSpec holds what spokekit reads of a cluster's spec.
type ClusterSpec struct {
	Paused          *bool      `json:"paused,omitempty"`
	ControlPlaneRef *ObjectRef `json:"controlPlaneRef,omitempty"`
	Topology        *Topology  `json:"topology,omitempty"`
}

// ObjectRef names an object of the cluster's namespace (v1beta2 has
// apiGroup, v1beta1 apiVersion; only the name is read).
type ObjectRef struct {
	Kind string `json:"kind,omitempty"`
	Name string `json:"name,omitempty"`
}

// ControlPlaneName is the name of the cluster's control plane object, which
// need not be the cluster's (a topology names it with a random suffix); ""
// while the cluster references none.
func ControlPlaneName(c *Cluster) string {
	if c.Spec.ControlPlaneRef == nil {
		return ""
	}
	return c.Spec.ControlPlaneRef.Name
}

// Topology is a cluster built from a ClusterClass.
type Topology struct {
	// ClassRef names the class in v1beta2; Class in v1beta1.
	ClassRef       *ClassRef `json:"classRef,omitempty"`
	Class          string    `json:"class,omitempty"`
	ClassNamespace string    `json:"classNamespace,omitempty"`
	Version        string    `json:"version,omitempty"`
	Workers        *Workers  `json:"workers,omitempty"`
}

// ClassRef names a ClusterClass.
type ClassRef struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// Workers are the worker pools of a topology.
type Workers struct {
	MachineDeployments []WorkerPool `json:"machineDeployments,omitempty"`
	MachinePools       []WorkerPool `json:"machinePools,omitempty"`
}

// WorkerPool is one entry of machineDeployments[] or machinePools[].
type WorkerPool struct {
	Class string `json:"class"`
	Name  string `json:"name"`
	// Replicas nil means something else (the cluster autoscaler) owns the
	// count.
	Replicas *int32       `json:"replicas,omitempty"`
	Metadata PoolMetadata `json:"metadata,omitempty"`
}

// PoolMetadata is applied to the pool's MachineDeployment or MachinePool.
type PoolMetadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ClusterStatus holds what spokekit reads of a cluster's status.
type ClusterStatus struct {
	Phase string `json:"phase,omitempty"`
	// Workers counts the worker machines (v1beta2).
	Workers *ReplicaCounts `json:"workers,omitempty"`
	// Conditions are the v1beta2 conditions in v1beta2 (v1beta1's own,
	// e.g. ControlPlaneReady, in v1beta1).
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// V1Beta2 carries the same counts and conditions in v1beta1.
	V1Beta2 *struct {
		Workers    *ReplicaCounts     `json:"workers,omitempty"`
		Conditions []metav1.Condition `json:"conditions,omitempty"`
	} `json:"v1beta2,omitempty"`
}

// The Cluster conditions that say whether its control plane serves: the
// v1beta2 one, and the v1beta1 one of a Cluster API older than v1.9.
const (
	ClusterControlPlaneAvailableCondition = "ControlPlaneAvailable"
	ClusterControlPlaneReadyCondition     = "ControlPlaneReady"
)

// Condition returns the condition of a type from the v1beta2 conditions
// (either version), else from v1beta1's own, or nil.
func (s ClusterStatus) Condition(t string) *metav1.Condition {
	lists := [][]metav1.Condition{s.Conditions}
	if s.V1Beta2 != nil {
		lists = [][]metav1.Condition{s.V1Beta2.Conditions, s.Conditions}
	}
	for _, conds := range lists {
		for i := range conds {
			if conds[i].Type == t {
				return &conds[i]
			}
		}
	}
	return nil
}

// ReplicaCounts summarises a set of machines.
type ReplicaCounts struct {
	DesiredReplicas *int32 `json:"desiredReplicas,omitempty"`
	Replicas        *int32 `json:"replicas,omitempty"`
	ReadyReplicas   *int32 `json:"readyReplicas,omitempty"`
}

// WorkerCounts returns the worker counts of either version, or nil.
func (s ClusterStatus) WorkerCounts() *ReplicaCounts {
	if s.Workers != nil {
		return s.Workers
	}
	if s.V1Beta2 != nil {
		return s.V1Beta2.Workers
	}
	return nil
}

// MachineDeployment is a set of worker Machines.
type MachineDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              MachineSetSpec   `json:"spec,omitempty"`
	Status            MachineSetStatus `json:"status,omitempty"`
}

// MachinePool is a set of worker machines managed as one group.
type MachinePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              MachineSetSpec   `json:"spec,omitempty"`
	Status            MachineSetStatus `json:"status,omitempty"`
}

// MachineSetSpec is what MachineDeployments and MachinePools share.
type MachineSetSpec struct {
	ClusterName string `json:"clusterName"`
	Replicas    *int32 `json:"replicas,omitempty"`
	// Template.Spec.Version is the Kubernetes version of the pool's machines.
	Template struct {
		Spec struct {
			Version string `json:"version,omitempty"`
		} `json:"spec,omitempty"`
	} `json:"template,omitempty"`
}

// MachineSetStatus is what MachineDeployments and MachinePools report.
type MachineSetStatus struct {
	// ObservedGeneration is the generation of the spec the counts are of.
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
	Replicas           *int32 `json:"replicas,omitempty"`
	ReadyReplicas      *int32 `json:"readyReplicas,omitempty"`
	// UpToDateReplicas counts the machines rolled out to the current spec
	// (v1beta2; in v1beta1 under V1Beta2).
	UpToDateReplicas *int32 `json:"upToDateReplicas,omitempty"`
	// UpdatedReplicas is v1beta1's older count of the same (in v1beta2
	// under Deprecated.V1Beta1).
	UpdatedReplicas *int32 `json:"updatedReplicas,omitempty"`
	V1Beta2         *struct {
		UpToDateReplicas *int32 `json:"upToDateReplicas,omitempty"`
	} `json:"v1beta2,omitempty"`
	Deprecated *struct {
		V1Beta1 *struct {
			UpdatedReplicas *int32 `json:"updatedReplicas,omitempty"`
		} `json:"v1beta1,omitempty"`
	} `json:"deprecated,omitempty"`
}

// Updated is how many machines are rolled out to the current spec, read
// from either version (v1beta2's up-to-date count first), or nil.
func (s MachineSetStatus) Updated() *int32 {
	switch {
	case s.UpToDateReplicas != nil:
		return s.UpToDateReplicas
	case s.V1Beta2 != nil && s.V1Beta2.UpToDateReplicas != nil:
		return s.V1Beta2.UpToDateReplicas
	case s.UpdatedReplicas != nil:
		return s.UpdatedReplicas
	case s.Deprecated != nil && s.Deprecated.V1Beta1 != nil:
		return s.Deprecated.V1Beta1.UpdatedReplicas
	}
	return nil
}

// Machine is one worker (or control-plane) machine.
type Machine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              MachineSpec   `json:"spec,omitempty"`
	Status            MachineStatus `json:"status,omitempty"`
}

// MachineSpec holds what spokekit reads of a machine's spec.
type MachineSpec struct {
	ClusterName string `json:"clusterName"`
}

// MachineStatus holds what spokekit reads of a machine's status.
type MachineStatus struct {
	Phase   string   `json:"phase,omitempty"`
	NodeRef *NodeRef `json:"nodeRef,omitempty"`
	// Conditions are the v1beta2 conditions (status.conditions in v1beta2).
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// V1Beta2 carries the same conditions in v1beta1.
	V1Beta2 *struct {
		Conditions []metav1.Condition `json:"conditions,omitempty"`
	} `json:"v1beta2,omitempty"`
}

// Condition returns the v1beta2 condition of a type, read from either
// version, or nil.
func (s MachineStatus) Condition(t string) *metav1.Condition {
	conds := s.Conditions
	if s.V1Beta2 != nil {
		conds = s.V1Beta2.Conditions
	}
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// NodeRef names the workload cluster's Node of a Machine.
type NodeRef struct {
	Name string `json:"name"`
}

// MachineHealthCheck is the platform's policy for replacing unhealthy machines.
type MachineHealthCheck struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              MachineHealthCheckSpec   `json:"spec,omitempty"`
	Status            MachineHealthCheckStatus `json:"status,omitempty"`
}

// MachineHealthCheckSpec holds what spokekit reads of a health check's spec.
type MachineHealthCheckSpec struct {
	ClusterName string               `json:"clusterName"`
	Selector    metav1.LabelSelector `json:"selector"`
}

// HostedControlPlaneKinds are control planes that run as pods on the
// platform rather than on Machines of the cluster.
var HostedControlPlaneKinds = []string{"KamajiControlPlane"}

// MachineHealthCheckStatus is the health check's count of its machines.
type MachineHealthCheckStatus struct {
	ExpectedMachines    *int32 `json:"expectedMachines,omitempty"`
	CurrentHealthy      *int32 `json:"currentHealthy,omitempty"`
	RemediationsAllowed *int32 `json:"remediationsAllowed,omitempty"`
	// Targets names the machines the health check counted.
	Targets []string `json:"targets,omitempty"`
}

// FromUnstructured is api.FromUnstructured, kept for the Cluster API code
// that reads it from here.
func FromUnstructured[T any](u *unstructured.Unstructured) (*T, error) {
	return api.FromUnstructured[T](u)
}

// ListFromUnstructured is api.ListFromUnstructured.
func ListFromUnstructured[T any](l *unstructured.UnstructuredList) ([]T, error) {
	return api.ListFromUnstructured[T](l)
}

// ClusterClassResource is the resource of ClusterClasses.
const ClusterClassResource = "clusterclasses"

// ClusterClass is the class a topology is built from.
type ClusterClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ClusterClassSpec `json:"spec,omitempty"`
}

// ClusterClassSpec holds what spokekit reads of a class: its worker classes.
type ClusterClassSpec struct {
	Workers struct {
		MachineDeployments []WorkerClass `json:"machineDeployments,omitempty"`
	} `json:"workers,omitempty"`
}

// WorkerClass is one machineDeployment class. Its metadata is applied to
// every MachineDeployment of the class: at metadata in v1beta2, at
// template.metadata in v1beta1.
type WorkerClass struct {
	Class    string       `json:"class"`
	Metadata PoolMetadata `json:"metadata,omitempty"`
	Template struct {
		Metadata PoolMetadata `json:"metadata,omitempty"`
	} `json:"template,omitempty"`
}

// Annotations are the class's annotations for its MachineDeployments, in
// either version.
func (w WorkerClass) Annotations() map[string]string {
	if len(w.Metadata.Annotations) > 0 {
		return w.Metadata.Annotations
	}
	return w.Template.Metadata.Annotations
}

// ClassName names the topology's ClusterClass and its namespace: the Cluster's
// own unless the reference names another.
func (t Topology) ClassName(clusterNamespace string) (namespace, name string) {
	namespace, name = t.ClassNamespace, t.Class
	if t.ClassRef != nil {
		namespace, name = t.ClassRef.Namespace, t.ClassRef.Name
	}
	if namespace == "" {
		namespace = clusterNamespace
	}
	return namespace, name
}
