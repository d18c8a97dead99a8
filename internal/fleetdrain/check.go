package fleetdrain

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// CheckOptions are the flags and clients of `fleetdrain check`.
type CheckOptions struct {
	genericiooptions.IOStreams
	Output *cli.Output

	Nodes         []string
	Selector      string
	AllowEmptyDir bool
	ChunkSize     int64
	// PlatformKubeconfig is the management cluster's kubeconfig file.
	PlatformKubeconfig string

	f      *cli.Factory
	client kubernetes.Interface
}

// NewCmdCheck builds `kubectl fleetdrain check`.
func NewCmdCheck(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &CheckOptions{IOStreams: streams, Output: cli.NewOutput(), ChunkSize: cli.DefaultChunkSize, f: f}
	cmd := &cobra.Command{
		Use:   "check [NODE... | -l SELECTOR]",
		Short: "List what replacing a node would block, break or lose, changing nothing",
		Long: cli.LongDesc(`
			Check whether the workloads of a cluster tolerate the replacement of a
			worker node (a MachineHealthCheck replacing an unhealthy machine, an
			upgrade, a drain by hand). It reads the cluster and changes nothing.

			Run it with the workload cluster's kubeconfig (--kubeconfig, as for
			fleetdrain node). It checks every node, or the nodes named or
			selected with -l, and reports:

			* Blocks: a PodDisruptionBudget that allows no disruption now and
			  protects pods of these nodes: their drain waits on it;
			* LosesData: pods keeping state on the node (hostPath volumes,
			  emptyDir volumes, node-local PersistentVolumes) and pods no
			  controller re-creates. A PersistentVolume is node-local when it is
			  a local or hostPath one, or when its node affinity pins it to one
			  node, as TopoLVM, OpenEBS LocalPV and local-path CSI drivers
			  provision them: every term requires one value of the node's name,
			  its kubernetes.io/hostname, or a label the node carries with its own
			  name (topology.topolvm.io/node, openebs.io/nodename). A zonal volume
			  is not. Whether an emptyDir holds data that matters cannot be seen
			  from the API, so it counts as "may lose data" unless
			  --allow-emptydir says emptyDir volumes are scratch space;
			* CannotTell: a claim whose volume cannot be told: the claim is not
			  found, is bound to no PersistentVolume, or its PersistentVolume is
			  not found;
			* Disrupts: Deployments and StatefulSets of one replica (down until
			  their pod runs elsewhere), and StatefulSets of two or more replicas,
			  or Deployments of a well-known quorum system (etcd, ZooKeeper,
			  Kafka, ...), with no PodDisruptionBudget, and pods whose replacement
			  comes back to the node (they tolerate the cordon, or their template
			  pins spec.nodeName) or has nowhere to go (their node selector or
			  affinity names this node itself, which no new node of the pool
			  matches);
			* on a Cluster API Machine's node, what the Machine controller's
			  drain in the next rollout does differently from an eviction (the
			  pod label cluster.x-k8s.io/drain, and with --platform-kubeconfig
			  the MachineDrainRules): pods it leaves, pods it waits for until
			  they complete, pods it evicts in an earlier or later batch (Notes).

			DaemonSet pods and mirror (static) pods are left out: a new node runs
			them again (without what they kept on the old node).

			Exit 0 when nothing would block or lose data (Disrupts findings are
			listed and do not fail the check), exit 3 when something would, or
			cannot be told, with each such finding named.`),
		Example: templates.Examples(`
			# Can any worker of the cluster be replaced safely?
			kubectl fleetdrain check --kubeconfig app.kubeconfig

			# The nodes of one pool, with each finding's pods
			kubectl fleetdrain check -l pool=md-0 -o wide

			# Two nodes; emptyDir volumes are only scratch space here
			kubectl fleetdrain check worker-1 worker-2 --allow-emptydir

			# The objects to fix, for kubectl
			kubectl fleetdrain check -o name`),
		ValidArgsFunction: cli.ResourceNames(f, "nodes"),
		RunE:              cli.RunE(o, o.Complete),
	}
	flags := cmd.Flags()
	flags.StringVarP(&o.Selector, "selector", "l", o.Selector, "Check the nodes matching this label selector instead of named nodes")
	flags.BoolVar(&o.AllowEmptyDir, "allow-emptydir", o.AllowEmptyDir, "Take emptyDir volumes as scratch space: list them as notes, not as data that may be lost")
	flags.StringVar(&o.PlatformKubeconfig, platformKubeconfigFlag, o.PlatformKubeconfig, "Kubeconfig of the management cluster: say what Cluster API's drain of the next rollout does with each pod (MachineDrainRules)")
	cli.AddChunkSizeFlag(cmd, &o.ChunkSize)
	o.Output.AddFlags(cmd)
	return cmd
}

// Complete reads the node names.
func (o *CheckOptions) Complete(_ *cobra.Command, args []string) error {
	o.Nodes = args
	return nil
}

// Validate rejects bad flags before any request.
func (o *CheckOptions) Validate() error {
	if err := o.Output.Validate(); err != nil {
		return err
	}
	if len(o.Nodes) > 0 && o.Selector != "" {
		return exitcode.UsageErrorf("name nodes or select them with -l, not both")
	}
	if err := cli.ValidateNames(cli.NodeName, o.Nodes...); err != nil {
		return err
	}
	if err := cli.ValidateChunkSize(o.ChunkSize); err != nil {
		return err
	}
	return cli.ValidateSelector("--selector", o.Selector)
}

// Run reads the cluster, plans the findings and prints them.
func (o *CheckOptions) Run(ctx context.Context) error {
	var err error
	if o.client, err = o.f.KubernetesClientSet(); err != nil {
		return err
	}
	in, err := o.read(ctx)
	if err != nil {
		return err
	}
	in.AllowEmptyDir = o.AllowEmptyDir
	report := PlanCheck(in)
	if len(report.Items) > 0 || !o.Output.IsTable() {
		if err := o.Output.Print(o.Out, report, report.table); err != nil {
			return err
		}
	}
	if o.Output.IsTable() {
		if len(report.Skipped) > 0 {
			fmt.Fprintf(o.ErrOut, "Left out: %d DaemonSet and mirror (static) pod(s): a new node runs them again.\n", len(report.Skipped))
		}
		if len(report.failing()) == 0 {
			fmt.Fprintf(o.ErrOut, "Nothing would block a replacement of %d node(s) or lose data.\n", len(report.Nodes))
		}
	}
	return report.outcome()
}

// read lists what the plan needs. A list that fails means the check cannot
// check: it refuses (exit 3) rather than report a clear cluster.
func (o *CheckOptions) read(ctx context.Context) (CheckInput, error) {
	var in CheckInput
	nodes, err := o.selectNodes(ctx)
	if err != nil {
		return in, err
	}
	sel := &NodeOptions{f: o.f, client: o.client, PlatformKubeconfig: o.PlatformKubeconfig}
	if in.Rules, err = sel.readRules(ctx, nodes); err != nil {
		return in, err
	}
	in.NodeLabels = map[string]map[string]string{}
	for _, n := range nodes {
		in.Nodes = append(in.Nodes, n.Name)
		in.NodeLabels[n.Name] = n.Labels
	}
	cannot := func(err error) error { return exitcode.RefusedError(fmt.Errorf("cannot check: %w", err)) }
	all := metav1.ListOptions{}
	if len(o.Nodes) == 0 && o.Selector == "" {
		if in.Pods, err = listed[corev1.Pod](ctx, o.client.CoreV1().Pods("").List, o.ChunkSize, all); err != nil {
			return in, cannot(fmt.Errorf("listing pods: %w", err))
		}
	} else {
		for _, n := range in.Nodes {
			on := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n).String()}
			pods, err := listed[corev1.Pod](ctx, o.client.CoreV1().Pods("").List, o.ChunkSize, on)
			if err != nil {
				return in, cannot(fmt.Errorf("listing the pods of node %s: %w", n, err))
			}
			in.Pods = append(in.Pods, pods...)
		}
	}
	budgets, err := listed[policyv1.PodDisruptionBudget](ctx, o.client.PolicyV1().PodDisruptionBudgets("").List, o.ChunkSize, all)
	if err != nil {
		return in, cannot(fmt.Errorf("listing PodDisruptionBudgets: %w", err))
	}
	for i := range budgets {
		in.Budgets = append(in.Budgets, &budgets[i])
	}
	if in.Deployments, err = listed[appsv1.Deployment](ctx, o.client.AppsV1().Deployments("").List, o.ChunkSize, all); err != nil {
		return in, cannot(fmt.Errorf("listing Deployments: %w", err))
	}
	if in.StatefulSets, err = listed[appsv1.StatefulSet](ctx, o.client.AppsV1().StatefulSets("").List, o.ChunkSize, all); err != nil {
		return in, cannot(fmt.Errorf("listing StatefulSets: %w", err))
	}
	if in.ReplicaSets, err = listed[appsv1.ReplicaSet](ctx, o.client.AppsV1().ReplicaSets("").List, o.ChunkSize, all); err != nil {
		return in, cannot(fmt.Errorf("listing ReplicaSets: %w", err))
	}
	// Claims and volumes only matter, and are only read, when a pod mounts a claim.
	if slices.ContainsFunc(in.Pods, mountsClaim) {
		if in.Claims, err = listed[corev1.PersistentVolumeClaim](ctx, o.client.CoreV1().PersistentVolumeClaims("").List, o.ChunkSize, all); err != nil {
			return in, cannot(fmt.Errorf("listing PersistentVolumeClaims: %w", err))
		}
		if in.Volumes, err = listed[corev1.PersistentVolume](ctx, o.client.CoreV1().PersistentVolumes().List, o.ChunkSize, all); err != nil {
			return in, cannot(fmt.Errorf("listing PersistentVolumes: %w", err))
		}
	}
	return in, nil
}

// selectNodes reads the named or selected nodes as fleetdrain node does,
// or lists every node.
func (o *CheckOptions) selectNodes(ctx context.Context) ([]*corev1.Node, error) {
	if len(o.Nodes) > 0 || o.Selector != "" {
		sel := &NodeOptions{client: o.client, Nodes: o.Nodes, Selector: o.Selector, ChunkSize: o.ChunkSize}
		return sel.selectNodes(ctx)
	}
	nodes, err := listed[corev1.Node](ctx, o.client.CoreV1().Nodes().List, o.ChunkSize, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	out := make([]*corev1.Node, len(nodes))
	for i := range nodes {
		out[i] = &nodes[i]
	}
	return out, nil
}

func mountsClaim(p corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.PersistentVolumeClaim != nil })
}

// listed lists every object of a kind in pages of size, as values.
func listed[T any, L runtime.Object](ctx context.Context, list func(context.Context, metav1.ListOptions) (L, error), size int64, opts metav1.ListOptions) ([]T, error) {
	var out []T
	pager := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return list(ctx, opts) }
	err := cli.EachInChunks(ctx, pager, size, opts, func(item *T) error {
		out = append(out, *item)
		return nil
	})
	return out, err
}
