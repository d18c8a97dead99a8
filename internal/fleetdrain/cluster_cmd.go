package fleetdrain

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
)

// managedClusters is the resource that cluster names complete from.
const managedClusters = "managedclusters.cluster.open-cluster-management.io"

// ClusterOptions are the flags of `fleetdrain cluster`.
type ClusterOptions struct {
	genericiooptions.IOStreams
	Output   *cli.Output
	Clusters []string
	Timeout  time.Duration
	DryRun   cli.DryRun
	dynamic  dynamic.Interface
	access   authorizationclient.SelfSubjectAccessReviewsGetter
}

// NewCmdCluster builds `kubectl fleetdrain cluster`.
func NewCmdCluster(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ClusterOptions{IOStreams: streams, Output: cli.NewOutput(), Timeout: 5 * time.Minute}
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
			removes the drain taint again.`),
		Example: templates.Examples(`
			# What would leave spoke-1, and what would stay
			kubectl fleetdrain cluster spoke-1 --dry-run=client

			# Drain two spokes, waiting up to 10 minutes for their workloads to leave
			kubectl fleetdrain cluster spoke-1 spoke-2 --timeout 10m

			# The report as YAML
			kubectl fleetdrain cluster spoke-1 -o yaml`),
		Args:              cli.MinArgs(1, "cluster name"),
		ValidArgsFunction: cli.ResourceNames(f, managedClusters),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.DryRun, err = readWriteFlags(cmd, o.Output); err != nil {
				return err
			}
			o.Clusters = args
			if err := cli.ValidateNames(cli.ClusterName, o.Clusters...); err != nil {
				return err
			}
			if o.Timeout <= 0 {
				return cli.UsageErrorf("--timeout must be positive, got %s", o.Timeout)
			}
			if o.dynamic, err = f.DynamicClient(); err != nil {
				return err
			}
			if o.access, err = accessClient(f); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "How long to wait for the placement-managed ManifestWorks to leave each cluster")
	cli.AddDryRunFlag(cmd)
	o.Output.AddFlags(cmd)
	return cmd
}

// Run plans every cluster (refusing unknown ones before any change), taints
// them, and waits for the moving works to be gone.
func (o *ClusterOptions) Run(ctx context.Context) error {
	report := ClusterDrainReport{ReportMeta: api.NewReportMeta("ClusterDrainReport", "clusters"), DryRun: dryRunName(o.DryRun)}
	clusters := map[string]*ocm.ManagedCluster{}
	for _, name := range o.Clusters {
		mc, err := getManagedCluster(ctx, o.dynamic, name)
		if err != nil {
			return err
		}
		clusters[name] = mc
		plan, err := o.plan(ctx, mc)
		if err != nil {
			return err
		}
		plan.AlreadyTainted = drainTaintIndex(mc) >= 0
		report.Items = append(report.Items, plan)
	}
	if o.DryRun == cli.DryRunClient {
		return o.Output.Print(o.Out, report, report.table)
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
	if o.DryRun == cli.DryRunServer {
		return o.Output.Print(o.Out, report, report.table)
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
			// What changed so far: every cluster is tainted, some drained.
			for j := i; j < len(report.Items); j++ {
				report.Items[j].Result = ClusterNotDrained
			}
			_ = o.Output.Print(o.Out, report, report.table)
			return fmt.Errorf("%w; the drain taint is on %s: run the same command again to keep waiting, or give them back with `kubectl fleetdrain uncordon cluster %s`",
				err, strings.Join(o.Clusters, ", "), strings.Join(o.Clusters, " "))
		}
		report.Items[i].Result = ClusterDrained
	}
	if err := o.Output.Print(o.Out, report, report.table); err != nil {
		return err
	}
	if o.Output.IsTable() && report.hasStays() {
		fmt.Fprintln(o.Out, "Works that stay keep their clusters from `kubectl spoke remove` until they are deleted or their owners move them.")
	}
	if len(timedOut) > 0 {
		return cli.TimedOut(fmt.Errorf("placement-managed works did not leave %s within %s; the taint stays on: run the same command again to keep waiting",
			strings.Join(timedOut, ", "), o.Timeout))
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
	if err != nil {
		return ClusterReport{}, fmt.Errorf("listing the ManifestWorks of cluster %s: %w; nothing was changed", cluster, err)
	}
	list, err := o.dynamic.Resource(ocm.PlacementResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ClusterReport{}, fmt.Errorf("listing Placements: %w; nothing was changed", err)
	}
	var placements []ocm.Placement
	for i := range list.Items {
		var p ocm.Placement
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &p); err != nil {
			return ClusterReport{}, fmt.Errorf("reading Placement %s/%s: %w", list.Items[i].GetNamespace(), list.Items[i].GetName(), err)
		}
		placements = append(placements, p)
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
	ri := o.dynamic.Resource(ocm.ManifestWorkResource).Namespace(cluster)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return ri.List(ctx, opts) },
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return ri.Watch(ctx, opts)
		},
	}
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

func getManagedCluster(ctx context.Context, d dynamic.Interface, name string) (*ocm.ManagedCluster, error) {
	u, err := d.Resource(ocm.ManagedClusterResource).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, cli.Refusedf("ManagedCluster %q not found on this hub; nothing was changed (list them with `kubectl get managedclusters`)", name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading ManagedCluster %s: %w", name, err)
	}
	var mc ocm.ManagedCluster
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &mc); err != nil {
		return nil, fmt.Errorf("reading ManagedCluster %s: %w", name, err)
	}
	return &mc, nil
}

func drainTaintIndex(mc *ocm.ManagedCluster) int {
	for i, t := range mc.Spec.Taints {
		if t.Key == DrainTaintKey {
			return i
		}
	}
	return -1
}

type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// patchManagedCluster applies the ops that change returns for the current
// object, guarded by its resourceVersion, retrying on conflict. change
// returns no ops when there is nothing to do.
func patchManagedCluster(ctx context.Context, d dynamic.Interface, name string, dryRun cli.DryRun, change func(*ocm.ManagedCluster) []jsonPatchOp) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc, err := getManagedCluster(ctx, d, name)
		if err != nil {
			return err
		}
		data, err := guardedPatch(mc.ResourceVersion, change(mc))
		if err != nil || data == nil {
			return err
		}
		_, err = d.Resource(ocm.ManagedClusterResource).Patch(ctx, name, types.JSONPatchType, data, metav1.PatchOptions{DryRun: cli.DryRunOption(dryRun)})
		if err != nil {
			return fmt.Errorf("patching the taints of ManagedCluster %s: %w", name, err)
		}
		return nil
	})
}

// addDrainTaint appends the drain taint (timeAdded left to the hub), keeping
// every other taint as it is.
func addDrainTaint(ctx context.Context, d dynamic.Interface, name string, dryRun cli.DryRun) error {
	return patchManagedCluster(ctx, d, name, dryRun, func(mc *ocm.ManagedCluster) []jsonPatchOp {
		if drainTaintIndex(mc) >= 0 {
			return nil
		}
		if len(mc.Spec.Taints) == 0 {
			return []jsonPatchOp{{Op: "add", Path: "/spec/taints", Value: []ocm.Taint{DrainTaint()}}}
		}
		return []jsonPatchOp{{Op: "add", Path: "/spec/taints/-", Value: DrainTaint()}}
	})
}

// removeDrainTaint removes the drain taint and nothing else; the test op
// makes sure the index still points at it.
func removeDrainTaint(ctx context.Context, d dynamic.Interface, name string, dryRun cli.DryRun) (removed bool, err error) {
	err = patchManagedCluster(ctx, d, name, dryRun, func(mc *ocm.ManagedCluster) []jsonPatchOp {
		i := drainTaintIndex(mc)
		removed = i >= 0
		if !removed {
			return nil
		}
		path := fmt.Sprintf("/spec/taints/%d", i)
		return []jsonPatchOp{{Op: "test", Path: path + "/key", Value: DrainTaintKey}, {Op: "remove", Path: path}}
	})
	return removed, err
}

// UncordonClusterOptions are the flags of `fleetdrain uncordon cluster`.
type UncordonClusterOptions struct {
	genericiooptions.IOStreams
	Output   *cli.Output
	Clusters []string
	DryRun   cli.DryRun
	access   authorizationclient.SelfSubjectAccessReviewsGetter
}

// NewCmdUncordonCluster builds `kubectl fleetdrain uncordon cluster`.
func NewCmdUncordonCluster(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &UncordonClusterOptions{IOStreams: streams, Output: cli.NewOutput()}
	cmd := &cobra.Command{
		Use:   "cluster NAME...",
		Short: "Let placements select drained spoke clusters again",
		Long: templates.LongDesc(`
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
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.DryRun, err = readWriteFlags(cmd, o.Output); err != nil {
				return err
			}
			o.Clusters = args
			if err := cli.ValidateNames(cli.ClusterName, o.Clusters...); err != nil {
				return err
			}
			d, err := f.DynamicClient()
			if err != nil {
				return err
			}
			if o.access, err = accessClient(f); err != nil {
				return err
			}
			return o.Run(cmd.Context(), d)
		},
	}
	cli.AddDryRunFlag(cmd)
	o.Output.AddFlags(cmd)
	return cmd
}

// Run removes the drain taint from every named cluster that has it.
func (o *UncordonClusterOptions) Run(ctx context.Context, d dynamic.Interface) error {
	for _, name := range o.Clusters {
		if _, err := getManagedCluster(ctx, d, name); err != nil {
			return err
		}
	}
	if err := preflight(ctx, o.access, o.DryRun, clusterAccess(o.Clusters, false)); err != nil {
		return err
	}
	report := UncordonReport{ReportMeta: api.NewReportMeta("UncordonReport", "clusters"), DryRun: dryRunName(o.DryRun)}
	for _, name := range o.Clusters {
		e := UncordonEntry{ReportMeta: api.NewReportMeta("ManagedCluster", name)}
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
