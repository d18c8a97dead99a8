// Bulk park and resume: many clusters, selected with -l, in one run.

package park

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// DefaultMaxConcurrent is how many clusters a bulk run changes and waits
// for at the same time, unless --max-concurrent says otherwise.
const DefaultMaxConcurrent = 5

// bulk is what park cluster and park resume take to act on every cluster a
// label selector picks instead of the one named.
type bulk struct {
	Selector      string
	AllNamespaces bool
	MaxConcurrent int
}

func (b *bulk) addBulkFlags(cmd *cobra.Command, verb string) {
	b.MaxConcurrent = DefaultMaxConcurrent
	cmd.Flags().StringVarP(&b.Selector, "selector", "l", "", "Instead of NAME: "+verb+" every cluster whose labels match this selector (e.g. -l env=dev), planning all of them first.")
	cmd.Flags().BoolVarP(&b.AllNamespaces, "all-namespaces", "A", false, "With -l: select the clusters of every namespace.")
	cmd.Flags().IntVar(&b.MaxConcurrent, "max-concurrent", b.MaxConcurrent, "With -l: how many clusters to "+verb+" (and wait for) at the same time.")
}

// bulkArgs takes NAME, or nothing when -l selects the clusters.
func bulkArgs(c *cobra.Command, args []string) error {
	if len(args) > 1 {
		return exitcode.UsageErrorf("%q takes exactly 1 argument (NAME), or none with -l, got %d", c.CommandPath(), len(args))
	}
	return nil
}

// validateBulk checks NAME against -l, -A and --max-concurrent.
func (o *changeOptions) validateBulk() error {
	switch {
	case o.Name == "" && o.Selector == "":
		return exitcode.UsageErrorf("name a cluster, or select clusters with -l")
	case o.Name != "" && o.Selector != "":
		return exitcode.UsageErrorf("name a cluster or select clusters with -l, not both")
	case o.AllNamespaces && o.Selector == "":
		return exitcode.UsageErrorf("-A selects clusters of every namespace with -l; a named cluster is in the namespace of -n")
	case o.MaxConcurrent < 1:
		return exitcode.UsageErrorf("--max-concurrent must be at least 1, got %d", o.MaxConcurrent)
	case o.Selector != "" && o.ClusterKubeconfig != "":
		return exitcode.UsageErrorf("--cluster-kubeconfig is one cluster's kubeconfig: with -l, --wait reaches each cluster through its NAME-kubeconfig secret")
	}
	return cli.ValidateSelector("--selector", o.Selector)
}

// BulkResult is how one cluster of a bulk run ended.
type BulkResult string

// Bulk results.
const (
	// BulkPlanned: a dry run, or a plan refused for another cluster;
	// nothing was changed.
	BulkPlanned BulkResult = "Planned"
	// BulkRefused: the cluster's plan was refused (the reason is its
	// error); nothing was changed.
	BulkRefused BulkResult = "Refused"
	// BulkParked and BulkResumed: changed (and, with --wait, done).
	BulkParked  BulkResult = "Parked"
	BulkResumed BulkResult = "Resumed"
	// BulkUnchanged: it was so already (and, with --wait, done).
	BulkUnchanged BulkResult = "Unchanged"
	// BulkTimedOut: --timeout ran out while waiting; the same command
	// again finishes it.
	BulkTimedOut BulkResult = "TimedOut"
	BulkFailed   BulkResult = "Failed"
	// BulkInterrupted: Ctrl-C or SIGTERM came while the cluster was being
	// changed or waited for, or before it started.
	BulkInterrupted BulkResult = "Interrupted"
)

// BulkReport is what park cluster -l and park resume -l print: one item
// per selected cluster, planned or done.
type BulkReport struct {
	api.ReportMeta `json:",inline"`
	DryRun         string     `json:"dryRun,omitempty"`
	Items          []BulkItem `json:"items"`

	allNamespaces bool
}

// BulkItem is one cluster of a bulk run.
type BulkItem struct {
	api.ReportMeta `json:",inline"`
	Result         BulkResult `json:"result"`
	// Changed: this run patched the cluster.
	Changed bool         `json:"changed"`
	Changes []PoolChange `json:"changes"`
	// Phases are a resume's named phases, after --wait.
	Phases []PhaseReport `json:"phases,omitempty"`
	// StateNow is the cluster's state read again after an interruption
	// (park list's STATE), which says what the run left.
	StateNow string `json:"stateNow,omitempty"`
	Error    string `json:"error,omitempty"`
	Duration string `json:"duration,omitempty"`
}

// bulkCommand is park cluster or park resume, one cluster of a bulk run at a
// time.
type bulkCommand interface {
	// planOne checks and plans cluster c as the command alone would,
	// changing nothing: its changes, or its refusal.
	planOne(ctx context.Context, p *Platform, c *capi.Cluster) ([]PoolChange, error)
	// runOne plans again from a fresh read, sends the patch and, with
	// --wait, waits; it fills the item's Changed, Changes and Phases.
	runOne(ctx context.Context, p *Platform, item *BulkItem) error
}

// in is the platform seen from another namespace (a cluster of -A).
func (p *Platform) in(namespace string) *Platform {
	q := *p
	q.Namespace = namespace
	return &q
}

// runBulk plans every selected cluster first and, when any plan is
// refused, refuses the whole batch before anything is changed (exit 3, as
// fleetdrain node does with several nodes): a batch half parked for a
// reason known in advance is worse than one not started. Then it runs the
// clusters, MaxConcurrent at a time, and prints one report. done is the
// result of a cluster changed.
func (o *changeOptions) runBulk(ctx context.Context, p *Platform, verb string, done BulkResult, cmd bulkCommand) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ns := o.Namespace
	if o.AllNamespaces {
		ns = ""
	}
	cs, err := p.Clusters(ctx, ns, o.Selector, cli.DefaultChunkSize)
	if err != nil {
		return err
	}
	if len(cs) == 0 {
		return exitcode.RefusedErrorf("no cluster matches selector %q in %s; nothing was changed", o.Selector, nsName(ns))
	}
	sort.Slice(cs, func(i, j int) bool {
		return cs[i].Namespace+"/"+cs[i].Name < cs[j].Namespace+"/"+cs[j].Name
	})
	kind := "Bulk" + strings.ToUpper(verb[:1]) + verb[1:]
	report := BulkReport{ReportMeta: api.NewReportMeta(kind+"Report", ""), DryRun: cli.DryRunName(o.DryRun), Items: make([]BulkItem, len(cs)), allNamespaces: o.AllNamespaces}
	platforms := make([]*Platform, len(cs))
	var refused []string
	for i := range cs {
		c, item := &cs[i], &report.Items[i]
		platforms[i] = p.in(c.Namespace)
		item.ReportMeta = api.NewNamespacedReportMeta(kind, c.Namespace, c.Name)
		item.Result = BulkPlanned
		changes, err := cmd.planOne(ctx, platforms[i], c)
		item.Changes = nonNil(changes)
		if err == nil {
			continue
		}
		if !exitcode.IsRefused(err) {
			return fmt.Errorf("planning cluster %s/%s: %w; no cluster was changed", c.Namespace, c.Name, err)
		}
		item.Result, item.Error = BulkRefused, err.Error()
		refused = append(refused, c.Namespace+"/"+c.Name)
	}
	if len(refused) > 0 {
		if err := o.Output.Print(o.Out, report, report.table); err != nil {
			return err
		}
		return exitcode.RefusedErrorf("cannot %s %d of the %d selected cluster(s): %s (each one's reason is in its row); no cluster was changed. Fix them, or leave them out with -l, then run again",
			verb, len(refused), len(cs), strings.Join(refused, ", "))
	}
	o.runEach(ctx, platforms, &report, done, cmd)
	if cli.Interrupted(ctx) {
		readStatesNow(ctx, platforms, &report)
	}
	if err := o.Output.Print(o.Out, report, report.table); err != nil {
		return err
	}
	return report.outcome(ctx)
}

// runEach runs the clusters, MaxConcurrent at a time. After Ctrl-C no
// cluster starts; those left are reported as not started.
func (o *changeOptions) runEach(ctx context.Context, platforms []*Platform, report *BulkReport, done BulkResult, cmd bulkCommand) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range o.MaxConcurrent {
		wg.Go(func() {
			for i := range work {
				item := &report.Items[i]
				if ctx.Err() != nil {
					item.Result, item.Error = BulkInterrupted, "not started: "+context.Cause(ctx).Error()
					continue
				}
				o.runItem(ctx, platforms[i], item, done, cmd)
			}
		})
	}
	for i := range report.Items {
		work <- i
	}
	close(work)
	wg.Wait()
}

func (o *changeOptions) runItem(ctx context.Context, p *Platform, item *BulkItem, done BulkResult, cmd bulkCommand) {
	start := time.Now()
	err := cmd.runOne(ctx, p, item)
	item.Duration = time.Since(start).Round(time.Second / 10).String()
	item.Result = bulkResult(ctx, err, item.Changed, o.DryRun != cli.DryRunNone, done)
	line := fmt.Sprintf("cluster %s/%s: %s", item.Metadata.Namespace, item.Metadata.Name, item.Result)
	if err != nil {
		item.Error = err.Error()
		line += ": " + item.Error
	}
	o.progress.Printf("%s", line)
}

// bulkResult is how one cluster's run ended.
func bulkResult(ctx context.Context, err error, changed, dryRun bool, done BulkResult) BulkResult {
	switch {
	case err == nil && dryRun:
		return BulkPlanned
	case err == nil && changed:
		return done
	case err == nil:
		return BulkUnchanged
	case cli.Interrupted(ctx):
		return BulkInterrupted
	case exitcode.Of(err) == exitcode.TimedOut:
		return BulkTimedOut
	case exitcode.IsRefused(err):
		// Refused on the fresh read of its run (it changed since the
		// plan): nothing was changed on this cluster.
		return BulkRefused
	}
	return BulkFailed
}

// readStatesNow reads again, after an interruption, every cluster whose run
// did not end, to say where it was left: a patch cut short may or may not
// have reached the server.
func readStatesNow(ctx context.Context, platforms []*Platform, report *BulkReport) {
	gctx, cancel := cli.GiveBackContext(ctx)
	defer cancel()
	for i := range report.Items {
		item := &report.Items[i]
		if item.Result != BulkInterrupted {
			continue
		}
		c, err := platforms[i].Cluster(gctx, item.Metadata.Name)
		if err != nil {
			item.StateNow = "unknown: " + err.Error()
			continue
		}
		item.StateNow = Row(c).State
	}
}

// exitCode is the worst outcome of the clusters: 130 after Ctrl-C; 1 when
// a cluster failed, or was refused on its run while another one was
// changed; 3 when every cluster not done was refused and none was changed
// (nothing was); 4 when the clusters not done only ran out of --timeout;
// else 0.
func (r BulkReport) exitCode(interrupted bool) int {
	if interrupted {
		return exitcode.Interrupted
	}
	failed, refused, timedOut, changed := false, false, false, false
	for _, item := range r.Items {
		changed = changed || item.Changed
		switch item.Result {
		case BulkFailed, BulkInterrupted:
			failed = true
		case BulkRefused:
			refused = true
		case BulkTimedOut:
			timedOut = true
		}
	}
	switch {
	case failed, refused && changed:
		return exitcode.Failed
	case refused:
		return exitcode.Refused
	case timedOut:
		return exitcode.TimedOut
	}
	return exitcode.OK
}

// outcome is the error a bulk run ends with: none when every cluster is
// done; otherwise which ones are not and where they are, what this run
// changed, and that the same command again finishes (the clusters done
// are skipped quickly). Its exit code is exitCode's.
func (r BulkReport) outcome(ctx context.Context) error {
	var notDone, changed []string
	for _, item := range r.Items {
		name := item.Metadata.Namespace + "/" + item.Metadata.Name
		if item.Changed {
			changed = append(changed, name)
		}
		switch item.Result {
		case BulkPlanned, BulkParked, BulkResumed, BulkUnchanged:
			continue
		}
		what := string(item.Result)
		if stuck := stuckIn(item.Phases); stuck != "" {
			what += " in phase " + stuck
		}
		if item.StateNow != "" {
			what += ", now " + item.StateNow
		}
		notDone = append(notDone, name+" ("+what+")")
	}
	if len(notDone) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d of %d cluster(s) not done: %s; changed by this run: %s; run the same command again to finish (the clusters done are skipped quickly)",
		len(notDone), len(r.Items), strings.Join(notDone, ", "), noneOr(changed))
	err := errors.New(msg)
	switch r.exitCode(cli.Interrupted(ctx)) {
	case exitcode.Interrupted:
		return fmt.Errorf("%s: %w", msg, context.Cause(ctx))
	case exitcode.Refused:
		return exitcode.RefusedErrorf("%s; nothing was changed", msg)
	case exitcode.TimedOut:
		return exitcode.TimedOutError(err)
	}
	return err
}

// stuckIn is the phase a resume stopped in, or "".
func stuckIn(phases []PhaseReport) string {
	for _, ph := range phases {
		if ph.State == PhaseStuck {
			return ph.Name
		}
	}
	return ""
}

// table is the human view: one row per cluster.
func (r BulkReport) table() cli.Table {
	t := cli.Table{Columns: []cli.Column{{Name: "NAME"}, {Name: "RESULT"}, {Name: "POOLS"}, {Name: "PHASE"}, {Name: "DURATION"}, {Name: "DETAIL"}, {Name: "CHANGES", Wide: true}}}
	if r.allNamespaces {
		t.Columns = append([]cli.Column{{Name: "NAMESPACE"}}, t.Columns...)
	}
	for _, item := range r.Items {
		var pools, changes []string
		for _, c := range item.Changes {
			pools = append(pools, c.Name)
			changes = append(changes, fmt.Sprintf("%s: %s -> %s", c.Name, c.From, c.To))
		}
		phase := ""
		if len(item.Phases) > 0 {
			phase = phaseSummary(item.Phases)
		}
		detail := item.Error
		if item.StateNow != "" {
			detail = strings.TrimPrefix(detail+"; now "+item.StateNow, "; ")
		}
		row := []string{item.Metadata.Name, string(item.Result), orDash(strings.Join(pools, ",")), phase, item.Duration, detail, strings.Join(changes, "; ")}
		if r.allNamespaces {
			row = append([]string{item.Metadata.Namespace}, row...)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// Subjects are the Clusters of the run, for -o name.
func (r BulkReport) Subjects() []string {
	names := make([]string, 0, len(r.Items))
	for _, item := range r.Items {
		names = append(names, api.ObjectName(capi.ClusterKind, item.Metadata.Name))
	}
	return names
}

func nonNil(changes []PoolChange) []PoolChange {
	if changes == nil {
		return []PoolChange{}
	}
	return changes
}

// planOne is park's check and plan of one cluster of a bulk run. The bulk
// wait reads only the platform (no survivors), so it needs no way into
// the workload cluster.
func (o *ParkOptions) planOne(ctx context.Context, p *Platform, c *capi.Cluster) ([]PoolChange, error) {
	if err := p.preflight(ctx, c.Name, o.DryRun, o.Wait, parkFollows); err != nil {
		return nil, err
	}
	plan, err := o.plan(ctx, p, c, o.by)
	if err != nil {
		return nil, err
	}
	return plan.Changes, nil
}

func (o *ParkOptions) runOne(ctx context.Context, p *Platform, item *BulkItem) error {
	one := *o
	one.Name, one.Namespace = item.Metadata.Name, item.Metadata.Namespace
	plan, err := one.apply(ctx, p, o.by)
	if err != nil {
		return err
	}
	item.Changes, item.Changed = nonNil(plan.Changes), len(plan.Patch) > 0 && o.DryRun == cli.DryRunNone
	if !o.waits() {
		return nil
	}
	return one.wait(ctx, p, cli.NewDeadline(o.Timeout))
}

// planOne is resume's check and plan of one cluster of a bulk run.
func (o *ResumeOptions) planOne(ctx context.Context, p *Platform, c *capi.Cluster) ([]PoolChange, error) {
	one := o.forCluster(c.Namespace, c.Name)
	if err := one.check(ctx, p); err != nil {
		return nil, err
	}
	plan, err := one.plan(c)
	if err != nil {
		return nil, err
	}
	return plan.Changes, nil
}

func (o *ResumeOptions) runOne(ctx context.Context, p *Platform, item *BulkItem) error {
	one := o.forCluster(item.Metadata.Namespace, item.Metadata.Name)
	plan, err := one.apply(ctx, p)
	if err != nil {
		return err
	}
	item.Changes, item.Changed = nonNil(plan.Changes), len(plan.Patch) > 0 && o.DryRun == cli.DryRunNone
	err = one.wait(ctx, p, plan)
	item.Phases = plan.Phases
	return err
}

// forCluster is a copy of the options for one cluster of a bulk run, with
// a view of its own.
func (o *ResumeOptions) forCluster(namespace, name string) *ResumeOptions {
	one := *o
	one.Name, one.Namespace, one.view = name, namespace, resumeView{}
	return &one
}
