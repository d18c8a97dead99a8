package fleetdrain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/drain"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// NodeOptions are the flags and clients of `fleetdrain node`.
type NodeOptions struct {
	genericiooptions.IOStreams
	Output *cli.Output

	Nodes                    []string
	Selector                 string
	PodSelector              string
	Force                    bool
	IgnoreDaemonSets         bool
	DeleteEmptyDirData       bool
	GracePeriod              int
	Timeout                  time.Duration
	DisableEviction          bool
	SkipWaitForDeleteTimeout int
	MaxConcurrent            int
	PDBTimeout               time.Duration
	UncordonOnFailure        bool
	Surge                    bool
	ChunkSize                int64
	DryRun                   cli.DryRun
	// PlatformKubeconfig is the management cluster's kubeconfig file: the
	// Machines of the nodes and their MachineDrainRules.
	PlatformKubeconfig string
	// UnhealthyPods is --unhealthy-pods; skipWaitSet tells whether
	// --skip-wait-for-delete-timeout was given (else an unreachable node
	// gets Cluster API's default).
	UnhealthyPods string
	skipWaitSet   bool

	f       *cli.Factory
	client  kubernetes.Interface
	drainer *NodeDrainer
	// lifecycle: the API server serves the Node lifecycle conditions.
	lifecycle bool
}

// NewNodeOptions returns the defaults: as safe as kubectl drain.
func NewNodeOptions(streams genericiooptions.IOStreams) *NodeOptions {
	return &NodeOptions{IOStreams: streams, Output: cli.NewOutput(), GracePeriod: -1, UnhealthyPods: UnhealthyPodsNever, MaxConcurrent: 1, PDBTimeout: 5 * time.Minute, ChunkSize: cli.DefaultChunkSize}
}

// NewCmdNode builds `kubectl fleetdrain node`.
func NewCmdNode(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewNodeOptions(streams)
	o.f = f
	cmd := &cobra.Command{
		Use:   "node NODE... | -l SELECTOR",
		Short: "Cordon nodes and evict their pods, several at once, within every disruption budget",
		Long: cli.LongDesc(`
			Drain nodes the way kubectl drain does (the same filters and eviction
			rules), with what it lacks:

			* a plan first: per node the pods to evict, the pods skipped, and what
			  blocks (pods without a controller, local data, a PodDisruptionBudget
			  that allows no disruption, named with the pods it protects).
			  --dry-run prints exactly this plan and changes nothing (with
			  --dry-run=server the cordons and every eviction are sent with
			  dryRun, and an eviction the API server would refuse now is a
			  warning);
			* pods that the flags do not allow to remove refuse the whole run
			  before any node is cordoned (exit 3);
			* several nodes at once (--max-concurrent), sharing one view of the
			  disruption budgets so that together they never take more than a
			  budget allows;
			* a budget that keeps refusing is waited on for --pdb-timeout, then the
			  node fails and the budget is named; --uncordon-on-failure gives the
			  node back then;
			* on a Cluster API Machine's node, the Machine controller's own
			  drain: the pod label cluster.x-k8s.io/drain (skip,
			  wait-completed), then the MachineDrainRules read from
			  --platform-kubeconfig (or the current context when it holds the
			  Machine); skipped pods are never evicted, wait-completed pods are
			  waited for, the rest evicted in batches by order, lowest first;
			* a node that is unreachable (Ready Unknown) or NotReady is named in
			  the plan; on an unreachable node a pod terminating longer than
			  --skip-wait-for-delete-timeout (1 s when not given, as Cluster API
			  does) counts as gone; --unhealthy-pods=evict-if-budget-empty lets
			  go of a pod that is not Ready when its budgets have no healthy pod
			  to lose, never of a Ready pod;
			* a summary per node with its Cluster API Machine (annotation
			  cluster.x-k8s.io/machine), the name to hand to the platform team;
			* where the API server runs with the NodeLifecycleConditions gate on
			  (Kubernetes 1.37, alpha; read from its /metrics), each node's
			  DrainInProgress and Drained conditions say how its drain stands:
			  DrainInProgress True while draining, Drained True once drained,
			  both False after a failure, Ctrl-C or uncordon;
			* Ctrl-C or SIGTERM stops the evictions and waits, prints the summary
			  and exits 130; --uncordon-on-failure gives back the nodes it
			  cordoned then too.

			Each cordon carries the annotation ` + CordonedByAnnotation + `, so a
			run after an interrupted one knows the cordon as its own (and gives it
			back on failure), and a node someone else cordoned is never uncordoned.

			All nodes are cordoned first, so evicted pods do not land on a node
			about to be drained. Exit 0 only when every node was drained; exit 4
			when --timeout ran out on the nodes not drained (they stay cordoned:
			run the same command again to finish).`),
		Example: templates.Examples(`
			# Show what draining two nodes would do, changing nothing
			kubectl fleetdrain node worker-1 worker-2 --ignore-daemonsets --dry-run=client

			# Drain every node of a pool, two at a time, waiting at most 2 minutes on any budget
			kubectl fleetdrain node -l pool=md-0 --ignore-daemonsets --delete-emptydir-data \
			  --max-concurrent 2 --pdb-timeout 2m

			# Drain a node of a tenant cluster; give it back if the drain fails
			kubectl fleetdrain node worker-3 --kubeconfig app.kubeconfig --ignore-daemonsets --uncordon-on-failure

			# Drain a Machine's node as Cluster API would, with the management cluster's MachineDrainRules
			kubectl fleetdrain node worker-3 --kubeconfig app.kubeconfig --platform-kubeconfig mgmt.kubeconfig --ignore-daemonsets

			# The same report as JSON, for a script
			kubectl fleetdrain node worker-1 --ignore-daemonsets -o json`),
		ValidArgsFunction: cli.ResourceNames(f, "nodes"),
		RunE:              cli.RunE(o, o.Complete),
	}
	flags := cmd.Flags()
	flags.StringVarP(&o.Selector, "selector", "l", o.Selector, "Drain the nodes matching this label selector instead of named nodes")
	flags.StringVar(&o.PodSelector, "pod-selector", o.PodSelector, "Only evict pods matching this label selector")
	flags.BoolVar(&o.Force, "force", o.Force, "Also delete pods that no controller manages (they are not recreated)")
	flags.BoolVar(&o.IgnoreDaemonSets, "ignore-daemonsets", o.IgnoreDaemonSets, "Leave DaemonSet-managed pods on the node")
	flags.BoolVar(&o.DeleteEmptyDirData, "delete-emptydir-data", o.DeleteEmptyDirData, "Also evict pods with emptyDir volumes (their data is lost)")
	flags.IntVar(&o.GracePeriod, "grace-period", o.GracePeriod, "Seconds each pod gets to terminate; -1 uses the pod's own terminationGracePeriodSeconds")
	flags.DurationVar(&o.Timeout, "timeout", o.Timeout, "Give up on a node after this long, leaving it cordoned, and exit 4 (0: no limit)")
	flags.BoolVar(&o.DisableEviction, "disable-eviction", o.DisableEviction, "Delete pods instead of evicting them; bypasses every PodDisruptionBudget")
	flags.IntVar(&o.SkipWaitForDeleteTimeout, "skip-wait-for-delete-timeout", o.SkipWaitForDeleteTimeout, "Stop waiting for a pod terminating for longer than this many seconds (0: always wait)")
	flags.IntVar(&o.MaxConcurrent, "max-concurrent", o.MaxConcurrent, "How many nodes to drain at the same time")
	flags.DurationVar(&o.PDBTimeout, "pdb-timeout", o.PDBTimeout, "How long an eviction waits for a PodDisruptionBudget that allows no disruption before the node fails")
	flags.BoolVar(&o.UncordonOnFailure, "uncordon-on-failure", o.UncordonOnFailure, "Uncordon a node whose drain failed or was interrupted (never one someone else cordoned)")
	flags.StringVar(&o.UnhealthyPods, unhealthyPodsFlag, o.UnhealthyPods, "never, or evict-if-budget-empty: delete a pod that is not Ready when its eviction is refused and its budgets have no healthy pod to lose (as unhealthyPodEvictionPolicy AlwaysAllow would evict it); never a Ready pod")
	flags.StringVar(&o.PlatformKubeconfig, platformKubeconfigFlag, o.PlatformKubeconfig, "Kubeconfig of the management cluster: on a Cluster API Machine's node, drain as its Machine controller does (MachineDrainRules)")
	flags.BoolVar(&o.Surge, "surge", o.Surge, "For a Deployment's pod that a budget allowing no disruption blocks, scale the Deployment up by one first and evict the pod once its budget allows it; the replicas are given back after, also on failure or Ctrl-C")
	cli.AddChunkSizeFlag(cmd, &o.ChunkSize)
	cli.AddDryRunFlag(cmd)
	o.Output.AddFlags(cmd)
	return cmd
}

// Complete reads the dry-run strategy and the node names.
func (o *NodeOptions) Complete(cmd *cobra.Command, args []string) error {
	var err error
	o.DryRun, err = cli.GetDryRun(cmd)
	o.Nodes = args
	o.skipWaitSet = cmd.Flags().Changed(skipWaitForDeleteTimeoutFlagName)
	return err
}

// Validate rejects bad flags before any request.
func (o *NodeOptions) Validate() error {
	if err := o.Output.Validate(); err != nil {
		return err
	}
	if len(o.Nodes) == 0 && o.Selector == "" {
		return exitcode.UsageErrorf("name at least one node, or select nodes with -l")
	}
	if len(o.Nodes) > 0 && o.Selector != "" {
		return exitcode.UsageErrorf("name nodes or select them with -l, not both")
	}
	if err := cli.ValidateNames(cli.NodeName, o.Nodes...); err != nil {
		return err
	}
	if err := cli.ValidateTimeout(o.Timeout); err != nil {
		return err
	}
	if err := cli.ValidateChunkSize(o.ChunkSize); err != nil {
		return err
	}
	if err := validateUnhealthyPods(o.UnhealthyPods); err != nil {
		return err
	}
	for _, s := range []struct{ flag, value string }{{"--selector", o.Selector}, {"--pod-selector", o.PodSelector}} {
		if err := cli.ValidateSelector(s.flag, s.value); err != nil {
			return err
		}
	}
	switch {
	case o.MaxConcurrent < 1:
		return exitcode.UsageErrorf("--max-concurrent must be at least 1, got %d", o.MaxConcurrent)
	case o.PDBTimeout <= 0:
		return exitcode.UsageErrorf("--pdb-timeout must be positive, got %s", o.PDBTimeout)
	case o.SkipWaitForDeleteTimeout < 0:
		return exitcode.UsageErrorf("--skip-wait-for-delete-timeout must not be negative, got %d", o.SkipWaitForDeleteTimeout)
	case o.Surge && o.DisableEviction:
		return exitcode.UsageErrorf("--surge waits for budgets, which --disable-eviction bypasses: use one or the other")
	case o.GracePeriod < -1:
		return exitcode.UsageErrorf("--grace-period must be -1 (the pod's own) or more, got %d", o.GracePeriod)
	}
	return nil
}

// Run builds the client (at the plugins' request rate, clientrate.QPS: one
// eviction per pod, for several nodes at once) and drains the nodes.
func (o *NodeOptions) Run(ctx context.Context) error {
	var err error
	if o.client, err = o.f.KubernetesClientSet(); err != nil {
		return err
	}
	o.lifecycle = LifecycleConditionsServed(ctx, o.client)
	return o.drainNodes(ctx)
}

// drainNodes plans every node, refuses before any change when something
// blocks, then cordons all nodes and drains them, MaxConcurrent at a time.
func (o *NodeOptions) drainNodes(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nodes, err := o.selectNodes(ctx)
	if err != nil {
		return err
	}
	if err := o.newDrainer(ctx, len(nodes)); err != nil {
		return err
	}
	if o.drainer.Rules, err = o.readRules(ctx, nodes); err != nil {
		return err
	}
	report := DrainReport{ReportMeta: api.NewReportMeta("DrainReport", "nodes"), DryRun: cli.DryRunName(o.DryRun), LifecycleConditions: o.lifecycle}
	var founds []NodePods
	for _, n := range nodes {
		found, err := o.drainer.Find(ctx, n)
		if err != nil {
			return fmt.Errorf("%w; nothing was changed", err)
		}
		founds = append(founds, found)
		item := PlanNode(found, o.drainer.Budgets.List())
		planHealth(&item, found, o.drainer.Budgets.List(), o.drainer.Health, o.SkipWaitForDeleteTimeout)
		report.Items = append(report.Items, item)
	}
	order, err := o.planAcrossNodes(ctx, founds, &report)
	if err != nil {
		return fmt.Errorf("%w; nothing was changed", err)
	}
	o.drainer.Turns = newBudgetTurns(order, report.Items)
	var surges map[string]string
	if o.Surge {
		if surges, err = planSurges(ctx, o.client, founds, &report, o.drainer.Budgets.List()); err != nil {
			return fmt.Errorf("%w; nothing was changed", err)
		}
		o.drainer.Surge = newSurger(o.client, surges)
	}
	if refused := refusedNodes(report); len(refused) > 0 {
		for i := range report.Items {
			if report.Items[i].refused() {
				report.Items[i].Result = NodeRefused
			}
		}
		if err := o.Output.Print(o.Out, report, report.planTable); err != nil {
			return err
		}
		return exitcode.RefusedErrorf("cannot drain node(s) %s: %s; no node was cordoned. Fix the blockers or pass the flag each one names, then run again (`kubectl fleetdrain check %s` lists all that their replacement would block, break or lose)",
			strings.Join(refused, ", "), refusalSummary(report), strings.Join(refused, " "))
	}
	needs := append(nodeAccess(report, o.DisableEviction), surgeAccess(surges)...)
	if o.lifecycle {
		needs = append(needs, core("patch", "nodes", "status", ""))
	}
	if err := preflight(ctx, o.client.AuthorizationV1(), o.DryRun, needs); err != nil {
		return err
	}
	if o.DryRun == cli.DryRunServer {
		if err := o.serverDryRun(ctx, nodes, founds, &report); err != nil {
			return err
		}
	}
	if o.DryRun != cli.DryRunNone {
		return o.Output.Print(o.Out, report, report.planTable)
	}
	return o.drain(ctx, nodes, &report)
}

// serverDryRun sends what a run sends, each with dryRun: every cordon, then
// every eviction (or delete). An eviction the API server would refuse now
// (a budget allowing no disruption) is a warning of its node: the real run
// waits on it for --pdb-timeout.
func (o *NodeOptions) serverDryRun(ctx context.Context, nodes []*corev1.Node, founds []NodePods, report *DrainReport) error {
	for _, n := range nodes {
		if _, err := Cordon(ctx, o.client, n.Name, o.DryRun); err != nil {
			return err
		}
	}
	for i, found := range founds {
		for _, pod := range found.Evict {
			err := o.drainer.removePod(pod)
			switch {
			case err == nil, apierrors.IsNotFound(err):
			case apierrors.IsTooManyRequests(err):
				report.Items[i].Warnings = append(report.Items[i].Warnings,
					fmt.Sprintf("pod %s: the API server would refuse its eviction now: %v", namespacedName(pod.Namespace, pod.Name), err))
			default:
				return fmt.Errorf("server dry run of removing pod %s: %w", namespacedName(pod.Namespace, pod.Name), err)
			}
		}
	}
	return nil
}

func (o *NodeOptions) drain(ctx context.Context, nodes []*corev1.Node, report *DrainReport) error {
	say := o.drainer.Progress.p.Printf
	for i, n := range nodes {
		changed, err := Cordon(ctx, o.client, n.Name, cli.DryRunNone)
		if err != nil {
			return o.cordonFailed(ctx, nodes[:i], nodes[i:], err)
		}
		if changed {
			say("node/%s cordoned", n.Name)
		}
		o.setConditions(ctx, n.Name, true, false, reasonDraining)
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range o.MaxConcurrent {
		wg.Go(func() {
			for i := range work {
				o.drainOne(ctx, nodes[i], &report.Items[i])
			}
		})
	}
	// After Ctrl-C no node starts; the ones left are reported as not drained.
	for i := range nodes {
		if ctx.Err() != nil {
			o.notStarted(ctx, nodes[i], &report.Items[i])
			continue
		}
		select {
		case work <- i:
		case <-ctx.Done():
			o.notStarted(ctx, nodes[i], &report.Items[i])
		}
	}
	close(work)
	wg.Wait()
	o.drainer.Progress.Done()
	if err := o.Output.Print(o.Out, report, report.resultTable); err != nil {
		return err
	}
	if o.Output.IsTable() {
		fmt.Fprint(o.ErrOut, report.machineNote())
	}
	return report.outcome(ctx, len(nodes))
}

// cordonFailed ends a run whose cordons stopped part way, before any pod was
// evicted: the nodes cordoned before are given back with
// --uncordon-on-failure, and the error says which are cordoned and which not.
func (o *NodeOptions) cordonFailed(ctx context.Context, cordoned, not []*corev1.Node, err error) error {
	if cli.Interrupted(ctx) {
		err = fmt.Errorf("%w (%w)", err, context.Cause(ctx))
	}
	var kept, given []string
	for _, n := range cordoned {
		if o.UncordonOnFailure && o.giveBack(ctx, n.Name) == nil {
			given = append(given, n.Name)
			continue
		}
		kept = append(kept, n.Name)
	}
	var notNames []string
	for _, n := range not {
		notNames = append(notNames, n.Name)
	}
	done := "none"
	if len(kept) > 0 {
		done = fmt.Sprintf("%s (`kubectl fleetdrain uncordon node %s` gives them back)", strings.Join(kept, ", "), strings.Join(kept, " "))
	}
	msg := fmt.Sprintf("cordoned: %s; not cordoned: %s; no pod was evicted", done, strings.Join(notNames, ", "))
	if len(given) > 0 {
		msg += "; given back: " + strings.Join(given, ", ")
	}
	return fmt.Errorf("%w; %s: run the same command again to drain them all", err, msg)
}

func (o *NodeOptions) drainOne(ctx context.Context, node *corev1.Node, r *NodeReport) {
	start := time.Now()
	evicted, err := o.drainer.Drain(ctx, node)
	r.Evicted = evicted
	r.UnhealthyDeleted = o.drainer.unhealthyDeleted(node.Name)
	r.Duration = time.Since(start).Round(time.Second / 10).String()
	o.drainer.Progress.Finished(node.Name, err == nil)
	if err == nil {
		r.Result = NodeDrained
		o.drainer.Progress.p.Printf("node/%s drained", node.Name)
		o.setConditions(ctx, node.Name, false, true, reasonDrained)
		return
	}
	r.Result, r.Error = NodeFailed, err.Error()
	reason := reasonFailed
	switch {
	case cli.Interrupted(ctx):
		r.Result, reason = NodeInterrupted, reasonInterrupted
	case errors.Is(err, ErrNodeTimedOut):
		r.Result, reason = NodeTimedOut, reasonTimedOut
	}
	o.drainer.Progress.p.Printf("node/%s not drained: %v", node.Name, err)
	o.setConditions(ctx, node.Name, false, false, reason)
	o.giveBackAfterFailure(ctx, node, r)
}

// notStarted records a node whose drain never started because the run was
// interrupted; it is cordoned, so it is given back like a failed one.
func (o *NodeOptions) notStarted(ctx context.Context, node *corev1.Node, r *NodeReport) {
	r.Result, r.Error = NodeInterrupted, "not started: "+context.Cause(ctx).Error()
	o.drainer.Turns.leave(node.Name)
	o.drainer.Progress.Finished(node.Name, false)
	o.setConditions(ctx, node.Name, false, false, reasonInterrupted)
	o.giveBackAfterFailure(ctx, node, r)
}

// giveBackAfterFailure uncordons a node that was not drained, with
// --uncordon-on-failure, when the cordon is fleetdrain's (this run's, or an
// interrupted run's): never one someone else cordoned.
func (o *NodeOptions) giveBackAfterFailure(ctx context.Context, node *corev1.Node, r *NodeReport) {
	if !o.UncordonOnFailure {
		return
	}
	if err := o.giveBack(ctx, node.Name); err != nil {
		r.Error += "; " + err.Error()
		return
	}
	r.Uncordoned = true
}

// giveBack uncordons a node fleetdrain cordoned, with a fresh context: the
// run's own may be over (Ctrl-C, --timeout).
func (o *NodeOptions) giveBack(ctx context.Context, name string) error {
	gctx, cancel := cli.GiveBackContext(ctx)
	defer cancel()
	result, err := GiveBack(gctx, o.client, name, cli.DryRunNone)
	if err != nil {
		return err
	}
	if result != GaveBack {
		return fmt.Errorf("node %s left as it is: %s", name, result)
	}
	o.drainer.Progress.p.Printf("node/%s uncordoned", name)
	o.setConditions(ctx, name, false, false, reasonUncordoned)
	return nil
}

// setConditions writes the node's DrainInProgress and Drained conditions
// where the API server serves them, with a fresh context (the run's own may
// be over). They only tell others what the drain does: a failed write is a
// warning, never a reason to stop or fail the drain.
func (o *NodeOptions) setConditions(ctx context.Context, name string, inProgress, drained bool, reason string) {
	if !o.lifecycle {
		return
	}
	gctx, cancel := cli.GiveBackContext(ctx)
	defer cancel()
	if err := setDrainConditions(gctx, o.client, name, inProgress, drained, reason, "kubectl fleetdrain: "+conditionMessages[reason]); err != nil {
		o.drainer.Progress.p.Printf("warning: %v", err)
	}
}

func (o *NodeOptions) selectNodes(ctx context.Context) ([]*corev1.Node, error) {
	var nodes []*corev1.Node
	if o.Selector != "" {
		list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return o.client.CoreV1().Nodes().List(ctx, opts)
		}
		err := cli.EachInChunks(ctx, list, o.ChunkSize, metav1.ListOptions{LabelSelector: o.Selector}, func(n *corev1.Node) error {
			nodes = append(nodes, n)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("listing nodes with selector %q: %w", o.Selector, err)
		}
		if len(nodes) == 0 {
			return nil, exitcode.RefusedErrorf("no node matches selector %q; nothing was changed", o.Selector)
		}
		return nodes, nil
	}
	seen := map[string]bool{}
	for _, name := range o.Nodes {
		if seen[name] {
			continue
		}
		seen[name] = true
		n, err := o.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, exitcode.RefusedErrorf("node %q not found; nothing was changed (list them with `kubectl get nodes`)", name)
		}
		if err != nil {
			return nil, fmt.Errorf("reading node %s: %w", name, err)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

func (o *NodeOptions) newDrainer(ctx context.Context, nodes int) error {
	h := &drain.Helper{
		Ctx:                             ctx,
		Client:                          o.client,
		Force:                           o.Force,
		GracePeriodSeconds:              o.GracePeriod,
		IgnoreAllDaemonSets:             o.IgnoreDaemonSets,
		Timeout:                         o.Timeout,
		DeleteEmptyDirData:              o.DeleteEmptyDirData,
		PodSelector:                     o.PodSelector,
		DisableEviction:                 o.DisableEviction,
		SkipWaitForDeleteTimeoutSeconds: o.SkipWaitForDeleteTimeout,
		ChunkSize:                       o.ChunkSize,
		EvictErrorRetryDelay:            evictRetry,
		DryRunStrategy:                  cmdutil.DryRunStrategy(o.DryRun),
		// Only the library's pod listing and single evictions are used: its
		// warnings reach the plan through Find, and nothing else writes.
		Out:    io.Discard,
		ErrOut: io.Discard,
	}
	budgets, err := NewBudgetView(ctx, o.client)
	if err != nil {
		return err
	}
	d := &NodeDrainer{
		Helper: h, Budgets: budgets, PDBTimeout: o.PDBTimeout, Progress: NewDrainProgress(cli.NewProgress(o.ErrOut), nodes),
		Health: NodeHealth{SkipWaitSet: o.skipWaitSet, UnhealthyPods: o.UnhealthyPods},
	}
	if o.Timeout > 0 {
		d.Health.Timeout = o.Timeout.String()
	}
	if !o.DisableEviction {
		if d.Eviction, err = drain.CheckEvictionSupport(o.client); err != nil {
			return fmt.Errorf("checking eviction support: %w", err)
		}
	}
	o.drainer = d
	return nil
}

func refusedNodes(r DrainReport) []string {
	var out []string
	for _, n := range r.Items {
		if n.refused() {
			out = append(out, n.Metadata.Name)
		}
	}
	return out
}

func refusalSummary(r DrainReport) string {
	var msgs []string
	for _, n := range r.Items {
		for _, b := range n.Blockers {
			if b.Refuses {
				msgs = append(msgs, n.Metadata.Name+": "+b.Message)
			}
		}
	}
	return strings.Join(msgs, "; ")
}
