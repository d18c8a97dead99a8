// The waves of `fleetdrain cluster`: taint, wait for the works to move (and,
// with --wait-for=healthy, to be Available elsewhere), give back on Ctrl-C.

package fleetdrain

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// drainWaves checks access, then taints each wave's clusters and waits for
// it before the next (sent with dryRun under --dry-run=server; nothing
// under =client). Its error is the run's outcome.
func (o *ClusterOptions) drainWaves(ctx context.Context, report *ClusterDrainReport) error {
	if o.DryRun == cli.DryRunClient {
		return nil
	}
	if err := preflight(ctx, o.access, o.DryRun, o.clusterAccess(*report)); err != nil {
		return err
	}
	if o.DryRun == cli.DryRunServer {
		for i, name := range o.Clusters {
			if err := addDrainTaint(ctx, o.dynamic, name, o.DryRun); err != nil {
				return taintError(err, nil, o.Clusters[i:])
			}
		}
		return nil
	}
	progress := cli.NewProgress(o.ErrOut)
	items := report.Items
	for start := 0; start < len(items); {
		end := start + 1
		for end < len(items) && items[end].Wave == items[start].Wave {
			end++
		}
		if err := o.drainWave(ctx, items[start:end], progress); err != nil {
			var later []string
			for i := end; i < len(items); i++ {
				items[i].Result = ClusterNotStarted
				later = append(later, items[i].Metadata.Name)
			}
			if len(later) > 0 {
				err = fmt.Errorf("%w; not started, not tainted: %s", err, strings.Join(later, ", "))
			}
			return err
		}
		start = end
	}
	return nil
}

// drainWave taints the wave's clusters, waits for their works to leave
// and, with --wait-for=healthy, to be Available on their new clusters, all
// within one --timeout.
func (o *ClusterOptions) drainWave(ctx context.Context, wave []ClusterReport, p *cli.Progress) error {
	deadline := cli.NewDeadline(o.Timeout)
	for i := range wave {
		name := wave[i].Metadata.Name
		if err := addDrainTaint(ctx, o.dynamic, name, cli.DryRunNone); err != nil {
			for j := i; j < len(wave); j++ {
				wave[j].Result = ClusterNotStarted
			}
			return o.stopped(ctx, wave[:i], taintError(err, names(wave[:i]), names(wave[i:])))
		}
		fmt.Fprintf(o.ErrOut, "managedcluster/%s tainted %s:NoSelect (wave %d)\n", name, DrainTaintKey, wave[i].Wave)
	}
	var timedOut []string
	for i := range wave {
		err := o.waitMoved(ctx, wave[i].Metadata.Name, wave[i].Moves, deadline, p)
		if exitcode.Of(err) == exitcode.TimedOut {
			wave[i].Result = ClusterTimedOut
			timedOut = append(timedOut, wave[i].Metadata.Name)
			continue
		}
		if err != nil {
			return o.stopped(ctx, wave, err)
		}
		wave[i].Result = ClusterDrained
	}
	if len(timedOut) > 0 {
		return exitcode.TimedOutError(fmt.Errorf("placement-managed works did not leave %s within %s; the taint stays on: run the same command again to keep waiting",
			strings.Join(timedOut, ", "), o.Timeout))
	}
	if o.WaitFor == waitForHealthy {
		return o.waitHealthy(ctx, wave, deadline, p)
	}
	return nil
}

func names(items []ClusterReport) []string {
	out := make([]string, len(items))
	for i, c := range items {
		out[i] = c.Metadata.Name
	}
	return out
}

// stopped ends a wave that an error or Ctrl-C cut short. On Ctrl-C, the
// clusters this run tainted whose works had not started to leave get the
// taint back off: nothing of theirs has moved yet. The others keep it.
func (o *ClusterOptions) stopped(ctx context.Context, tainted []ClusterReport, err error) error {
	var given, kept []string
	for i := range tainted {
		c := &tainted[i]
		if c.Result == ClusterDrained || c.Result == ClusterTimedOut {
			kept = append(kept, c.Metadata.Name)
			continue
		}
		c.Result = ClusterNotDrained
		if cli.Interrupted(ctx) && !c.AlreadyTainted && o.giveBack(ctx, *c) {
			c.Result = ClusterGivenBack
			given = append(given, c.Metadata.Name)
			continue
		}
		kept = append(kept, c.Metadata.Name)
	}
	if len(given) > 0 {
		err = fmt.Errorf("%w; the drain taint was taken off again from %s (their works had not started to leave)", err, strings.Join(given, ", "))
	}
	if len(kept) > 0 {
		err = fmt.Errorf("%w; the drain taint stays on %s: run the same command again to keep waiting, or give them back with `kubectl fleetdrain uncordon cluster %s`",
			err, strings.Join(kept, ", "), strings.Join(kept, " "))
	}
	return err
}

// giveBack takes this run's drain taint off a cluster whose moving works are
// all still there, with a fresh context (the run's is over). It tells
// whether it did.
func (o *ClusterOptions) giveBack(ctx context.Context, c ClusterReport) bool {
	gctx, cancel := cli.GiveBackContext(ctx)
	defer cancel()
	list, err := o.dynamic.Resource(ocm.ManifestWorkResource).Namespace(c.Metadata.Name).List(cli.HideBodies(gctx), metav1.ListOptions{})
	if err != nil {
		return false
	}
	present := sets.New[string]()
	for _, w := range list.Items {
		present.Insert(w.GetName())
	}
	if slices.ContainsFunc(c.Moves, func(w WorkEntry) bool { return !present.Has(w.Name) }) {
		return false
	}
	removed, err := removeDrainTaint(gctx, o.dynamic, c.Metadata.Name, cli.DryRunNone)
	if err != nil || !removed {
		return false
	}
	fmt.Fprintf(o.ErrOut, "managedcluster/%s drain taint taken off again: its works had not started to leave\n", c.Metadata.Name)
	return true
}

// waitMoved watches the cluster's namespace until none of the moving works is left.
func (o *ClusterOptions) waitMoved(ctx context.Context, cluster string, moves []WorkEntry, deadline cli.Deadline, p *cli.Progress) error {
	want := map[string]bool{}
	for _, w := range moves {
		want[w.Name] = true
	}
	lw := cli.ListWatch(o.dynamic.Resource(ocm.ManifestWorkResource).Namespace(cluster), "", "")
	return cli.WaitFor(cli.HideBodies(ctx), "placement works leaving "+cluster, lw, &unstructured.Unstructured{}, deadline.Left(), p, func(objs []any) (bool, string, error) {
		left := 0
		for _, obj := range objs {
			if want[obj.(*unstructured.Unstructured).GetName()] {
				left++
			}
		}
		return left == 0, fmt.Sprintf("%d of %d placement works left", left, len(moves)), nil
	})
}

// waitHealthy waits, cluster by cluster, until the works that left the
// wave's clusters are Applied and Available again on the clusters their
// Placements decide on now (the drained ones aside): the same
// ManifestWorkReplicaSet's work there, or, without one, the work of the
// same name and placement.
func (o *ClusterOptions) waitHealthy(ctx context.Context, wave []ClusterReport, deadline cli.Deadline, p *cli.Progress) error {
	drained := sets.New(o.Clusters...)
	on := map[string][]*WorkEntry{}
	for i := range wave {
		for j := range wave[i].Moves {
			w := &wave[i].Moves[j]
			for _, key := range w.placements {
				dests, err := o.decidedClusters(ctx, key)
				if err != nil {
					return o.stopped(ctx, wave, err)
				}
				for _, d := range dests {
					if !drained.Has(d) {
						on[d] = append(on[d], w)
					}
				}
			}
		}
	}
	var late []string
	for _, dest := range sets.List(sets.KeySet(on)) {
		works := on[dest]
		lw := cli.ListWatch(o.dynamic.Resource(ocm.ManifestWorkResource).Namespace(dest), "", "")
		err := cli.WaitFor(cli.HideBodies(ctx), "moved works Available on "+dest, lw, &unstructured.Unstructured{}, deadline.Left(), p, func(objs []any) (bool, string, error) {
			healthy := 0
			for _, w := range works {
				if slices.ContainsFunc(objs, func(obj any) bool {
					return sameProducer(w, obj.(*unstructured.Unstructured)) && applied(obj.(*unstructured.Unstructured))
				}) {
					healthy++
				}
			}
			return healthy == len(works), fmt.Sprintf("%d of %d Applied and Available", healthy, len(works)), nil
		})
		if exitcode.Of(err) == exitcode.TimedOut {
			late = append(late, dest)
			continue
		}
		if err != nil {
			return o.stopped(ctx, wave, err)
		}
		for _, w := range works {
			w.MovedTo = append(w.MovedTo, dest)
		}
	}
	if len(late) > 0 {
		for i := range wave {
			for j := range wave[i].Moves {
				if slices.ContainsFunc(late, func(dest string) bool { return slices.Contains(on[dest], &wave[i].Moves[j]) }) {
					wave[i].Result = ClusterTimedOut
				}
			}
		}
		return exitcode.TimedOutError(fmt.Errorf("the moved works are not Applied and Available on %s within %s; the taint stays on: run the same command again to keep waiting",
			strings.Join(late, ", "), o.Timeout))
	}
	return nil
}

// decidedClusters are the clusters a Placement (namespace/name) decides on now.
func (o *ClusterOptions) decidedClusters(ctx context.Context, key string) ([]string, error) {
	ns, name, _ := strings.Cut(key, "/")
	list, err := o.dynamic.Resource(ocm.PlacementDecisionResource).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: ocm.PlacementDecisionLabel + "=" + name})
	if err != nil {
		return nil, fmt.Errorf("reading the decisions of placement %s: %w", key, err)
	}
	var out []string
	for _, d := range list.Items {
		decisions, _, _ := unstructured.NestedSlice(d.Object, "status", "decisions")
		for _, x := range decisions {
			if c, ok := x.(map[string]any)["clusterName"].(string); ok {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// sameProducer tells whether the work u is what the moved work w became on
// another cluster.
func sameProducer(w *WorkEntry, u *unstructured.Unstructured) bool {
	if w.replicaSet != "" {
		return u.GetLabels()[ocm.ManifestWorkReplicaSetLabel] == w.replicaSet
	}
	return u.GetName() == w.Name && u.GetLabels()[ocm.PlacementLabel] == w.Placement
}

// applied tells whether the work agent reports the work Applied and
// Available for its current generation.
func applied(u *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	ok := map[string]bool{}
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		gen, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		if m["status"] == string(metav1.ConditionTrue) && (gen == 0 || gen == u.GetGeneration()) {
			ok[fmt.Sprint(m["type"])] = true
		}
	}
	return ok["Applied"] && ok["Available"]
}
