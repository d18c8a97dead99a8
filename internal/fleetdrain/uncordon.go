package fleetdrain

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// UncordonReport lists what `fleetdrain uncordon` gave back.
type UncordonReport struct {
	api.ReportMeta `json:",inline"`
	DryRun         string          `json:"dryRun,omitempty"`
	Items          []UncordonEntry `json:"items"`
}

// UncordonEntry is one node or cluster and whether it changed.
type UncordonEntry struct {
	api.ReportMeta `json:",inline"`
	// Changed is false when there was nothing of ours to give back (a
	// stale mark removed from a schedulable node is only named in Detail).
	Changed bool   `json:"changed"`
	Detail  string `json:"detail"`
}

func (r UncordonReport) table() cli.Table {
	t := cli.Table{Columns: []cli.Column{{Name: "KIND"}, {Name: "NAME"}, {Name: "CHANGED"}, {Name: "DETAIL"}}}
	for _, e := range r.Items {
		t.Rows = append(t.Rows, []string{e.Kind, e.Metadata.Name, fmt.Sprint(e.Changed), e.Detail})
	}
	return t
}

func newCmdUncordon(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "uncordon",
		Short: "Give drained nodes or clusters back to scheduling",
	}
	cli.Group(cmd)
	cmd.AddCommand(newCmdUncordonNode(f, streams), NewCmdUncordonCluster(f, streams))
	return cmd
}

// UncordonNodeOptions are the flags of `fleetdrain uncordon node`.
type UncordonNodeOptions struct {
	genericiooptions.IOStreams
	Output *cli.Output
	Nodes  []string
	DryRun cli.DryRun
	f      *cli.Factory
}

func newCmdUncordonNode(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &UncordonNodeOptions{IOStreams: streams, Output: cli.NewOutput(), f: f}
	cmd := &cobra.Command{
		Use:   "node NODE...",
		Short: "Make drained nodes schedulable again",
		Long: cli.LongDesc(`
			Give back nodes that fleetdrain node cordoned: clear the unschedulable
			flag and the ` + CordonedByAnnotation + ` annotation that
			marks the cordon as fleetdrain's, the only things a node drain sets on
			a node (also after an interrupted drain). Pods evicted by the drain
			are not moved back; new pods can land on the node again. Nodes already
			schedulable are left alone (a mark left there by a plain kubectl
			uncordon is removed). A node someone else cordoned is never
			uncordoned, also when it still carries the mark of an earlier
			fleetdrain cordon: the command refuses before any change and names it.`),
		Example: templates.Examples(`
			# Give two nodes back
			kubectl fleetdrain uncordon node worker-1 worker-2

			# See what would change
			kubectl fleetdrain uncordon node worker-1 --dry-run=client -o yaml`),
		Args:              cli.MinArgs(1, "node name"),
		ValidArgsFunction: cli.ResourceNames(f, "nodes"),
		RunE:              cli.RunE(o, o.Complete),
	}
	cli.AddDryRunFlag(cmd)
	o.Output.AddFlags(cmd)
	return cmd
}

// Complete reads the dry-run strategy and the names.
func (o *UncordonNodeOptions) Complete(cmd *cobra.Command, args []string) error {
	var err error
	o.DryRun, err = cli.GetDryRun(cmd)
	o.Nodes = args
	return err
}

// Validate rejects bad input before any request.
func (o *UncordonNodeOptions) Validate() error {
	if err := cli.ValidateNames(cli.NodeName, o.Nodes...); err != nil {
		return err
	}
	return o.Output.Validate()
}

// Run gives back every node fleetdrain cordoned. It refuses, before any
// change, when a named node was cordoned by someone else.
func (o *UncordonNodeOptions) Run(ctx context.Context) error {
	client, err := o.f.KubernetesClientSet()
	if err != nil {
		return err
	}
	lifecycle := LifecycleConditionsServed(ctx, client)
	needs := []authz.Permission{core("patch", "nodes", "", "")}
	if lifecycle {
		needs = append(needs, core("patch", "nodes", "status", ""))
	}
	if err := preflight(ctx, client.AuthorizationV1(), o.DryRun, needs); err != nil {
		return err
	}
	report := UncordonReport{ReportMeta: api.NewReportMeta("UncordonReport", "nodes"), DryRun: cli.DryRunName(o.DryRun)}
	var nodes []*corev1.Node
	var others []string
	for _, name := range o.Nodes {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return exitcode.RefusedErrorf("node %q not found; nothing was changed", name)
		}
		if err != nil {
			return fmt.Errorf("reading node %s: %w; nothing was changed", name, err)
		}
		if giveBackResult(n) == CordonedByOther {
			others = append(others, name)
		}
		nodes = append(nodes, n)
	}
	if len(others) > 0 {
		return exitcode.RefusedErrorf("node(s) %s were cordoned by someone else, not by fleetdrain (their cordon carries no %s annotation, or was made again since by another field manager), and stay cordoned; nothing was changed. If you mean to give them back anyway: kubectl uncordon %s",
			strings.Join(others, ", "), CordonedByAnnotation, strings.Join(others, " "))
	}
	for i, name := range o.Nodes {
		e := UncordonEntry{ReportMeta: api.NewReportMeta(api.NodeKind.Kind, name)}
		result := giveBackResult(nodes[i])
		var err error
		if o.DryRun != cli.DryRunClient {
			result, err = GiveBack(ctx, client, name, o.DryRun)
		}
		if err == nil && result == GaveBack && lifecycle && o.DryRun == cli.DryRunNone && hasDrainConditions(nodes[i]) {
			err = setDrainConditions(ctx, client, name, false, false, reasonUncordoned, "kubectl fleetdrain: "+conditionMessages[reasonUncordoned])
		}
		if err != nil {
			return fmt.Errorf("%w; %s", err, uncordonedSoFar(o.Nodes, report))
		}
		e.Changed, e.Detail = result == GaveBack, string(result)
		report.Items = append(report.Items, e)
	}
	return o.Output.Print(o.Out, report, report.table)
}

// uncordonedSoFar says what an interrupted or failed uncordon gave back:
// the first len(r.Items) of names were done.
func uncordonedSoFar(names []string, r UncordonReport) string {
	var done []string
	for i, e := range r.Items {
		if e.Changed {
			done = append(done, names[i])
		}
	}
	if len(done) == 0 {
		return "nothing was given back"
	}
	return "given back before it: " + strings.Join(done, ", ")
}

// UncordonClusterOptions are the flags of `fleetdrain uncordon cluster`.
type UncordonClusterOptions struct {
	clusterTargets
}

// NewCmdUncordonCluster builds `kubectl fleetdrain uncordon cluster`.
func NewCmdUncordonCluster(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &UncordonClusterOptions{clusterTargets: newClusterTargets(f, streams)}
	cmd := &cobra.Command{
		Use:   "cluster NAME...",
		Short: "Let placements select drained spoke clusters again",
		Long: cli.LongDesc(`
			Run against the hub. Removes the ` + DrainTaintKey + ` taint that
			` + "`kubectl fleetdrain cluster`" + ` added to each ManagedCluster, and no
			other taint (the hub's unavailable/unreachable taints and those of other
			tools stay). Placements may then select the cluster again.`),
		Example: templates.Examples(`
			# Give spoke-1 back to the fleet
			kubectl fleetdrain uncordon cluster spoke-1

			# See what would change
			kubectl fleetdrain uncordon cluster spoke-1 --dry-run=client`),
		Args:              cli.MinArgs(1, "cluster name"),
		ValidArgsFunction: cli.ResourceNames(f, managedClusters),
		RunE:              cli.RunE(o, o.Complete),
	}
	cli.AddDryRunFlag(cmd)
	o.Output.AddFlags(cmd)
	return cmd
}

// Run removes the drain taint from every named cluster that has it.
func (o *UncordonClusterOptions) Run(ctx context.Context) error {
	if err := o.connect(); err != nil {
		return err
	}
	d := o.dynamic
	for _, name := range o.Clusters {
		if _, err := getManagedCluster(ctx, d, name); err != nil {
			return err
		}
	}
	if err := preflight(ctx, o.access, o.DryRun, clusterAccess(o.Clusters, false)); err != nil {
		return err
	}
	report := UncordonReport{ReportMeta: api.NewReportMeta("UncordonReport", "clusters"), DryRun: cli.DryRunName(o.DryRun)}
	for _, name := range o.Clusters {
		e := UncordonEntry{ReportMeta: api.NewReportMeta(ocm.ManagedClusterKind.Kind, name)}
		if o.DryRun == cli.DryRunClient {
			mc, err := getManagedCluster(ctx, d, name)
			if err != nil {
				return err
			}
			e.Changed = drainTaintIndex(mc) >= 0
		} else {
			var err error
			if e.Changed, err = removeDrainTaint(ctx, d, name, o.DryRun); err != nil {
				return fmt.Errorf("%w; %s", err, uncordonedSoFar(o.Clusters, report))
			}
		}
		e.Detail = "no drain taint"
		if e.Changed {
			e.Detail = "drain taint removed"
		}
		report.Items = append(report.Items, e)
	}
	return o.Output.Print(o.Out, report, report.table)
}

// Subjects are the Nodes or ManagedClusters, for -o name.
func (r UncordonReport) Subjects() []string {
	names := make([]string, 0, len(r.Items))
	for _, e := range r.Items {
		kind := api.NodeKind
		if e.Kind == ocm.ManagedClusterKind.Kind {
			kind = ocm.ManagedClusterKind
		}
		names = append(names, api.ObjectName(kind, e.Metadata.Name))
	}
	return names
}
