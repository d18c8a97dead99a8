// A phase of resume --wait: each pool's own status counts its workers
// ready and up to date, as park status shows it.

package park

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
)

// PoolsPhase is how far the pools' own counts are. Cluster API counts a
// pool's ready machines in the MachineSet and then the MachineDeployment,
// each in its own reconcile, so the count can lag the machines and their
// health checks: under load, park status right after resume --wait showed
// a pool "0/2" ready while both its machines ran and were counted healthy.
type PoolsPhase struct {
	// Pending says, per pool not done yet, what its status counts.
	Pending []string
	done    bool
}

// poolObject is a MachineDeployment or a MachinePool as the wait reads it:
// both kinds keep the counts in the same fields.
type poolObject struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              capi.MachineSetSpec   `json:"spec,omitempty"`
	Status            capi.MachineSetStatus `json:"status,omitempty"`
}

// poolWant is a topology pool of one kind and the workers resume asked of it.
type poolWant struct {
	Name    string
	Desired int32
}

// poolsPhase is done when, for each wanted pool, the object Cluster API
// made of it has counted its current spec (observedGeneration) and counts
// as many ready and up-to-date machines as the pool asks for, or as its
// own replicas say if the autoscaler asked for more. A count the status
// does not have is not a pass. nameLabel is the label that names the
// topology pool on the object.
func poolsPhase(wants []poolWant, objs []poolObject, nameLabel string) PoolsPhase {
	byPool := map[string]poolObject{}
	for _, o := range objs {
		if o.DeletionTimestamp == nil {
			byPool[o.Labels[nameLabel]] = o
		}
	}
	var ph PoolsPhase
	for _, w := range wants {
		o, ok := byPool[w.Name]
		if !ok {
			ph.Pending = append(ph.Pending, w.Name+": not made yet")
			continue
		}
		want := max(w.Desired, deref(o.Spec.Replicas))
		ready, updated := o.Status.ReadyReplicas, o.Status.Updated()
		switch {
		case o.Status.ObservedGeneration < o.Generation:
			ph.Pending = append(ph.Pending, fmt.Sprintf("%s: its status is of an older spec (generation %d, counted %d)", w.Name, o.Generation, o.Status.ObservedGeneration))
		case ready == nil || updated == nil || *ready < want || *updated < want:
			ph.Pending = append(ph.Pending, fmt.Sprintf("%s: %s/%d ready, %s up to date", w.Name, count(ready), want, count(updated)))
		}
	}
	ph.done = len(ph.Pending) == 0
	return ph
}

// count shows a count the status may not have.
func count(n *int32) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}

func (ph PoolsPhase) String() string {
	if ph.done {
		return "every pool counts its workers ready"
	}
	return "waiting for the pools to count their workers ready (" + strings.Join(ph.Pending, ", ") + ")"
}

// poolKinds are the two kinds of topology pool: the objects Cluster API
// makes of each, and the label that names the pool on them.
var poolKinds = []struct {
	kind      PoolKind
	resource  string
	nameLabel string
}{
	{MachineDeployments, capi.MachineDeploymentResource, capi.TopologyDeploymentNameLabel},
	{MachinePools, capi.MachinePoolResource, capi.TopologyPoolNameLabel},
}

// waitPoolsReady follows the cluster's MachineDeployments, then its
// MachinePools (only the kinds its topology has), until poolsPhase is
// done for each kind.
func (o *ResumeOptions) waitPoolsReady(ctx context.Context, p *Platform, pools []pool, timeout time.Duration) error {
	deadline := cli.NewDeadline(timeout)
	for _, k := range poolKinds {
		var wants []poolWant
		for _, pl := range pools {
			if pl.Kind != k.kind {
				continue
			}
			desired, err := pl.desired()
			if err != nil {
				return err
			}
			wants = append(wants, poolWant{Name: pl.Name, Desired: desired})
		}
		if len(wants) == 0 {
			continue
		}
		lw := cli.ListWatch(p.resource(k.resource).Namespace(p.Namespace), "", capi.ClusterNameLabel+"="+o.Name)
		err := waitObjects(ctx, "pools of "+o.Name, lw, deadline.Left(), o.progress, func(objs []poolObject) (bool, string) {
			ph := poolsPhase(wants, objs, k.nameLabel)
			o.view.pools = checkedPart{seen: true, done: ph.done, detail: ph.String()}
			return ph.done, ph.String()
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// waitObjects is cli.WaitFor for the platform's objects lw lists, read as
// T: check sees them all each time one changes.
func waitObjects[T any](ctx context.Context, what string, lw cache.ListerWatcher, timeout time.Duration, progress *cli.Progress, check func([]T) (bool, string)) error {
	return cli.WaitFor(ctx, what, lw, &unstructured.Unstructured{}, timeout, progress,
		func(objs []any) (bool, string, error) {
			var typed []T
			for _, obj := range objs {
				u, ok := obj.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				t, err := capi.FromUnstructured[T](u)
				if err != nil {
					return false, "", err
				}
				typed = append(typed, *t)
			}
			done, state := check(typed)
			return done, state, nil
		})
}
