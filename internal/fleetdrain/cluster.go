package fleetdrain

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
)

// managedClusters is the resource that cluster names complete from.
const managedClusters = "managedclusters.cluster.open-cluster-management.io"

// ClusterOptions are the flags of `fleetdrain cluster`.
type ClusterOptions struct {
	clusterTargets
	Timeout time.Duration
}

// NewCmdCluster builds `kubectl fleetdrain cluster`.
func NewCmdCluster(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ClusterOptions{clusterTargets: newClusterTargets(f, streams), Timeout: 5 * time.Minute}
	cmd := &cobra.Command{
		Use:   "cluster NAME...",
		Short: "Take spoke clusters out of the fleet's placements and wait for their workloads to leave",
		Long: templates.LongDesc(`
			Run against the hub. Adds a NoSelect taint with the key
			` + DrainTaintKey + ` to each ManagedCluster, so every placement that
			does not tolerate it drops the cluster, then waits until the
			ManifestWorks those placements put in the cluster's namespace are gone.

			The report lists what stays: works no placement owns (made by hand;
			they also block ` + "`kubectl spoke remove`" + `), and works whose placement
			tolerates the taint. A placement that tolerates it for
			tolerationSeconds lets its works go when those run out (counted from
			the taint's timeAdded): the report says when, and the wait includes
			them. --dry-run lists what would move, when, and what would stay.
			Other taints are never touched; ` + "`kubectl fleetdrain uncordon cluster`" + `
			removes the drain taint again. A spoke a Compute Pool owns (label
			` + fleetconfig.ComputePoolLabel + ` or an owner of kind
			` + fleetconfig.ComputePoolKind + `, on its Spoke or ManagedCluster) is
			refused (exit 3): the Compute Pool manages it.`),
		Example: templates.Examples(`
			# What would leave spoke-1, and what would stay
			kubectl fleetdrain cluster spoke-1 --dry-run=client

			# Drain two spokes, waiting up to 10 minutes for their workloads to leave
			kubectl fleetdrain cluster spoke-1 spoke-2 --timeout 10m

			# The report as YAML
			kubectl fleetdrain cluster spoke-1 -o yaml`),
		Args:              cli.MinArgs(1, "cluster name"),
		ValidArgsFunction: cli.ResourceNames(f, managedClusters),
		RunE:              cli.RunE(o, o.Complete),
	}
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "How long to wait for the placement-managed ManifestWorks to leave each cluster, then exit 4 (0: no limit)")
	cli.AddDryRunFlag(cmd)
	o.Output.AddFlags(cmd)
	return cmd
}

// Validate rejects bad input before any request.
func (o *ClusterOptions) Validate() error {
	if err := o.clusterTargets.Validate(); err != nil {
		return err
	}
	return cli.ValidateTimeout(o.Timeout)
}

// Run has the node command's shape: plan every cluster (refusing unknown
// ones, and spokes a Compute Pool owns, before any change), check access,
// taint them, wait for the moving works to be gone, then one report.
func (o *ClusterOptions) Run(ctx context.Context) error {
	if err := o.connect(); err != nil {
		return err
	}
	report, err := o.planClusters(ctx)
	if err != nil {
		return err
	}
	if err := o.taintClusters(ctx); err != nil {
		return err
	}
	waitErr := o.waitClusters(ctx, &report)
	if err := o.Output.Print(o.Out, report, report.table); err != nil {
		return err
	}
	if o.Output.IsTable() && report.hasStays() {
		fmt.Fprintln(o.ErrOut, "Works that stay keep their clusters from `kubectl spoke remove` until they are deleted or their owners move them.")
	}
	return waitErr
}

// planClusters reads and plans every cluster; nothing is changed.
func (o *ClusterOptions) planClusters(ctx context.Context) (ClusterDrainReport, error) {
	report := ClusterDrainReport{ReportMeta: api.NewReportMeta("ClusterDrainReport", "clusters"), DryRun: cli.DryRunName(o.DryRun)}
	for _, name := range o.Clusters {
		mc, err := getManagedCluster(ctx, o.dynamic, name)
		if err != nil {
			return report, err
		}
		if err := refuseComputePool(ctx, o.dynamic, mc); err != nil {
			return report, err
		}
		plan, err := o.plan(ctx, mc)
		if err != nil {
			return report, err
		}
		plan.AlreadyTainted = drainTaintIndex(mc) >= 0
		report.Items = append(report.Items, plan)
	}
	return report, nil
}

// taintClusters checks access and adds the drain taint to every cluster
// (sent with dryRun under --dry-run=server; nothing under =client).
func (o *ClusterOptions) taintClusters(ctx context.Context) error {
	if o.DryRun == cli.DryRunClient {
		return nil
	}
	if err := preflight(ctx, o.access, o.DryRun, clusterAccess(o.Clusters, o.DryRun == cli.DryRunNone)); err != nil {
		return err
	}
	for i, name := range o.Clusters {
		if err := addDrainTaint(ctx, o.dynamic, name, o.DryRun); err != nil {
			return taintError(err, o.Clusters[:i], o.Clusters[i:])
		}
		if o.DryRun == cli.DryRunNone {
			fmt.Fprintf(o.ErrOut, "managedcluster/%s tainted %s:NoSelect\n", name, DrainTaintKey)
		}
	}
	return nil
}

// waitClusters waits, cluster by cluster, for the moving works to leave,
// and sets each cluster's result. Its error is the run's outcome: a wait
// that stopped (every cluster is tainted, the rest not drained), or the
// clusters whose works did not leave within --timeout (exit 4).
func (o *ClusterOptions) waitClusters(ctx context.Context, report *ClusterDrainReport) error {
	if o.DryRun != cli.DryRunNone {
		return nil
	}
	var timedOut []string
	progress := cli.NewProgress(o.ErrOut)
	for i, name := range o.Clusters {
		err := o.waitMoved(ctx, name, report.Items[i].Moves, progress)
		if cli.ExitCode(err) == cli.ExitTimedOut {
			report.Items[i].Result = ClusterTimedOut
			timedOut = append(timedOut, name)
			continue
		}
		if err != nil {
			for j := i; j < len(report.Items); j++ {
				report.Items[j].Result = ClusterNotDrained
			}
			return fmt.Errorf("%w; the drain taint is on %s: run the same command again to keep waiting, or give them back with `kubectl fleetdrain uncordon cluster %s`",
				err, strings.Join(o.Clusters, ", "), strings.Join(o.Clusters, " "))
		}
		report.Items[i].Result = ClusterDrained
	}
	if len(timedOut) > 0 {
		return cli.TimedOut(fmt.Errorf("placement-managed works did not leave %s within %s; the taint stays on: run the same command again to keep waiting",
			strings.Join(timedOut, ", "), o.Timeout))
	}
	return nil
}

// refuseComputePool refuses (exit 3) a cluster whose spoke a Compute Pool
// owns: the pool registers and removes it by itself, as `kubectl spoke`
// refuses too. The marks are read on the ManagedCluster and on the Spoke of
// the same name, in any namespace; a Spoke list that fails for any reason
// but a hub without FleetConfig is a check that could not be made, and
// refuses as well.
func refuseComputePool(ctx context.Context, d dynamic.Interface, mc *ocm.ManagedCluster) error {
	refuse := func(kind, pool string) error {
		return cli.Refusedf("cluster %s belongs to Compute Pool %q (the %s carries %s or an owner of kind %s), which registers and removes it by itself; nothing was changed: change or delete the Compute Pool instead",
			mc.Name, pool, kind, fleetconfig.ComputePoolLabel, fleetconfig.ComputePoolKind)
	}
	if pool := fleetconfig.ComputePoolOf(mc); pool != "" {
		return refuse("ManagedCluster", pool)
	}
	spokes, err := d.Resource(fleetconfig.SpokeResource).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", mc.Name).String()})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil
	}
	if err != nil {
		return cli.Refusedf("cannot tell whether a Compute Pool owns cluster %s: listing Spokes: %w; nothing was changed", mc.Name, err)
	}
	for i := range spokes.Items {
		if spokes.Items[i].GetName() != mc.Name {
			continue // the field selector is the server's; the name is checked here too
		}
		if pool := fleetconfig.ComputePoolOf(&spokes.Items[i]); pool != "" {
			return refuse("Spoke "+spokes.Items[i].GetNamespace()+"/"+mc.Name, pool)
		}
	}
	return nil
}

// taintError says, when tainting stopped part way, which clusters carry the
// drain taint and which do not.
func taintError(err error, tainted, not []string) error {
	done := "none"
	if len(tainted) > 0 {
		done = fmt.Sprintf("%s (`kubectl fleetdrain uncordon cluster %s` gives them back)", strings.Join(tainted, ", "), strings.Join(tainted, " "))
	}
	return fmt.Errorf("%w; drain taint added: %s; not added: %s: run the same command again to drain them all",
		err, done, strings.Join(not, ", "))
}

func (o *ClusterOptions) plan(ctx context.Context, mc *ocm.ManagedCluster) (ClusterReport, error) {
	cluster := mc.Name
	works, err := o.dynamic.Resource(ocm.ManifestWorkResource).Namespace(cluster).List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return ClusterReport{}, worksRefusal(ctx, o.f, cluster)
	}
	if err != nil {
		return ClusterReport{}, fmt.Errorf("listing the ManifestWorks of cluster %s: %w; nothing was changed", cluster, err)
	}
	list, err := o.dynamic.Resource(ocm.PlacementResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ClusterReport{}, fmt.Errorf("listing Placements: %w; nothing was changed", err)
	}
	placements, err := api.ListFromUnstructured[ocm.Placement](list)
	if err != nil {
		return ClusterReport{}, err
	}
	return PlanCluster(cluster, workMetadata(works.Items), placements, mc.Spec.Taints, time.Now()), nil
}

func workMetadata(items []unstructured.Unstructured) []metav1.PartialObjectMetadata {
	out := make([]metav1.PartialObjectMetadata, len(items))
	for i, u := range items {
		out[i] = metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), Labels: u.GetLabels()}}
	}
	return out
}

// waitMoved watches the cluster's namespace until none of the moving works is left.
func (o *ClusterOptions) waitMoved(ctx context.Context, cluster string, moves []WorkEntry, p *cli.Progress) error {
	want := map[string]bool{}
	for _, w := range moves {
		want[w.Name] = true
	}
	lw := cli.ListWatch(o.dynamic.Resource(ocm.ManifestWorkResource).Namespace(cluster), "", "")
	return cli.WaitFor(ctx, "placement works leaving "+cluster, lw, &unstructured.Unstructured{}, o.Timeout, p, func(objs []any) (bool, string, error) {
		left := 0
		for _, obj := range objs {
			if want[obj.(*unstructured.Unstructured).GetName()] {
				left++
			}
		}
		return left == 0, fmt.Sprintf("%d of %d placement works left", left, len(moves)), nil
	})
}
