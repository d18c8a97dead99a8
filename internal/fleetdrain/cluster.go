package fleetdrain

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// ClusterOptions are the flags of `fleetdrain cluster`.
type ClusterOptions struct {
	clusterTargets
	Selector      string
	MaxConcurrent int
	MinAvailable  []string
	WaitFor       string
	Timeout       time.Duration
	minAvailable  MinAvailable
}

// What --wait-for waits for after the taint.
const (
	waitForMoved   = "moved"
	waitForHealthy = "healthy"
)

// NewCmdCluster builds `kubectl fleetdrain cluster`.
func NewCmdCluster(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ClusterOptions{clusterTargets: newClusterTargets(f, streams), Timeout: 5 * time.Minute, WaitFor: waitForMoved}
	cmd := &cobra.Command{
		Use:   "cluster (NAME... | -l SELECTOR)",
		Short: "Take spoke clusters out of the fleet's placements and wait for their workloads to leave",
		Long: cli.LongDesc(`
			Run against the hub. Adds a NoSelect taint with the key
			` + DrainTaintKey + ` to each ManagedCluster, so every placement that
			does not tolerate it drops the cluster, then waits until the
			ManifestWorks those placements put in the cluster's namespace are gone.

			Before any taint, the placement guard judges every Placement (all
			namespaces) as the placement controller would schedule it once the
			clusters are drained: its cluster sets bound to its namespace, its
			label and claim predicates, its tolerations (a tainted cluster it
			tolerates stays eligible; tolerationSeconds runs out) and
			numberOfClusters. When a Placement would keep fewer eligible clusters
			than it selects today, or the guard cannot tell (a CEL predicate, a
			field it does not know, Placements it may not list), the command
			refuses (exit 3), names each Placement with what it selects and what
			would remain, and taints nothing. --min-available N sets how many
			eligible clusters every Placement must keep instead (0 accepts any
			loss; more than it selects asks for spares); --min-available
			NAMESPACE/NAME=N sets it for one Placement (repeat the flag).

			-l drains the clusters a label selector matches. --max-concurrent N
			drains them in waves of N (by name): the next wave is tainted only
			after the works of the previous one have left (and, with
			--wait-for=healthy, are Available again). --wait-for=healthy waits,
			after the works left, until the ManifestWorks of the same producers
			on the clusters their placements chose now report Applied and
			Available. --timeout bounds each wave (exit 4; the taint stays on, and
			the waves not started are not tainted).

			The report has one entry per cluster and lists what stays: works no
			placement owns (made by hand; they also block ` + "`kubectl spoke remove`" + `),
			and works whose placement tolerates the taint. A placement that
			tolerates it for tolerationSeconds lets its works go when those run
			out (counted from the taint's timeAdded): the report says when, and
			the wait includes them. --dry-run lists what would move, when, and
			what would stay, after the same guard. On Ctrl-C the clusters of the
			wave whose works had not started to leave get their drain taint back
			off, and the report says so. Other taints are never touched;
			` + "`kubectl fleetdrain uncordon cluster`" + ` removes the drain taint again.
			A spoke a Compute Pool owns (label ` + fleetconfig.ComputePoolLabel + ` or an
			owner of kind ` + fleetconfig.ComputePoolKind + `, on its Spoke or
			ManagedCluster) is refused (exit 3): the Compute Pool manages it.`),
		Example: templates.Examples(`
			# What would leave spoke-1, and what would stay
			kubectl fleetdrain cluster spoke-1 --dry-run=client

			# Drain two spokes, waiting up to 10 minutes for their workloads to leave
			kubectl fleetdrain cluster spoke-1 spoke-2 --timeout 10m

			# Drain every spoke of zone a, one at a time, each time until the moved
			# works are Available on their new clusters
			kubectl fleetdrain cluster -l zone=a --max-concurrent 1 --wait-for=healthy

			# Let every Placement lose clusters as long as it keeps one, and apps/web
			# keep two
			kubectl fleetdrain cluster spoke-1 spoke-2 --min-available 1 --min-available apps/web=2

			# The report as YAML
			kubectl fleetdrain cluster spoke-1 -o yaml`),
		ValidArgsFunction: cli.ResourceNames(f, managedClusters),
		RunE:              cli.RunE(o, o.Complete),
	}
	flags := cmd.Flags()
	flags.StringVarP(&o.Selector, "selector", "l", o.Selector, "Drain the ManagedClusters matching this label selector instead of named ones")
	flags.IntVar(&o.MaxConcurrent, "max-concurrent", o.MaxConcurrent, "Drain in waves of this many clusters, the next once the previous one's works have moved (0: all at once)")
	flags.StringArrayVar(&o.MinAvailable, "min-available", o.MinAvailable, "Eligible clusters a Placement must keep: N for every Placement, NAMESPACE/NAME=N for one (default: as many as it selects today)")
	flags.StringVar(&o.WaitFor, "wait-for", o.WaitFor, "What to wait for: moved (the works left the cluster) or healthy (and are Applied and Available on their new clusters)")
	flags.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long to wait for each wave, then exit 4 (0: no limit)")
	cli.AddDryRunFlag(cmd)
	o.Output.AddFlags(cmd)
	return cmd
}

// Validate rejects bad input before any request.
func (o *ClusterOptions) Validate() error {
	if len(o.Clusters) == 0 && o.Selector == "" {
		return exitcode.UsageErrorf("give at least 1 cluster name, or select clusters with -l")
	}
	if len(o.Clusters) > 0 && o.Selector != "" {
		return exitcode.UsageErrorf("name clusters or select them with -l, not both")
	}
	if err := cli.ValidateSelector("--selector", o.Selector); err != nil {
		return err
	}
	if err := o.clusterTargets.Validate(); err != nil {
		return err
	}
	if o.MaxConcurrent < 0 {
		return exitcode.UsageErrorf("--max-concurrent must be 0 (all at once) or more, got %d", o.MaxConcurrent)
	}
	if o.WaitFor != waitForMoved && o.WaitFor != waitForHealthy {
		return exitcode.UsageErrorf("--wait-for must be %s or %s, got %q", waitForMoved, waitForHealthy, o.WaitFor)
	}
	var err error
	if o.minAvailable, err = ParseMinAvailable(o.MinAvailable); err != nil {
		return err
	}
	return cli.ValidateTimeout(o.Timeout)
}

// Run has the node command's shape: plan every cluster (refusing unknown
// ones, and spokes a Compute Pool owns, before any change), judge the
// fleet's Placements, check access, then wave by wave taint the clusters
// and wait for their works to move, then one report.
func (o *ClusterOptions) Run(ctx context.Context) error {
	if err := o.connect(); err != nil {
		return err
	}
	if err := o.selectClusters(ctx); err != nil {
		return err
	}
	o.Clusters = slices.Compact(o.Clusters)
	fleet, err := readFleet(ctx, o.dynamic)
	if err != nil {
		return err
	}
	report, err := o.planClusters(ctx, fleet.Placements)
	if err != nil {
		return err
	}
	if report.Placements, err = o.guard(fleet); err != nil {
		return err
	}
	waveErr := o.drainWaves(ctx, &report)
	if err := o.Output.Print(o.Out, report, report.table); err != nil {
		return err
	}
	if o.Output.IsTable() && report.hasStays() {
		fmt.Fprintln(o.ErrOut, "Works that stay keep their clusters from `kubectl spoke remove` until they are deleted or their owners move them.")
	}
	return waveErr
}

// guard refuses (exit 3, nothing changed) a drain that would leave a
// Placement short, and a --min-available for a Placement that is not there.
func (o *ClusterOptions) guard(fleet FleetState) ([]PlacementCheck, error) {
	for key := range o.minAvailable.Per {
		if !slices.ContainsFunc(fleet.Placements, func(p ocm.Placement) bool { return namespacedName(p.Namespace, p.Name) == key }) {
			return nil, exitcode.RefusedErrorf("--min-available names Placement %s, which is not on this hub; nothing was changed", key)
		}
	}
	checks := GuardPlacements(fleet, o.Clusters, o.minAvailable, time.Now())
	if err := guardError(checks, o.Clusters); err != nil {
		return nil, err
	}
	if o.Output.IsTable() {
		for _, c := range checks {
			fmt.Fprintf(o.ErrOut, "placement %s selects %d today (%s); %d remain eligible (%s), it needs %d\n",
				c.Placement, len(c.Selected), listOrNone(c.Selected), len(c.Remaining), listOrNone(c.Remaining), c.Required)
		}
	}
	return checks, nil
}

// planClusters reads and plans every cluster; nothing is changed.
func (o *ClusterOptions) planClusters(ctx context.Context, placements []ocm.Placement) (ClusterDrainReport, error) {
	report := ClusterDrainReport{ReportMeta: api.NewReportMeta("ClusterDrainReport", "clusters"), DryRun: cli.DryRunName(o.DryRun)}
	for i, name := range o.Clusters {
		mc, err := getManagedCluster(ctx, o.dynamic, name)
		if err != nil {
			return report, err
		}
		if err := refuseComputePool(ctx, o.dynamic, mc); err != nil {
			return report, err
		}
		plan, err := o.plan(ctx, mc, placements)
		if err != nil {
			return report, err
		}
		plan.AlreadyTainted = drainTaintIndex(mc) >= 0
		plan.Wave = 1
		if o.MaxConcurrent > 0 {
			plan.Wave = 1 + i/o.MaxConcurrent
		}
		report.Items = append(report.Items, plan)
	}
	return report, nil
}

// refuseComputePool refuses (exit 3) a cluster whose spoke a Compute Pool
// owns: the pool registers and removes it by itself, as `kubectl spoke`
// refuses too. The marks are read on the ManagedCluster and on the Spoke of
// the same name, in any namespace; a Spoke list that fails for any reason
// but a hub without FleetConfig is a check that could not be made, and
// refuses as well.
func refuseComputePool(ctx context.Context, d dynamic.Interface, mc *ocm.ManagedCluster) error {
	refuse := func(kind, pool string) error {
		return exitcode.RefusedErrorf("cluster %s belongs to Compute Pool %q (the %s carries %s or an owner of kind %s), which registers and removes it by itself; nothing was changed: change or delete the Compute Pool instead",
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
		return exitcode.RefusedErrorf("cannot tell whether a Compute Pool owns cluster %s: listing Spokes: %w; nothing was changed", mc.Name, err)
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

func (o *ClusterOptions) plan(ctx context.Context, mc *ocm.ManagedCluster, placements []ocm.Placement) (ClusterReport, error) {
	cluster := mc.Name
	// A ManifestWork embeds what it applies, Secrets among them: request
	// logs never show the bodies, here and wherever works are read.
	works, err := o.dynamic.Resource(ocm.ManifestWorkResource).Namespace(cluster).List(cli.HideBodies(ctx), metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return ClusterReport{}, worksRefusal(ctx, o.f, cluster)
	}
	if err != nil {
		// A 404 too: a hub that does not serve ManifestWorks has no plan to
		// show, not a cluster without works.
		return ClusterReport{}, exitcode.RefusedErrorf("cannot tell what draining cluster %s would move: listing its ManifestWorks: %w; nothing was changed", cluster, err)
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

// clusterAccess is what the drain needs: taint the clusters and watch their
// works, and with --wait-for=healthy read the decisions of the Placements
// that move the works and watch the works where the guard predicts them.
func (o *ClusterOptions) clusterAccess(report ClusterDrainReport) []authz.Permission {
	needs := clusterAccess(o.Clusters, o.DryRun == cli.DryRunNone)
	if o.WaitFor != waitForHealthy || o.DryRun != cli.DryRunNone {
		return needs
	}
	drained := sets.New(o.Clusters...)
	namespaces, dests := sets.New[string](), sets.New[string]()
	for _, c := range report.Items {
		for _, w := range c.Moves {
			for _, key := range w.placements {
				ns, _, _ := strings.Cut(key, "/")
				namespaces.Insert(ns)
				for _, check := range report.Placements {
					if check.Placement == key {
						dests.Insert(check.Remaining...)
					}
				}
			}
		}
	}
	for _, ns := range sets.List(namespaces) {
		needs = append(needs, authz.Permission{Verb: "list", Group: ocm.PlacementDecisionResource.Group, Resource: ocm.PlacementDecisionResource.Resource, Namespace: ns})
	}
	for _, d := range sets.List(dests.Difference(drained)) {
		for _, verb := range []string{"list", "watch"} {
			needs = append(needs, authz.Permission{Verb: verb, Group: ocm.ManifestWorkResource.Group, Resource: ocm.ManifestWorkResource.Resource, Namespace: d})
		}
	}
	return needs
}
