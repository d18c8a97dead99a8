package park

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/scrub"
)

// ResumePlan is what resuming a cluster changes: each parked pool gets back
// what the park record says (or the replicas asked for), and the record goes.
type ResumePlan struct {
	api.ReportMeta `json:",inline"`
	DryRun         string       `json:"dryRun,omitempty"`
	Record         *ParkRecord  `json:"record,omitempty"`
	Changes        []PoolChange `json:"changes"`
	// NotRecorded are pools at zero with no record, left at zero.
	NotRecorded []string `json:"notRecorded,omitempty"`
	// Gone are recorded pools no longer in the topology.
	Gone  []string `json:"gone,omitempty"`
	Patch Patch    `json:"patch,omitempty"`
	// Phases are where the resume's named phases got to, after --wait.
	Phases []PhaseReport `json:"phases,omitempty"`
}

func (p *ResumePlan) patch() Patch { return p.Patch }

// PlanResume plans resuming cluster c: recorded pools get their recorded
// replicas and autoscaler annotations back, or replicas when it is set (which
// also resumes pools parked by hand). A running cluster plans no change.
func PlanResume(c *capi.Cluster, replicas *int32) (*ResumePlan, error) {
	pools, err := workerPools(c)
	if err != nil {
		return nil, err
	}
	record, raw, err := existingRecord(c)
	if err != nil && replicas == nil {
		return nil, exitcode.RefusedErrorf("cluster %s/%s: %w; nothing was changed (pass --replicas N to resume every pool to N)", c.Namespace, c.Name, err)
	}
	_, hasRecord := c.Annotations[RecordAnnotation]
	plan := &ResumePlan{ReportMeta: api.NewNamespacedReportMeta("ResumePlan", c.Namespace, c.Name), Record: record, Changes: []PoolChange{}}
	var patch Patch
	inTopology := map[string]bool{}
	for _, p := range pools {
		inTopology[string(p.Kind)+"/"+p.Name] = true
		from := p.state()
		r, recorded := record.Find(p.Kind, p.Name)
		var to PoolState
		switch {
		case replicas != nil && (recorded || from.parked()):
			to = PoolState{Replicas: replicas}
		case recorded:
			to = PoolState{Replicas: r.Replicas, Autoscaler: r.Autoscaler}
		case from.parked():
			plan.NotRecorded = append(plan.NotRecorded, p.Name)
			continue
		default:
			continue
		}
		if from.equal(to) {
			continue
		}
		restorePool(&patch, p, to)
		plan.Changes = append(plan.Changes, PoolChange{Kind: p.Kind, Name: p.Name, From: from, To: to})
	}
	if record != nil {
		for _, r := range record.Pools {
			if !inTopology[string(r.Kind)+"/"+r.Name] {
				plan.Gone = append(plan.Gone, r.Name)
			}
		}
	}
	if len(plan.Changes) == 0 && !hasRecord && len(plan.NotRecorded) > 0 {
		return nil, exitcode.RefusedErrorf("cluster %s/%s has pools at zero (%s) but no park record, so what they were is not known; nothing was changed. Run: kubectl park resume %s -n %s --replicas N",
			c.Namespace, c.Name, strings.Join(plan.NotRecorded, ", "), c.Name, c.Namespace)
	}
	if hasRecord {
		patch.test(api.AnnotationPath(RecordAnnotation), raw)
		patch.remove(api.AnnotationPath(RecordAnnotation))
	}
	plan.Patch = patch.guarded(c.Generation)
	return plan, nil
}

// restorePool adds the operations that bring pool p to state to. Replicas
// and autoscaler annotations are never left set together.
func restorePool(patch *Patch, p pool, to PoolState) {
	path := p.path()
	patch.test(path+"/name", p.Name)
	current := p.Metadata.Annotations
	for _, k := range sortedKeys(autoscalerAnnotations(current)) {
		if _, keep := to.Autoscaler[k]; !keep {
			patch.test(path+"/metadata/annotations/"+api.PointerToken(k), current[k])
			patch.remove(path + "/metadata/annotations/" + api.PointerToken(k))
		}
	}
	switch {
	case to.Replicas == nil && p.Replicas != nil:
		patch.test(path+"/replicas", *p.Replicas)
		patch.remove(path + "/replicas")
	case to.Replicas != nil && p.Replicas == nil:
		patch.add(path+"/replicas", *to.Replicas)
	case to.Replicas != nil && *to.Replicas != *p.Replicas:
		patch.replace(path+"/replicas", *p.Replicas, *to.Replicas)
	}
	if len(to.Autoscaler) == 0 {
		return
	}
	if current == nil {
		// No annotations map yet: add it whole. The name test above guards
		// the pool; there is nothing else in the map to overwrite.
		if p.Metadata.Labels == nil {
			patch.add(path+"/metadata", map[string]any{"annotations": to.Autoscaler})
		} else {
			patch.add(path+"/metadata/annotations", to.Autoscaler)
		}
		return
	}
	for _, k := range sortedKeys(to.Autoscaler) {
		a := path + "/metadata/annotations/" + api.PointerToken(k)
		if old, ok := current[k]; ok {
			if old != to.Autoscaler[k] {
				patch.replace(a, old, to.Autoscaler[k])
			}
			continue
		}
		patch.add(a, to.Autoscaler[k])
	}
}

// ResumeOptions are the options of `kubectl park resume`.
type ResumeOptions struct {
	changeOptions
	Replicas int32

	replicasSet bool
	// view is what --wait has seen of the cluster (a bulk run copies the
	// options for each cluster).
	view resumeView
}

// NewCmdResume builds `kubectl park resume NAME`.
func NewCmdResume(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ResumeOptions{changeOptions: newChangeOptions(f, streams, 15*time.Minute)}
	cmd := &cobra.Command{
		Use:   "resume (NAME | -l SELECTOR)",
		Short: "Bring a parked cluster's workers back to what was recorded",
		Long: cli.LongDesc(`
			Resume a parked Cluster API cluster: every pool recorded by park gets
			back its replicas, or its cluster autoscaler min/max annotations, in
			one guarded patch that also removes the record. --replicas N sets
			every parked pool to N instead; it is needed for a cluster parked by
			hand (pools at zero and no record).

			With --wait, resume follows the cluster through named phases, in
			order: "control plane available" (the Cluster's
			ControlPlaneAvailable condition), "machines running" (as many
			worker machines as the pools ask for, running with their nodes
			joined), "nodes Ready" (in the workload cluster), "health checks
			passed" (the MachineHealthChecks of the workers count them
			healthy), "pools ready" (each pool's MachineDeployment or
			MachinePool counts its workers ready and up to date, as park
			status shows them) and "pending CSRs listed" (certificate signing
			requests nobody approved yet, reported, never approved; a list
			that cannot be read does not hold the resume). When --timeout runs out, it exits 4 naming the phase
			the cluster is stuck in. Resuming a running cluster changes
			nothing, so running the same command again finishes the wait.

			With -l instead of NAME, resume resumes every cluster whose labels
			match, of the namespace (or of every namespace with -A). It plans
			all of them first: if any plan is refused, no cluster is changed
			(exit 3) and the refusals are listed, one row each. Then it resumes
			them, and with --wait waits for them, --max-concurrent at a time
			(--timeout is each cluster's; each is reached through its
			NAME-kubeconfig secret), and prints one row per cluster with the
			phase it reached. The exit code is the worst of the clusters': 1
			when one failed, 4 when some only ran out of --timeout, 130 after
			Ctrl-C (each row then says what was changed and the state the
			cluster was left in).`),
		Example: templates.Examples(`
			# Resume the cluster "app" to what it was when parked
			kubectl park resume app -n dynamo-prod

			# Resume and wait until every worker is running and its node is Ready
			# (read with your own kubeconfig for the cluster)
			kubectl park resume app -n dynamo-prod --wait --timeout 20m --cluster-kubeconfig app.kubeconfig

			# Resume a cluster parked by hand with two workers per pool
			kubectl park resume app -n dynamo-prod --replicas 2

			# Resume every cluster labelled env=dev, two at a time, and name the phase of any that is stuck
			kubectl park resume -l env=dev -n dynamo-prod --max-concurrent 2 --wait --timeout 15m`),
		Args:              bulkArgs,
		ValidArgsFunction: cli.ResourceNames(f, "clusters."+capi.Group),
		RunE:              cli.RunE(o, o.Complete),
	}
	o.Output.AddFlags(cmd)
	cli.AddDryRunFlag(cmd)
	cmd.Flags().Int32Var(&o.Replicas, "replicas", 0, "Set every parked pool to this many replicas instead of the recorded ones.")
	cmd.Flags().BoolVar(&o.Wait, "wait", false, "Wait through the named phases until every worker machine runs and its node is Ready.")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "How long --wait waits, then exit 4 (0: no limit).")
	o.addClusterKubeconfigFlag(cmd)
	o.addBulkFlags(cmd, "resume")
	return cmd
}

// Complete fills the options from the command line and the kubeconfig; it
// sends no request.
func (o *ResumeOptions) Complete(cmd *cobra.Command, args []string) error {
	o.replicasSet = cmd.Flags().Changed("replicas")
	return o.changeOptions.Complete(cmd, args)
}

// Validate rejects bad flags before any request.
func (o *ResumeOptions) Validate() error {
	if err := o.changeOptions.Validate(); err != nil {
		return err
	}
	if o.replicasSet && o.Replicas < 1 {
		return exitcode.UsageErrorf("--replicas must be at least 1, got %d (to park, run: kubectl park cluster %s)", o.Replicas, o.Name)
	}
	if o.replicasSet && o.Replicas > MaxPoolReplicas {
		return exitcode.UsageErrorf("--replicas must be at most %d per pool, got %d", MaxPoolReplicas, o.Replicas)
	}
	return nil
}

// Run finds the platform's Cluster API, resumes the cluster and, with
// --wait, follows the workers back.
func (o *ResumeOptions) Run(ctx context.Context) error {
	return onPlatform(o.f, o.Namespace, func(p *Platform) error {
		if o.Selector == "" {
			return o.resume(ctx, p)
		}
		return o.runBulk(ctx, p, "resume", BulkResumed, o)
	})
}

func (o *ResumeOptions) resume(ctx context.Context, p *Platform) error {
	if err := o.check(ctx, p); err != nil {
		return err
	}
	plan, err := o.apply(ctx, p)
	if err != nil {
		return err
	}
	waitErr := o.wait(ctx, p, plan)
	if err := o.print(plan); err != nil {
		return err
	}
	return waitErr
}

// check is what resume checks before it plans: the user may patch the
// Cluster (and follow it), and --wait has a way into the workload cluster.
func (o *ResumeOptions) check(ctx context.Context, p *Platform) error {
	if err := p.preflight(ctx, o.Name, o.DryRun, o.Wait, resumeFollows); err != nil {
		return err
	}
	if o.Wait && o.DryRun == cli.DryRunNone {
		// The wait ends on the cluster's own nodes.
		return p.RefuseNoClusterAccess(ctx, o.Name, o.ClusterKubeconfig)
	}
	return nil
}

// plan is resume's plan of one read of the cluster.
func (o *ResumeOptions) plan(c *capi.Cluster) (*ResumePlan, error) {
	var replicas *int32
	if o.replicasSet {
		replicas = &o.Replicas
	}
	return PlanResume(c, replicas)
}

// apply plans the resume from a fresh read of the cluster and sends the
// patch.
func (o *ResumeOptions) apply(ctx context.Context, p *Platform) (*ResumePlan, error) {
	var owners []string
	plan, err := applyPlan(ctx, p, o.Name, o.DryRun, o.progress, func(c *capi.Cluster) (*ResumePlan, error) {
		owners = ReplicasOwners(c)
		return o.plan(c)
	})
	if err != nil {
		return nil, err
	}
	plan.DryRun = cli.DryRunName(o.DryRun)
	o.done(len(plan.Patch) > 0, "is not parked", fmt.Sprintf("resumed: %d pool(s) restored", len(plan.Changes)))
	o.warn(gitOpsWarning(owners, "park the cluster again, or change the counts restored"))
	return plan, nil
}

// wait follows the resume's phases with --wait and keeps them in the plan.
func (o *ResumeOptions) wait(ctx context.Context, p *Platform, plan *ResumePlan) error {
	if !o.Wait || o.DryRun != cli.DryRunNone {
		return nil
	}
	var err error
	if plan.Phases, err = o.waitResumed(ctx, p); err != nil {
		return fmt.Errorf("%w; the pools are restored, their workers are still coming back: run the same command again to keep waiting", err)
	}
	return nil
}

// waitResumed follows a resume through its named phases (phases.go), all
// within the one --timeout: the control plane available, the worker
// machines running with their nodes joined, those nodes Ready in the
// workload cluster, the health checks and the pools' own status counting
// them, and the CSRs pending there listed. It returns where
// each phase got to; a wait that ends early names the phase it stopped in.
func (o *ResumeOptions) waitResumed(ctx context.Context, p *Platform) ([]PhaseReport, error) {
	o.view = resumeView{}
	err := o.followPhases(ctx, p)
	phases := resumePhases(o.view)
	if name := stuckPhase(phases); name != "" && err != nil {
		err = fmt.Errorf("cluster %s stuck in phase %q: %w", o.Name, name, err)
	}
	return phases, err
}

func (o *ResumeOptions) followPhases(ctx context.Context, p *Platform) error {
	deadline := cli.NewDeadline(o.Timeout)
	err := cli.WaitFor(ctx, "control plane of "+o.Name, p.clusterWatch(o.Name), &unstructured.Unstructured{}, deadline.Left(), o.progress,
		func(objs []any) (bool, string, error) {
			c, err := watchedCluster(objs)
			if err != nil || c == nil {
				return false, "cluster not found", err
			}
			o.view.cluster = c
			done, detail := controlPlaneAvailable(c)
			return done, detail, nil
		})
	if err != nil {
		return err
	}
	// The pools as the wait's own read of the Cluster has them, after the patch.
	pools, err := workerPools(o.view.cluster)
	if err != nil {
		return err
	}
	if o.view.desired, err = desiredOf(pools); err != nil {
		return err
	}
	err = cli.WaitFor(ctx, "workers of "+o.Name, p.machineWatch(o.Name), &unstructured.Unstructured{}, deadline.Left(), o.progress,
		func(objs []any) (bool, string, error) {
			ms, err := workerMachines(objs)
			if err != nil {
				return false, "", err
			}
			o.view.machines, o.view.machinesSeen = ms, true
			phase := resumePhase(ms, o.view.desired)
			return phase.done, phase.String(), nil
		})
	if err != nil {
		return err
	}
	if err := o.waitNodesReady(ctx, p, joinedNodes(o.view.machines), deadline.Left()); err != nil {
		return err
	}
	if err := o.waitHealthChecked(ctx, p, o.view.machines, deadline.Left()); err != nil {
		return err
	}
	if err := o.waitPoolsReady(ctx, p, pools, deadline.Left()); err != nil {
		return err
	}
	o.listCSRs(ctx, p, deadline.Left())
	return nil
}

// watchedCluster is the one Cluster a clusterWatch holds, or nil.
func watchedCluster(objs []any) (*capi.Cluster, error) {
	for _, obj := range objs {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			return capi.FromUnstructured[capi.Cluster](u)
		}
	}
	return nil, nil
}

// waitNodesReady watches the workload cluster's Nodes (reached with
// --cluster-kubeconfig or the platform's kubeconfig secret) until every named node is Ready. A workload
// cluster that cannot be reached from here ends the wait unfinished (exit 4):
// the machines are back, but whether their nodes are Ready is not known.
func (o *ResumeOptions) waitNodesReady(ctx context.Context, p *Platform, names []string, timeout time.Duration) error {
	kube, _, err := p.ClusterClient(ctx, o.Name, o.ClusterKubeconfig)
	rctx, cancel := p.clusterContext(ctx, timeout)
	defer cancel()
	if err == nil {
		// One read first, bounded: a watch would retry an unreachable
		// server until the timeout, and say less; a stalled one would hold
		// the run past --timeout.
		_, err = kube.CoreV1().Nodes().List(rctx, metav1.ListOptions{Limit: 1})
	}
	if exitcode.IsRefused(err) {
		o.view.nodesError = "not checked: the kubeconfig was refused"
		return scrub.Error(err)
	}
	if err != nil {
		o.view.nodesError = "not checked: " + notChecked(ctx, err)
		o.progress.Done("nodes of %s: not checked", o.Name)
		return exitcode.TimedOutError(fmt.Errorf("all %d worker(s) running, but the readiness of their nodes was not checked: %s; run the same command again to check", len(names), notChecked(ctx, err)))
	}
	lw := cache.NewListWatchFromClient(kube.CoreV1().RESTClient(), "nodes", "", fields.Everything())
	return cli.WaitFor(ctx, "nodes of "+o.Name, lw, &corev1.Node{}, timeout, o.progress,
		func(objs []any) (bool, string, error) {
			o.view.nodes, o.view.nodesSeen = o.view.nodes[:0], true
			for _, obj := range objs {
				if n, ok := obj.(*corev1.Node); ok {
					o.view.nodes = append(o.view.nodes, *n)
				}
			}
			done, state := nodesReady(o.view.nodes, names)
			return done, state, nil
		})
}

// listCSRs lists the workload cluster's certificate signing requests, to
// name the pending ones; it only reports, so a list that cannot be read
// is said and holds nothing up.
func (o *ResumeOptions) listCSRs(ctx context.Context, p *Platform, left time.Duration) {
	kube, _, err := p.ClusterClient(ctx, o.Name, o.ClusterKubeconfig)
	if err == nil {
		rctx, cancel := p.clusterContext(ctx, left)
		defer cancel()
		var l *certificatesv1.CertificateSigningRequestList
		if l, err = kube.CertificatesV1().CertificateSigningRequests().List(rctx, metav1.ListOptions{}); err == nil {
			o.view.csrs, o.view.csrsSeen = l.Items, true
			o.progress.Done("CSRs of %s: %s", o.Name, pendingCSRs(l.Items))
			return
		}
	}
	o.view.csrsError = "not listed: " + notChecked(ctx, err)
	o.progress.Done("CSRs of %s: %s", o.Name, o.view.csrsError)
}

// joinedNodes names the nodes of the running worker machines.
func joinedNodes(ms []capi.Machine) []string {
	var names []string
	for _, m := range ms {
		if m.DeletionTimestamp == nil && m.Status.NodeRef != nil {
			names = append(names, m.Status.NodeRef.Name)
		}
	}
	return names
}

// desiredOf adds up the workers the pools ask for.
func desiredOf(pools []pool) (int, error) {
	n := 0
	for _, p := range pools {
		want, err := p.desired()
		if err != nil {
			return 0, err
		}
		n += int(want)
	}
	return n, nil
}

// desired is how many workers the pool asks for: its replicas, or the
// autoscaler's minimum. A pool left to the autoscaler without a readable
// minimum is an error: counted as zero, the wait would end before any
// worker is back and say they all are.
func (p pool) desired() (int32, error) {
	if p.Replicas != nil {
		return *p.Replicas, nil
	}
	raw, ok := p.Metadata.Annotations[capi.AutoscalerMinSizeAnnotation]
	lowest, err := strconv.ParseInt(raw, 10, 32)
	if !ok || err != nil || lowest < 0 {
		return 0, fmt.Errorf("cannot tell how many workers pool %s asks for: it has no replicas and its %s annotation is %q, not a count", p.Name, capi.AutoscalerMinSizeAnnotation, truncate(raw))
	}
	return int32(lowest), nil
}

// ResumePhase is where the workers are on their way back.
type ResumePhase struct {
	Desired, Provisioning, Running, NodesJoined int
	done                                        bool
}

// resumePhase counts machines by step: provisioning, running, and running
// with their node joined (the machine's nodeRef is set).
func resumePhase(ms []capi.Machine, desired int) ResumePhase {
	ph := ResumePhase{Desired: desired}
	for _, m := range ms {
		if m.DeletionTimestamp != nil {
			continue
		}
		switch {
		case m.Status.Phase == capi.MachinePhaseRunning && m.Status.NodeRef != nil:
			ph.Running++
			ph.NodesJoined++
		case m.Status.Phase == capi.MachinePhaseRunning:
			ph.Running++
		default:
			ph.Provisioning++
		}
	}
	ph.done = ph.NodesJoined >= desired
	return ph
}

func (ph ResumePhase) String() string {
	switch {
	case ph.done:
		return fmt.Sprintf("all %d worker(s) running with their nodes joined", ph.Desired)
	case ph.Running < ph.Desired:
		return fmt.Sprintf("machines provisioning: %d of %d running (%d provisioning)", ph.Running, ph.Desired, ph.Provisioning)
	default:
		return fmt.Sprintf("machines running, waiting for nodes: %d of %d joined", ph.NodesJoined, ph.Desired)
	}
}

func (o *ResumeOptions) print(plan *ResumePlan) error {
	err := o.Output.Print(o.Out, plan, func() cli.Table { return changesTable(plan.Changes) })
	if err != nil || !o.Output.IsTable() {
		return err
	}
	w := o.Out
	if len(plan.Patch) == 0 {
		fmt.Fprintf(w, "cluster %s is running: nothing to resume\n", plan.Metadata.Name)
	}
	if len(plan.NotRecorded) > 0 {
		fmt.Fprintf(w, "left at zero (no record of what they were): %s; use --replicas N to bring them back\n", strings.Join(plan.NotRecorded, ", "))
	}
	if len(plan.Gone) > 0 {
		fmt.Fprintf(w, "recorded pools no longer in the topology: %s\n", strings.Join(plan.Gone, ", "))
	}
	if plan.DryRun != "" && len(plan.Patch) > 0 {
		writePatch(w, plan.Patch)
	}
	if len(plan.Phases) > 0 {
		fmt.Fprintln(w)
		return cli.WriteTable(w, phasesTable(plan.Phases), false)
	}
	return nil
}

// Subjects is the Cluster resumed, for -o name.
func (p ResumePlan) Subjects() []string {
	return []string{api.ObjectName(capi.ClusterKind, p.Metadata.Name)}
}
