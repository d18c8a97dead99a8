// The placement guard of `fleetdrain cluster`: before any taint, would the
// drain leave a Placement with fewer eligible clusters than it needs?

package fleetdrain

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// FleetState is what the guard reads of the hub: every ManagedCluster,
// Placement (all namespaces) with its PlacementDecisions, ManagedClusterSet
// and ManagedClusterSetBinding.
type FleetState struct {
	Clusters   []ocm.ManagedCluster
	Placements []ocm.Placement
	Decisions  []ocm.PlacementDecision
	Sets       []ocm.ManagedClusterSet
	Bindings   []ocm.ManagedClusterSetBinding
	// Unreadable names Placements whose spec holds a field the guard does
	// not know (namespace/name: why); they cannot be checked.
	Unreadable map[string]string
}

// MinAvailable is --min-available: how many eligible clusters a Placement
// must keep. Without it a Placement must keep as many as it selects today.
type MinAvailable struct {
	// All applies to every Placement (nil: not given).
	All *int
	// Per applies to one Placement (namespace/name), before All.
	Per map[string]int
}

// ParseMinAvailable reads the --min-available values: N for every
// Placement, NAMESPACE/NAME=N for one.
func ParseMinAvailable(values []string) (MinAvailable, error) {
	var m MinAvailable
	for _, v := range values {
		key, num, one := strings.Cut(v, "=")
		if !one {
			key, num = "", v
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 {
			return m, exitcode.UsageErrorf("--min-available %q: want N or NAMESPACE/NAME=N with N a whole number of clusters, 0 or more", v)
		}
		if !one {
			m.All = &n
			continue
		}
		ns, name, ok := strings.Cut(key, "/")
		if !ok || cli.ValidateNames(cli.NamespaceName, ns) != nil || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return m, exitcode.UsageErrorf("--min-available %q: a Placement is named NAMESPACE/NAME", v)
		}
		if m.Per == nil {
			m.Per = map[string]int{}
		}
		m.Per[key] = n
	}
	return m, nil
}

func (m MinAvailable) required(key string, selected int) (int, string) {
	if n, ok := m.Per[key]; ok {
		return n, "--min-available " + key + "=" + strconv.Itoa(n)
	}
	if m.All != nil {
		return *m.All, "--min-available " + strconv.Itoa(*m.All)
	}
	return selected, "as many as it selects today"
}

// GuardVerdict is what the guard says of one Placement.
type GuardVerdict string

// Guard verdicts.
const (
	// GuardKept: enough eligible clusters remain.
	GuardKept GuardVerdict = "Kept"
	// GuardShort: fewer eligible clusters remain than it needs; refused.
	GuardShort GuardVerdict = "Short"
	// GuardCannotCheck: the guard cannot tell; refused.
	GuardCannotCheck GuardVerdict = "CannotCheck"
)

// PlacementCheck is the guard's finding on a Placement the drain touches:
// one that selects a drained cluster today, or could.
type PlacementCheck struct {
	Placement string       `json:"placement"`
	Verdict   GuardVerdict `json:"verdict"`
	// Selected are the clusters of its PlacementDecisions today.
	Selected         []string `json:"selected"`
	NumberOfClusters *int32   `json:"numberOfClusters,omitempty"`
	// Remaining are the clusters still eligible once the drain is done.
	Remaining []string `json:"remaining"`
	Required  int      `json:"required"`
	// Predicted is the decision the placement controller will make, when
	// its scores cannot change it (it takes every remaining cluster).
	Predicted []string `json:"predicted,omitempty"`
	Reason    string   `json:"reason,omitempty"`
}

// GuardPlacements judges every Placement as upstream's placement controller
// would schedule it once the drained clusters carry the drain taint: the
// clusters of the sets bound to its namespace (narrowed by its clusterSets,
// none that is being deleted), matching one of its predicates (label and
// claim selectors), whose taints it tolerates. A drained cluster counts as
// eligible only if the Placement tolerates its taints for good
// (tolerationSeconds runs out); the others as they are now. A Placement is
// Short when fewer clusters remain eligible than it needs (MinAvailable);
// numberOfClusters caps what it takes, not what it needs. Placements whose
// candidates hold no drained cluster, whose scheduling is disabled, or whose
// tolerations select nothing anyway, are not touched by the drain and not
// listed.
func GuardPlacements(state FleetState, draining []string, minAvailable MinAvailable, now time.Time) []PlacementCheck {
	drained := sets.New(draining...)
	decided := map[string]sets.Set[string]{}
	for _, d := range state.Decisions {
		key := namespacedName(d.Namespace, d.Labels[ocm.PlacementDecisionLabel])
		if decided[key] == nil {
			decided[key] = sets.New[string]()
		}
		for _, c := range d.Status.Decisions {
			decided[key].Insert(c.ClusterName)
		}
	}
	var out []PlacementCheck
	for _, p := range state.Placements {
		key := namespacedName(p.Namespace, p.Name)
		selected := decided[key]
		if selected == nil {
			selected = sets.New[string]()
		}
		if p.Annotations[ocm.PlacementDisableAnnotation] == "true" || ocm.Misconfigured(p.Spec.Tolerations) != "" {
			continue
		}
		check := PlacementCheck{Placement: key, Selected: sets.List(selected), NumberOfClusters: p.Spec.NumberOfClusters, Remaining: []string{}}
		candidates, why := candidateClusters(state, p)
		// Without its candidates, any Placement may hold a drained cluster.
		if why == "" && !selected.HasAny(draining...) && !slices.ContainsFunc(candidates, func(c *ocm.ManagedCluster) bool { return drained.Has(c.Name) }) {
			continue
		}
		if why == "" {
			why = state.Unreadable[key]
		}
		if why == "" {
			candidates, why = matchPredicates(p.Spec.Predicates, candidates)
		}
		check.Required, check.Reason = minAvailable.required(key, selected.Len())
		if why != "" {
			check.Verdict, check.Reason = GuardCannotCheck, why
			out = append(out, check)
			continue
		}
		for _, c := range candidates {
			if eligibleAfter(p.Spec.Tolerations, c, drained.Has(c.Name), selected.Has(c.Name), now) {
				check.Remaining = append(check.Remaining, c.Name)
			}
		}
		slices.Sort(check.Remaining)
		check.Verdict = GuardKept
		if len(check.Remaining) < check.Required {
			check.Verdict = GuardShort
		}
		if n := p.Spec.NumberOfClusters; n == nil || len(check.Remaining) <= int(*n) {
			check.Predicted = check.Remaining
		}
		out = append(out, check)
	}
	slices.SortFunc(out, func(a, b PlacementCheck) int { return strings.Compare(a.Placement, b.Placement) })
	return out
}

// candidateClusters are the clusters of the sets a Placement may select
// from, as upstream gathers them, or why they cannot be told.
func candidateClusters(state FleetState, p ocm.Placement) ([]*ocm.ManagedCluster, string) {
	bound := sets.New[string]()
	for _, b := range state.Bindings {
		// Upstream takes the binding's name as the set's (its webhook
		// keeps spec.clusterSet equal to it).
		if b.Namespace == p.Namespace {
			bound.Insert(b.Name)
		}
	}
	if len(p.Spec.ClusterSets) > 0 {
		bound = bound.Intersection(sets.New(p.Spec.ClusterSets...))
	}
	in := sets.New[string]()
	for _, set := range state.Sets {
		if !bound.Has(set.Name) {
			continue // a binding to a set that does not exist binds nothing
		}
		var selector labels.Selector
		switch sel := set.Spec.ClusterSelector; sel.SelectorType {
		case "", ocm.ClusterSetSelectorExclusive:
			selector = labels.SelectorFromSet(labels.Set{ocm.ClusterSetLabel: set.Name})
		case ocm.ClusterSetSelectorLabels:
			var err error
			if selector, err = metav1.LabelSelectorAsSelector(sel.LabelSelector); err != nil {
				return nil, fmt.Sprintf("ManagedClusterSet %s has a label selector the guard cannot read: %v", set.Name, err)
			}
		default:
			return nil, fmt.Sprintf("ManagedClusterSet %s selects its clusters by %q, which the guard does not know", set.Name, sel.SelectorType)
		}
		for _, c := range state.Clusters {
			if c.DeletionTimestamp == nil && selector.Matches(labels.Set(c.Labels)) {
				in.Insert(c.Name)
			}
		}
	}
	var out []*ocm.ManagedCluster
	for i := range state.Clusters {
		if in.Has(state.Clusters[i].Name) {
			out = append(out, &state.Clusters[i])
		}
	}
	return out, ""
}

// matchPredicates keeps the clusters that match one of the predicates (all
// of them without any), or says why it cannot tell.
func matchPredicates(predicates []ocm.ClusterPredicate, clusters []*ocm.ManagedCluster) ([]*ocm.ManagedCluster, string) {
	if len(predicates) == 0 {
		return clusters, ""
	}
	type pair struct{ labels, claims labels.Selector }
	var selectors []pair
	for i, pr := range predicates {
		sel := pr.RequiredClusterSelector
		if len(sel.CelSelector.CelExpressions) > 0 {
			return nil, fmt.Sprintf("predicate %d selects clusters with CEL expressions, which the guard does not evaluate", i+1)
		}
		l, err := metav1.LabelSelectorAsSelector(&sel.LabelSelector)
		if err != nil {
			return nil, fmt.Sprintf("predicate %d has a label selector the guard cannot read: %v", i+1, err)
		}
		c, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: sel.ClaimSelector.MatchExpressions})
		if err != nil {
			return nil, fmt.Sprintf("predicate %d has a claim selector the guard cannot read: %v", i+1, err)
		}
		selectors = append(selectors, pair{l, c})
	}
	var out []*ocm.ManagedCluster
	for _, c := range clusters {
		claims := labels.Set{}
		for _, claim := range c.Status.ClusterClaims {
			claims[claim.Name] = claim.Value
		}
		if slices.ContainsFunc(selectors, func(s pair) bool { return s.labels.Matches(labels.Set(c.Labels)) && s.claims.Matches(claims) }) {
			out = append(out, c)
		}
	}
	return out, ""
}

// eligibleAfter tells whether the Placement's tolerations keep the cluster
// once the drain is done: a drained cluster (with the drain taint, added now
// if it is not there yet) only if they tolerate its taints for good, any
// other as its taints are now.
func eligibleAfter(tolerations []ocm.Toleration, c *ocm.ManagedCluster, drained, inDecision bool, now time.Time) bool {
	taints := c.Spec.Taints
	if drained && !slices.ContainsFunc(taints, func(t ocm.Taint) bool { return t.Key == DrainTaintKey }) {
		drain := DrainTaint()
		drain.TimeAdded = &metav1.Time{Time: now}
		taints = append(slices.Clone(taints), drain)
	}
	until, leaves := ocm.KeptUntil(tolerations, taints, inDecision)
	if drained {
		return !leaves
	}
	return !leaves || until.After(now)
}

// guardError refuses (exit 3, nothing changed) when a Placement would be
// left short or cannot be checked, naming each with what it selects today
// and what would remain.
func guardError(checks []PlacementCheck, draining []string) error {
	var lines []string
	for _, c := range checks {
		today := fmt.Sprintf("selects %d today (%s)", len(c.Selected), listOrNone(c.Selected))
		switch c.Verdict {
		case GuardShort:
			lines = append(lines, fmt.Sprintf("  placement %s %s; %d would remain eligible (%s), it needs %d (%s)",
				c.Placement, today, len(c.Remaining), listOrNone(c.Remaining), c.Required, c.Reason))
		case GuardCannotCheck:
			lines = append(lines, fmt.Sprintf("  placement %s %s; cannot check: %s", c.Placement, today, c.Reason))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return exitcode.RefusedErrorf("draining %s would leave placements short of clusters, or they cannot be checked; nothing was tainted:\n%s\ndrain fewer clusters, make room first (more clusters in their sets), or accept it with --min-available (N for every placement, NAMESPACE/NAME=N for one)",
		strings.Join(draining, ", "), strings.Join(lines, "\n"))
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
