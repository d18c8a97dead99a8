package fleetdrain

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
)

// ManagementCluster is where the Machines of the drained nodes live, with
// their Clusters and MachineDrainRules.
type ManagementCluster struct {
	Dynamic dynamic.Interface
	// Source names it in the plan and in errors.
	Source string
	// Given: the user named it (--platform-kubeconfig), so a cluster that
	// does not serve Cluster API there is a refusal. The current context is
	// only used when it serves the Machine.
	Given bool
}

// platformKubeconfigFlag is the flag of the management cluster's kubeconfig.
const platformKubeconfigFlag = "platform-kubeconfig"

// managementCluster is the cluster --platform-kubeconfig names, or else the
// current context: a cluster that holds the Machines of its own nodes.
func managementCluster(f *cli.Factory, file string) (*ManagementCluster, error) {
	if file != "" {
		cfg, err := kubeconfig.UserRESTConfig(file)
		if err != nil {
			return nil, exitcode.RefusedError(fmt.Errorf("loading --%s %s: %w; nothing was changed", platformKubeconfigFlag, file, err))
		}
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("client for the management cluster from %s: %w", file, err)
		}
		return &ManagementCluster{Dynamic: dyn, Source: "--" + platformKubeconfigFlag + " " + file, Given: true}, nil
	}
	dyn, err := f.DynamicClient()
	if err != nil {
		return nil, err
	}
	return &ManagementCluster{Dynamic: dyn, Source: "the current context"}, nil
}

// rulesNotRead is the plan's note for a Machine's node whose
// MachineDrainRules no management cluster gave.
const rulesNotRead = "MachineDrainRules not read (pass --" + platformKubeconfigFlag + ", the management cluster's kubeconfig, to drain as Cluster API does): only the pods' " + capi.PodDrainLabel + " labels decide"

// ReadNodeRules reads what decides the drain of each node that belongs to a
// Machine (annotation cluster.x-k8s.io/machine), by node name: its
// Machine, Cluster and MachineDrainRules from the management cluster and
// the workload cluster's namespaces (with no management cluster, mgmt nil,
// only the pods' labels decide). A management cluster the user named
// that cannot say is a refusal (exit 3): a drain that guessed could evict
// what Cluster API's keeps, or skip what it waits for.
func ReadNodeRules(ctx context.Context, mgmt *ManagementCluster, workload kubernetes.Interface, nodes []*corev1.Node) (map[string]NodeRules, error) {
	out := map[string]NodeRules{}
	var namespaces map[string]*corev1.Namespace
	for _, n := range nodes {
		name := n.Annotations[capi.MachineAnnotation]
		if name == "" {
			continue
		}
		ns := n.Annotations[capi.ClusterNamespaceAnnotation]
		rules := NodeRules{Machine: namespacedName(ns, name), Source: rulesNotRead}
		if mgmt == nil {
			out[n.Name] = rules
			continue
		}
		refuse := func(err error) error {
			return exitcode.RefusedError(fmt.Errorf("cannot read the drain rules of node %s (Machine %s) from %s: %w; nothing was changed", n.Name, rules.Machine, mgmt.Source, err))
		}
		if ns == "" {
			if mgmt.Given {
				return nil, refuse(fmt.Errorf("the node has no %s annotation to find its Machine by", capi.ClusterNamespaceAnnotation))
			}
			rules.Machine = name
			out[n.Name] = rules
			continue
		}
		found, err := mgmt.machineRules(ctx, ns, name)
		switch {
		case err == nil:
		case !mgmt.Given && found == nil:
			// The current context is not this node's management cluster.
			out[n.Name] = rules
			continue
		default:
			return nil, refuse(err)
		}
		if len(found) > 0 && namespaces == nil {
			if namespaces, err = listNamespaces(ctx, workload); err != nil {
				return nil, refuse(err)
			}
		}
		rules.Rules, rules.Namespaces = found, namespaces
		rules.Source = fmt.Sprintf("%d MachineDrainRule(s) of namespace %s apply (read from %s)", len(found), ns, mgmt.Source)
		out[n.Name] = rules
	}
	return out, nil
}

// machineRules reads the Machine ns/name, its Cluster and the rules of the
// namespace, and returns the rules that apply to it (never nil then). It
// returns nil and an error when the cluster does not serve Cluster API or
// holds no such Machine, a non-nil empty list with an error when it holds
// the Machine and something else failed.
func (m *ManagementCluster) machineRules(ctx context.Context, ns, name string) ([]capi.MachineDrainRule, error) {
	var list *unstructured.UnstructuredList
	var version string
	var err error
	for _, version = range capi.Versions {
		list, err = m.Dynamic.Resource(capi.GVR(version, capi.MachineDrainRuleResource)).Namespace(ns).List(ctx, metav1.ListOptions{})
		if !apierrors.IsNotFound(err) {
			break
		}
	}
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("it serves no MachineDrainRules (%s %v): is it the management cluster?", capi.MachineDrainRuleKind, capi.Versions)
	}
	if err != nil {
		return nil, fmt.Errorf("listing the MachineDrainRules of namespace %s: %w", ns, err)
	}
	u, err := m.Dynamic.Resource(capi.GVR(version, capi.MachineResource)).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("machine %s/%s not found there: is it the management cluster of this cluster?", ns, name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading Machine %s/%s: %w", ns, name, err)
	}
	machine, err := api.FromUnstructured[capi.Machine](u)
	if err != nil {
		return []capi.MachineDrainRule{}, fmt.Errorf("reading Machine %s/%s: %w", ns, name, err)
	}
	u, err = m.Dynamic.Resource(capi.GVR(version, capi.ClusterResource)).Namespace(ns).Get(ctx, machine.Spec.ClusterName, metav1.GetOptions{})
	if err != nil {
		return []capi.MachineDrainRule{}, fmt.Errorf("reading Cluster %s/%s of Machine %s: %w", ns, machine.Spec.ClusterName, name, err)
	}
	cluster, err := api.FromUnstructured[capi.Cluster](u)
	if err != nil {
		return []capi.MachineDrainRule{}, fmt.Errorf("reading Cluster %s/%s: %w", ns, machine.Spec.ClusterName, err)
	}
	all, err := api.ListFromUnstructured[capi.MachineDrainRule](list)
	if err != nil {
		return []capi.MachineDrainRule{}, fmt.Errorf("reading the MachineDrainRules of namespace %s: %w", ns, err)
	}
	rules, err := RulesForMachine(all, machine, cluster)
	if err != nil {
		return []capi.MachineDrainRule{}, err
	}
	if rules == nil {
		rules = []capi.MachineDrainRule{}
	}
	return rules, nil
}

func listNamespaces(ctx context.Context, workload kubernetes.Interface) (map[string]*corev1.Namespace, error) {
	list, err := workload.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the workload cluster's namespaces (the rules' namespace selectors match their labels): %w", err)
	}
	out := map[string]*corev1.Namespace{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// readRules reads the drain rules of the nodes that belong to a Machine
// (none: no request).
func (o *NodeOptions) readRules(ctx context.Context, nodes []*corev1.Node) (map[string]NodeRules, error) {
	if !slices.ContainsFunc(nodes, func(n *corev1.Node) bool { return n.Annotations[capi.MachineAnnotation] != "" }) {
		return nil, nil
	}
	var mgmt *ManagementCluster
	// Without a factory (a test's options) there is no current context.
	if o.f != nil || o.PlatformKubeconfig != "" {
		var err error
		if mgmt, err = managementCluster(o.f, o.PlatformKubeconfig); err != nil {
			return nil, err
		}
	}
	return ReadNodeRules(ctx, mgmt, o.client, nodes)
}
