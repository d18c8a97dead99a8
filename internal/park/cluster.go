package park

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// ParkPlan is what parking a cluster changes: every worker pool that is not
// at zero goes to zero, in one patch that also records what the pools were.
type ParkPlan struct {
	api.ReportMeta `json:",inline"`
	DryRun         string `json:"dryRun,omitempty"`
	// Changes are the pools the patch parks; empty when already parked.
	Changes []PoolChange `json:"changes"`
	// AtZero are pools that were already at zero and stay as they are.
	AtZero []string `json:"atZero,omitempty"`
	// Record is the park record the cluster carries after the patch.
	Record *ParkRecord `json:"record,omitempty"`
	Patch  Patch       `json:"patch,omitempty"`
	// Survivors is filled after --wait: what parking kept and what it removed.
	Survivors *Survivors `json:"survivors,omitempty"`
}

func (p *ParkPlan) patch() Patch { return p.Patch }

// PlanPark plans parking cluster c, as user by at time now. Pools already at
// zero are left alone; a park record already on the cluster is kept, so
// parking twice changes nothing and resume still knows the first state.
func PlanPark(c *capi.Cluster, now time.Time, by string) (*ParkPlan, error) {
	pools, err := workerPools(c)
	if err != nil {
		return nil, err
	}
	existing, raw, err := existingRecord(c)
	if err != nil {
		return nil, exitcode.RefusedErrorf("cluster %s/%s: %w; nothing was changed (fix or remove the annotation, then run park again)", c.Namespace, c.Name, err)
	}
	plan := &ParkPlan{ReportMeta: api.NewNamespacedReportMeta("ParkPlan", c.Namespace, c.Name), Changes: []PoolChange{}, Record: existing}
	record := ParkRecord{ParkedAt: metav1.NewTime(now.UTC().Truncate(time.Second)), ParkedBy: by}
	if existing != nil {
		record = *existing
		record.Pools = append([]PoolRecord(nil), existing.Pools...)
	}
	var patch Patch
	for _, p := range pools {
		from := p.state()
		if from.parked() {
			plan.AtZero = append(plan.AtZero, p.Name)
			continue
		}
		path := p.path()
		patch.test(path+"/name", p.Name)
		// The autoscaler annotations go before replicas are set: Cluster API
		// refuses a pool with both.
		for _, k := range sortedKeys(from.Autoscaler) {
			a := path + "/metadata/annotations/" + api.PointerToken(k)
			patch.test(a, from.Autoscaler[k])
			patch.remove(a)
		}
		if p.Replicas == nil {
			patch.add(path+"/replicas", 0)
		} else {
			patch.replace(path+"/replicas", *p.Replicas, 0)
		}
		plan.Changes = append(plan.Changes, PoolChange{Kind: p.Kind, Name: p.Name, From: from, To: PoolState{Replicas: int32Ptr(0)}})
		if _, ok := record.Find(p.Kind, p.Name); !ok {
			record.Pools = append(record.Pools, PoolRecord{Kind: p.Kind, Name: p.Name, Replicas: from.Replicas, Autoscaler: from.Autoscaler})
		}
	}
	if len(plan.Changes) == 0 {
		return plan, nil
	}
	value, err := record.Encode()
	if err != nil {
		return nil, err
	}
	switch {
	case existing != nil && value != raw:
		patch.replace(api.AnnotationPath(RecordAnnotation), raw, value)
	case existing != nil:
		// The patch parks pools on the strength of this record: its removal
		// since the read (no generation change) must fail the patch too.
		patch.test(api.AnnotationPath(RecordAnnotation), raw)
	case c.Annotations == nil:
		patch.test("/metadata/annotations", api.Absent)
		patch.add("/metadata/annotations", map[string]string{RecordAnnotation: value})
	default:
		patch.test(api.AnnotationPath(RecordAnnotation), api.Absent)
		patch.add(api.AnnotationPath(RecordAnnotation), value)
	}
	plan.Record = &record
	plan.Patch = patch.guarded(c.Generation)
	return plan, nil
}

// ParkOptions are the options of `kubectl park cluster`.
type ParkOptions struct {
	changeOptions
	ControlPlane bool

	now func() time.Time
	// by is the user a bulk run records, asked once.
	by string
}

// NewCmdParkCluster builds `kubectl park cluster NAME`.
func NewCmdParkCluster(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ParkOptions{changeOptions: newChangeOptions(f, streams, 10*time.Minute), now: time.Now}
	cmd := &cobra.Command{
		Use:   "cluster (NAME | -l SELECTOR)",
		Short: "Scale every worker pool of a cluster to zero and record what it was",
		Long: cli.LongDesc(`
			Park a Cluster API cluster: every worker pool of its topology
			(machineDeployments and machinePools) goes to zero replicas in one
			patch. The same patch records on the Cluster, in the annotation
			park.spokekit.io/record, what each pool was, when and by whom it
			was parked, so that resume brings back exactly that. Pools the
			cluster autoscaler manages lose their min/max annotations while
			parked and get them back on resume.

			Every value the patch changes is tested first: if someone edits the
			Cluster between the read and the write, the patch fails as a whole,
			and park reads the Cluster again and makes a new plan.

			The control plane keeps running and cannot be parked. Parking a
			parked cluster changes nothing and keeps the first record.

			With -l instead of NAME, park parks every cluster whose labels
			match, of the namespace (or of every namespace with -A). It plans
			all of them first: if any plan is refused, no cluster is changed
			(exit 3) and the refusals are listed, one row each. Then it parks
			them, and with --wait waits for them, --max-concurrent at a time
			(--timeout is each cluster's), and prints one row per cluster.
			The exit code is the worst of the clusters': 1 when one failed,
			4 when some only ran out of --timeout, 130 after Ctrl-C (each
			row then says what was changed and the state the cluster was
			left in). Running the same command again finishes the job.`),
		Example: templates.Examples(`
			# Park the cluster "app" in the Environment namespace dynamo-prod
			kubectl park cluster app -n dynamo-prod

			# Park it and wait until its worker machines are gone, then show what is left
			# (read with your own kubeconfig for the cluster)
			kubectl park cluster app -n dynamo-prod --wait --timeout 15m --cluster-kubeconfig app.kubeconfig

			# Show the patch that would be sent, without sending it
			kubectl park cluster app -n dynamo-prod --dry-run=client -o json

			# Park every cluster labelled env=dev, of every namespace, four at a time
			kubectl park cluster -l env=dev -A --max-concurrent 4 --wait`),
		Args:              bulkArgs,
		ValidArgsFunction: cli.ResourceNames(f, "clusters."+capi.Group),
		RunE:              cli.RunE(o, o.Complete),
	}
	o.Output.AddFlags(cmd)
	cli.AddDryRunFlag(cmd)
	cmd.Flags().BoolVar(&o.Wait, "wait", false, "Wait until the cluster's worker machines are gone, then show what survives.")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "How long --wait waits, then exit 4 (0: no limit).")
	o.addClusterKubeconfigFlag(cmd)
	o.addBulkFlags(cmd, "park")
	cmd.Flags().BoolVar(&o.ControlPlane, "control-plane", false, "Ask to park the control plane too (always refused: it cannot be parked).")
	return cmd
}

// Validate rejects what cannot be done before anything is read or changed.
func (o *ParkOptions) Validate() error {
	if err := o.changeOptions.Validate(); err != nil {
		return err
	}
	if o.ControlPlane {
		target := "cluster " + o.Name
		if o.Selector != "" {
			target = "the clusters of -l " + o.Selector
		}
		return exitcode.RefusedErrorf("the control plane of %s cannot be parked: its replicas are not a topology variable of the ClusterClass, and Cluster API control planes refuse zero replicas, so only the workers can go to zero; nothing was changed. A cluster at zero workers still runs its control plane: if that is not acceptable, back the cluster up and delete it", target)
	}
	return nil
}

// Run finds the platform's Cluster API, parks the cluster and, with --wait,
// follows its machines away.
func (o *ParkOptions) Run(ctx context.Context) error {
	return onPlatform(o.f, o.Namespace, func(p *Platform) error {
		if o.Selector == "" {
			return o.park(ctx, p)
		}
		o.by = p.WhoAmI(ctx)
		return o.runBulk(ctx, p, "park", BulkParked, o)
	})
}

func (o *ParkOptions) park(ctx context.Context, p *Platform) error {
	if err := p.preflight(ctx, o.Name, o.DryRun, o.Wait, parkFollows); err != nil {
		return err
	}
	var before []capi.Machine
	if o.waits() {
		// The wait ends by reading the cluster itself.
		if err := p.RefuseNoClusterAccess(ctx, o.Name, o.ClusterKubeconfig); err != nil {
			return err
		}
		// The machines that go, named in the report once they are gone.
		ms, err := list[capi.Machine](ctx, p, capi.MachineResource, o.Name)
		if err != nil {
			return err
		}
		before = ms
	}
	plan, err := o.apply(ctx, p, p.WhoAmI(ctx))
	if err != nil {
		return err
	}
	var waitErr error
	if o.waits() {
		deadline := cli.NewDeadline(o.Timeout)
		if waitErr = o.wait(ctx, p, deadline); waitErr == nil {
			plan.Survivors = o.survivors(ctx, p, before, deadline.Left())
		}
	}
	if err := o.print(plan); err != nil {
		return err
	}
	return waitErr
}

// plan is park's plan of one read of the cluster, as user by: refused
// when its ClusterClass hands a pool to the autoscaler.
func (o *ParkOptions) plan(ctx context.Context, p *Platform, c *capi.Cluster, by string) (*ParkPlan, error) {
	class, err := p.clusterClass(ctx, c)
	if err != nil {
		return nil, err
	}
	if err := refuseClassAutoscaled(c, class); err != nil {
		return nil, err
	}
	return PlanPark(c, o.now(), by)
}

// apply plans the park from a fresh read of the cluster and sends the
// patch.
func (o *ParkOptions) apply(ctx context.Context, p *Platform, by string) (*ParkPlan, error) {
	var owners []string
	plan, err := applyPlan(ctx, p, o.Name, o.DryRun, o.progress, func(c *capi.Cluster) (*ParkPlan, error) {
		owners = ReplicasOwners(c)
		return o.plan(ctx, p, c, by)
	})
	if err != nil {
		return nil, err
	}
	plan.DryRun = cli.DryRunName(o.DryRun)
	o.done(len(plan.Changes) > 0, "is already parked", fmt.Sprintf("parked: %d pool(s) set to 0 replicas", len(plan.Changes)))
	o.warn(gitOpsWarning(owners, "un-park the cluster"))
	return plan, nil
}

// wait follows the parked cluster's machines away (waitParked), within
// deadline.
func (o *ParkOptions) wait(ctx context.Context, p *Platform, deadline cli.Deadline) error {
	if err := o.waitParked(ctx, p, deadline); err != nil {
		return fmt.Errorf("%w; the cluster is parked and its record kept, its worker machines are still going: run the same command again to keep waiting", err)
	}
	return nil
}

// waitParked follows the worker Machines until they are gone, naming those
// whose drain a PodDisruptionBudget holds up, and then the Cluster until its
// own status no longer counts workers, so that park list agrees the cluster
// is parked. Both waits, and the survivors' reads after them, share the one
// --timeout (deadline).
func (o *ParkOptions) waitParked(ctx context.Context, p *Platform, deadline cli.Deadline) error {
	err := cli.WaitFor(ctx, "worker machines of "+o.Name, p.machineWatch(o.Name), &unstructured.Unstructured{}, deadline.Left(), o.progress,
		func(objs []any) (bool, string, error) {
			ms, err := workerMachines(objs)
			if err != nil {
				return false, "", err
			}
			if len(ms) == 0 {
				return true, "all gone", nil
			}
			state := fmt.Sprintf("%d left (%s)", len(ms), machinePhases(ms))
			for _, b := range drainBlocks(ms) {
				state += "; " + b.String()
			}
			return false, state, nil
		})
	if err != nil {
		return err
	}
	return cli.WaitFor(ctx, "cluster "+o.Name, p.clusterWatch(o.Name), &unstructured.Unstructured{}, deadline.Left(), o.progress, clusterParked)
}

// clusterParked checks the watched Cluster: done when park list would say
// Parked, that is when the Cluster's own status no longer counts workers
// (Cluster API updates it a few seconds after the last Machine is gone).
func clusterParked(objs []any) (bool, string, error) {
	c, err := watchedCluster(objs)
	if err != nil || c == nil {
		return false, "not found", err
	}
	if row := Row(c); row.State != StateParked {
		var n *int32
		if w := c.Status.WorkerCounts(); w != nil {
			n = w.Replicas
		}
		return false, fmt.Sprintf("%s: its status still counts %s worker(s)", row.State, countOrDash(n)), nil
	}
	return true, "Parked: its status counts no workers", nil
}

func (o *ParkOptions) print(plan *ParkPlan) error {
	err := o.Output.Print(o.Out, plan, func() cli.Table { return changesTable(plan.Changes) })
	if err != nil || !o.Output.IsTable() {
		return err
	}
	w := o.Out
	if len(plan.Changes) == 0 {
		fmt.Fprintf(w, "cluster %s is already parked; the record of %s is kept\n", plan.Metadata.Name, recordSince(plan.Record))
	}
	if plan.DryRun != "" && len(plan.Patch) > 0 {
		writePatch(w, plan.Patch)
	}
	if plan.Survivors != nil {
		plan.Survivors.write(w)
	}
	return nil
}

func recordSince(r *ParkRecord) string {
	if r == nil {
		return "no park (parked by hand, nothing recorded)"
	}
	return fmt.Sprintf("%s by %s", r.ParkedAt.UTC().Format(time.RFC3339), r.ParkedBy)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Subjects is the Cluster parked, for -o name.
func (p ParkPlan) Subjects() []string {
	return []string{api.ObjectName(capi.ClusterKind, p.Metadata.Name)}
}
