package harness

import (
	"fmt"
	"slices"
	"strings"
)

// ClusterOption changes how StartCluster starts a cluster.
type ClusterOption func(*clusterOptions)

type clusterOptions struct {
	// args are extra flags of the control plane's components, written into
	// the cluster's KwokctlConfiguration as one componentsPatches list.
	args        []componentArg
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
		o.args = append(o.args,
			componentArg{component: "kwok-controller", key: "manage-all-nodes", value: "false", override: true},
			componentArg{component: "kwok-controller", key: "manage-nodes-with-annotation-selector", value: "kwok.x-k8s.io/node=fake"})
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

// kwokctlConfig is the cluster's KwokctlConfiguration: ports (see
// reservePorts) and the options' settings.
func (o clusterOptions) kwokctlConfig(ports []int) string {
	config := kwokctlConfig(ports, o.certSANs)
	if len(o.featureGates) > 0 {
		config += "  kubeFeatureGates: " + strings.Join(o.featureGates, ",") + "\n"
	}
	return config + componentsPatches(append(slices.Clone(singleInstanceArgs), o.args...))
}

// componentArg is one extra flag of a control-plane component, as kwokctl's
// componentsPatches takes it.
type componentArg struct {
	component, key, value string
	// override replaces a flag kwokctl sets itself instead of adding one;
	// kwokctl drops an override of a flag it does not set (with a warning).
	override bool
}

// singleInstanceArgs turn leader election off in the components that have it
// on by default. Each cluster runs one of each, so nothing needs electing; and
// with it on, one lease renewal that misses its deadline on a busy machine
// makes kube-controller-manager or kube-scheduler exit, which kwokctl's binary
// runtime never restarts: CSRs then stay unsigned and pods unscheduled for the
// rest of the run (the CI run of 2026-12-04 lost both in every cluster of
// e2e/spoke and e2e/fleetdrain a minute after they started).
var singleInstanceArgs = []componentArg{
	{component: "kube-controller-manager", key: "leader-elect", value: "false"},
	{component: "kube-scheduler", key: "leader-elect", value: "false"},
}

// componentsPatches renders args as kwokctl's componentsPatches list: one
// entry per component, in the order the components first appear, so that
// several options may each add flags to one component.
func componentsPatches(args []componentArg) string {
	var order []string
	byComponent := map[string][]componentArg{}
	for _, a := range args {
		if _, seen := byComponent[a.component]; !seen {
			order = append(order, a.component)
		}
		byComponent[a.component] = append(byComponent[a.component], a)
	}
	var b strings.Builder
	if len(order) > 0 {
		b.WriteString("componentsPatches:\n")
	}
	for _, c := range order {
		fmt.Fprintf(&b, "- name: %s\n  extraArgs:\n", c)
		for _, a := range byComponent[c] {
			fmt.Fprintf(&b, "  - key: %s\n    value: %q\n", a.key, a.value)
			if a.override {
				b.WriteString("    override: true\n")
			}
		}
	}
	return b.String()
}
