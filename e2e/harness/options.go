package harness

// ClusterOption changes how StartCluster starts a cluster.
type ClusterOption func(*clusterOptions)

type clusterOptions struct {
	// extraConfig is appended to the cluster's KwokctlConfiguration.
	extraConfig string
	auditWrites bool
	// featureGates are NAME=true|false pairs for the control plane's
	// components (kwokctl's kubeFeatureGates).
	featureGates []string
	// certSANs are addresses the API server's certificate names besides
	// kwokctl's own (localhost and the machine's addresses).
	certSANs []string
}

// KwokManagesAnnotatedNodesOnly makes the cluster's kwok controller play the
// kubelet only for Nodes annotated kwok.x-k8s.io/node=fake (the binary
// runtime otherwise manages every Node). Any other Node has no kubelet and
// stays NotReady, as a broken machine's node would.
func KwokManagesAnnotatedNodesOnly() ClusterOption {
	return func(o *clusterOptions) {
		o.extraConfig += `componentsPatches:
- name: kwok-controller
  extraArgs:
  - key: manage-all-nodes
    value: "false"
    override: true
  - key: manage-nodes-with-annotation-selector
    value: kwok.x-k8s.io/node=fake
`
	}
}

// AuditWrites makes the cluster's API server write an audit log of every
// write request (metadata only: who, which object, which verb), so a test can
// count one client's writes among the controllers' (see Cluster.Writes).
func AuditWrites() ClusterOption {
	return func(o *clusterOptions) { o.auditWrites = true }
}

const auditWritesPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
- level: None
`

// FeatureGates turns Kubernetes feature gates on or off (NAME=true|false)
// in the cluster's API server, controller manager and scheduler, e.g. an
// alpha gate a test needs.
func FeatureGates(gates ...string) ClusterOption {
	return func(o *clusterOptions) { o.featureGates = append(o.featureGates, gates...) }
}
