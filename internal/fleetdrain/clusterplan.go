package fleetdrain

import (
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
)

// DrainTaintKey is the key of the taint `fleetdrain cluster` puts on a
// ManagedCluster; uncordon removes only a taint with this key.
const DrainTaintKey = ocm.DrainTaintKey

// DrainTaint is the NoSelect taint that takes a cluster out of every
// placement that does not tolerate it. TimeAdded stays empty: the hub sets it.
func DrainTaint() ocm.Taint {
	return ocm.Taint{Key: DrainTaintKey, Effect: ocm.TaintEffectNoSelect}
}

// ClusterResult is how a cluster's drain ended (or, in a plan, would start).
type ClusterResult string

// Cluster results.
const (
	ClusterPlanned  ClusterResult = "Planned"
	ClusterDrained  ClusterResult = "Drained"
	ClusterTimedOut ClusterResult = "TimedOut"
	// ClusterNotDrained: tainted, but the wait for its works stopped (an
	// error, or Ctrl-C) before they left.
	ClusterNotDrained ClusterResult = "NotDrained"
	// ClusterGivenBack: Ctrl-C came before its works started to leave, and
	// the drain taint this run added was taken off again.
	ClusterGivenBack ClusterResult = "GivenBack"
	// ClusterNotStarted: its wave never started; it was not tainted.
	ClusterNotStarted ClusterResult = "NotStarted"
)

// ClusterDrainReport is what `fleetdrain cluster` prints, with the same
// schema for a dry run and a real run.
type ClusterDrainReport struct {
	api.ReportMeta `json:",inline"`
	DryRun         string `json:"dryRun,omitempty"`
	// Placements are the placement guard's findings on the Placements the
	// drain touches.
	Placements []PlacementCheck `json:"placements"`
	Items      []ClusterReport  `json:"items"`
}

// ClusterReport is one cluster's plan and outcome.
type ClusterReport struct {
	api.ReportMeta `json:",inline"`
	Result         ClusterResult `json:"result"`
	// Wave is the wave the cluster is drained in (--max-concurrent), from 1.
	Wave int `json:"wave"`
	// AlreadyTainted: the drain taint was there before this run.
	AlreadyTainted bool `json:"alreadyTainted"`
	// Moves are the works their placements take away once the taint is on.
	Moves []WorkEntry `json:"moves"`
	// Stays are the works nothing will take away; the ones no placement
	// owns also block `kubectl spoke remove`.
	Stays []WorkEntry `json:"stays"`
	// TolerantPlacements keep the cluster despite the taint (namespace/name).
	TolerantPlacements []string `json:"tolerantPlacements,omitempty"`
}

// WorkEntry is one ManifestWork in the cluster's namespace.
type WorkEntry struct {
	Name      string `json:"name"`
	Placement string `json:"placement,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// MovesAt is when a work that moves leaves, if later than the plan:
	// its placement tolerates the cluster's taints for tolerationSeconds,
	// counted from each taint's timeAdded.
	MovesAt *metav1.Time `json:"movesAt,omitempty"`
	// MovedTo are the clusters where, with --wait-for=healthy, the same
	// producer's work was seen Applied and Available after the move.
	MovedTo []string `json:"movedTo,omitempty"`
	// placements are the Placements (namespace/name) that let the work go;
	// replicaSet the ManifestWorkReplicaSet that made it (namespace.name).
	placements []string
	replicaSet string
}

// PlanCluster decides, for the ManifestWorks in a cluster's namespace, which
// ones leave once the cluster carries the drain taint besides its taints,
// and when, by the rules of upstream's placement scheduler: a work leaves
// when the placement named by its placement label exists and lets the
// cluster go (ocm.KeptUntil), or selects nothing because its tolerations are
// misconfigured. A drain taint not yet on the cluster counts as added now.
func PlanCluster(cluster string, works []metav1.PartialObjectMetadata, placements []ocm.Placement, taints []ocm.Taint, now time.Time) ClusterReport {
	r := ClusterReport{ReportMeta: api.NewReportMeta("ClusterDrain", cluster), Result: ClusterPlanned, Moves: []WorkEntry{}, Stays: []WorkEntry{}}
	if !slices.ContainsFunc(taints, func(t ocm.Taint) bool { return t.Key == DrainTaintKey }) {
		drain := DrainTaint()
		drain.TimeAdded = &metav1.Time{Time: now}
		taints = append(slices.Clone(taints), drain)
	}
	tolerant := map[string]bool{}
	for _, w := range works {
		name := w.Labels[ocm.PlacementLabel]
		if name == "" {
			reason := "no placement owns it (made by hand or by a tool); it also blocks `kubectl spoke remove`"
			if addon := w.Labels[ocm.AddonNameLabel]; addon != "" {
				reason = "belongs to add-on " + addon + ", which its own install strategy manages"
			}
			r.Stays = append(r.Stays, WorkEntry{Name: w.Name, Reason: reason})
			continue
		}
		entry := WorkEntry{Name: w.Name, Placement: name, replicaSet: w.Labels[ocm.ManifestWorkReplicaSetLabel]}
		candidates := ocm.PlacementsOf(w.Labels, placements)
		var keeping, misconfigured []string
		var last time.Time
		for _, p := range candidates {
			key := namespacedName(p.Namespace, p.Name)
			if why := ocm.Misconfigured(p.Spec.Tolerations); why != "" {
				misconfigured = append(misconfigured, key+" ("+why+")")
				continue
			}
			// The work is there, so the placement has the cluster in its decisions.
			until, leaves := ocm.KeptUntil(p.Spec.Tolerations, taints, true)
			if !leaves {
				keeping = append(keeping, key)
				continue
			}
			entry.placements = append(entry.placements, key)
			if until.After(last) {
				last = until
			}
		}
		switch {
		case len(candidates) == 0:
			entry.Reason = "placement " + name + " not found, so nothing will move it"
			r.Stays = append(r.Stays, entry)
		case len(keeping) > 0:
			entry.Reason = "placement " + strings.Join(keeping, ", ") + " tolerates the drain taint"
			for _, k := range keeping {
				tolerant[k] = true
			}
			r.Stays = append(r.Stays, entry)
		default:
			if len(misconfigured) > 0 {
				entry.Reason = "placement " + strings.Join(misconfigured, ", ") + " selects no cluster"
			}
			if last.After(now) {
				entry.MovesAt = &metav1.Time{Time: last.UTC()}
				entry.Reason = "its placement tolerates the cluster's taints until then (tolerationSeconds)"
			}
			r.Moves = append(r.Moves, entry)
		}
	}
	for k := range tolerant {
		r.TolerantPlacements = append(r.TolerantPlacements, k)
	}
	slices.Sort(r.TolerantPlacements)
	return r
}

func (r ClusterDrainReport) table() cli.Table {
	t := cli.Table{Columns: []cli.Column{{Name: "CLUSTER"}, {Name: "WAVE"}, {Name: "RESULT"}, {Name: "WORK"}, {Name: "FATE"}, {Name: "DETAIL"}}}
	for _, c := range r.Items {
		add := func(work, fate, detail string) {
			t.Rows = append(t.Rows, []string{c.Metadata.Name, strconv.Itoa(c.Wave), string(c.Result), work, fate, detail})
		}
		for _, w := range c.Moves {
			fate := "moves"
			if c.Result == ClusterDrained {
				fate = "moved"
			}
			detail := "placement " + w.Placement
			if w.MovesAt != nil {
				fate += " at " + w.MovesAt.UTC().Format(time.RFC3339)
			}
			if w.Reason != "" {
				detail += ": " + w.Reason
			}
			if len(w.MovedTo) > 0 {
				detail += "; Available on " + strings.Join(w.MovedTo, ", ")
			}
			add(w.Name, fate, detail)
		}
		for _, w := range c.Stays {
			add(w.Name, "stays", w.Reason)
		}
		if len(c.Moves)+len(c.Stays) == 0 {
			add("", "", "no ManifestWorks")
		}
	}
	return t
}

func (r ClusterDrainReport) hasStays() bool {
	for _, c := range r.Items {
		if len(c.Stays) > 0 {
			return true
		}
	}
	return false
}

// Subjects are the ManagedClusters, for -o name.
func (r ClusterDrainReport) Subjects() []string {
	names := make([]string, 0, len(r.Items))
	for _, c := range r.Items {
		names = append(names, api.ObjectName(ocm.ManagedClusterKind, c.Metadata.Name))
	}
	return names
}
