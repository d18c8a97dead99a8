package harness

// ClusterOption changes how StartCluster starts a cluster.
type ClusterOption func(*clusterOptions)

type clusterOptions struct {
	// extraConfig is appended to the cluster's KwokctlConfiguration.
	extraConfig string
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
