package fleetdrain

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/exitcode"
)

var guardNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// guardCluster is a ManagedCluster in the exclusive cluster set set.
func guardCluster(name, set string, labels map[string]string) ocm.ManagedCluster {
	c := ocm.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{ocm.ClusterSetLabel: set}}}
	for k, v := range labels {
		c.Labels[k] = v
	}
	return c
}

func guardSet(name, selectorType string, selector *metav1.LabelSelector) ocm.ManagedClusterSet {
	s := ocm.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
	s.Spec.ClusterSelector.SelectorType = selectorType
	s.Spec.ClusterSelector.LabelSelector = selector
	return s
}

// guardBinding binds set to the namespace apps, where the tests' placements are.
func guardBinding(set string) ocm.ManagedClusterSetBinding {
	b := ocm.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: set, Namespace: "apps"}}
	b.Spec.ClusterSet = set
	return b
}

func guardDecision(ns, placement string, clusters ...string) ocm.PlacementDecision {
	d := ocm.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: placement + "-decision-1", Namespace: ns, Labels: map[string]string{ocm.PlacementDecisionLabel: placement}}}
	for _, c := range clusters {
		d.Status.Decisions = append(d.Status.Decisions, struct {
			ClusterName string `json:"clusterName"`
			Reason      string `json:"reason"`
		}{ClusterName: c})
	}
	return d
}

func guardPlacement(name string, edit func(*ocm.PlacementSpec)) ocm.Placement {
	p := ocm.Placement{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps"}}
	if edit != nil {
		edit(&p.Spec)
	}
	return p
}

func count(n int32) *int32 { return &n }

// The guard against the placement controller's own rules, one Placement
// at a time: set a holds a, b and c, bound to namespace apps.
func TestGuardPlacements(t *testing.T) {
	added := metav1.NewTime(guardNow.Add(-time.Hour))
	// taintSpares makes b unreachable and c a GPU cluster, both NoSelect.
	taintSpares := func(s *FleetState) {
		s.Clusters[1].Spec.Taints = []ocm.Taint{{Key: ocm.TaintUnreachable, Effect: ocm.TaintEffectNoSelect, TimeAdded: &added}}
		s.Clusters[2].Spec.Taints = []ocm.Taint{{Key: "example.com/gpu", Effect: ocm.TaintEffectNoSelect, TimeAdded: &added}}
	}
	secs := func(s int64) *int64 { return &s }
	one, three := 1, 3
	base := func() FleetState {
		return FleetState{
			Clusters: []ocm.ManagedCluster{
				guardCluster("a", "set1", map[string]string{"env": "prod"}),
				guardCluster("b", "set1", map[string]string{"env": "prod"}),
				guardCluster("c", "set1", map[string]string{"env": "dev"}),
				guardCluster("x", "other", nil),
			},
			Sets:     []ocm.ManagedClusterSet{guardSet("set1", "", nil), guardSet("other", ocm.ClusterSetSelectorExclusive, nil)},
			Bindings: []ocm.ManagedClusterSetBinding{guardBinding("set1")},
		}
	}
	cases := []struct {
		name      string
		placement ocm.Placement
		selected  []string
		edit      func(*FleetState)
		drain     []string
		min       MinAvailable
		// want: nil when the Placement is not touched.
		want *PlacementCheck
	}{
		{
			name: "every eligible cluster: one drained is one fewer", placement: guardPlacement("all", nil),
			selected: []string{"a", "b", "c"}, drain: []string{"a"},
			want: &PlacementCheck{Verdict: GuardShort, Remaining: []string{"b", "c"}, Required: 3, Predicted: []string{"b", "c"}},
		},
		{
			name: "every eligible cluster, --min-available 1", placement: guardPlacement("all", nil),
			selected: []string{"a", "b", "c"}, drain: []string{"a"}, min: MinAvailable{All: &one},
			want: &PlacementCheck{Verdict: GuardKept, Remaining: []string{"b", "c"}, Required: 1, Predicted: []string{"b", "c"}},
		},
		{
			name: "per-placement --min-available wins over the global one", placement: guardPlacement("all", nil),
			selected: []string{"a", "b", "c"}, drain: []string{"a", "b"}, min: MinAvailable{All: &three, Per: map[string]int{"apps/all": 1}},
			want: &PlacementCheck{Verdict: GuardKept, Remaining: []string{"c"}, Required: 1, Predicted: []string{"c"}},
		},
		{
			name: "numberOfClusters 1 moves to a spare", placement: guardPlacement("one", func(s *ocm.PlacementSpec) { s.NumberOfClusters = count(1) }),
			selected: []string{"a"}, drain: []string{"a"},
			want: &PlacementCheck{Verdict: GuardKept, Remaining: []string{"b", "c"}, Required: 1},
		},
		{
			name: "numberOfClusters 2 with one spare left", placement: guardPlacement("two", func(s *ocm.PlacementSpec) { s.NumberOfClusters = count(2) }),
			selected: []string{"a", "b"}, drain: []string{"a"},
			want: &PlacementCheck{Verdict: GuardKept, Remaining: []string{"b", "c"}, Required: 2, Predicted: []string{"b", "c"}},
		},
		{
			name: "numberOfClusters 2, two of three drained", placement: guardPlacement("two", func(s *ocm.PlacementSpec) { s.NumberOfClusters = count(2) }),
			selected: []string{"a", "b"}, drain: []string{"a", "c"},
			want: &PlacementCheck{Verdict: GuardShort, Remaining: []string{"b"}, Required: 2, Predicted: []string{"b"}},
		},
		{
			name: "--min-available as a margin: a spare must stay", placement: guardPlacement("one", func(s *ocm.PlacementSpec) { s.NumberOfClusters = count(1) }),
			selected: []string{"a"}, drain: []string{"a", "b"}, min: MinAvailable{All: &three},
			want: &PlacementCheck{Verdict: GuardShort, Remaining: []string{"c"}, Required: 3, Predicted: []string{"c"}},
		},
		{
			name: "an eligible cluster it does not select is drained", placement: guardPlacement("one", func(s *ocm.PlacementSpec) { s.NumberOfClusters = count(1) }),
			selected: []string{"a"}, drain: []string{"b", "c"},
			want: &PlacementCheck{Verdict: GuardKept, Remaining: []string{"a"}, Required: 1, Predicted: []string{"a"}},
		},
		{
			name: "label predicate: the only prod clusters", placement: guardPlacement("prod", func(s *ocm.PlacementSpec) {
				s.Predicates = []ocm.ClusterPredicate{{RequiredClusterSelector: ocm.ClusterSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}}}
			}),
			selected: []string{"a", "b"}, drain: []string{"a", "b"}, min: MinAvailable{All: &one},
			want: &PlacementCheck{Verdict: GuardShort, Remaining: []string{}, Required: 1, Predicted: []string{}},
		},
		{
			name: "label predicate: a dev cluster drained is no prod placement's", placement: guardPlacement("prod", func(s *ocm.PlacementSpec) {
				s.Predicates = []ocm.ClusterPredicate{{RequiredClusterSelector: ocm.ClusterSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}}}
			}),
			selected: []string{"a", "b"}, drain: []string{"c"},
			want: &PlacementCheck{Verdict: GuardKept, Remaining: []string{"a", "b"}, Required: 2, Predicted: []string{"a", "b"}},
		},
		{
			name: "claim predicate, ORed with a label predicate", placement: guardPlacement("claims", func(s *ocm.PlacementSpec) {
				s.Predicates = []ocm.ClusterPredicate{
					{RequiredClusterSelector: ocm.ClusterSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "none"}}}},
					{RequiredClusterSelector: func() ocm.ClusterSelector {
						var sel ocm.ClusterSelector
						sel.ClaimSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "region.open-cluster-management.io", Operator: metav1.LabelSelectorOpIn, Values: []string{"eu"}}}
						return sel
					}()},
				}
			}),
			edit: func(s *FleetState) {
				s.Clusters[0].Status.ClusterClaims = []ocm.ClusterClaim{{Name: "region.open-cluster-management.io", Value: "eu"}}
				s.Clusters[2].Status.ClusterClaims = []ocm.ClusterClaim{{Name: "region.open-cluster-management.io", Value: "eu"}}
			},
			selected: []string{"a", "c"}, drain: []string{"a"},
			want: &PlacementCheck{Verdict: GuardShort, Remaining: []string{"c"}, Required: 2, Predicted: []string{"c"}},
		},
		{
			name: "it tolerates the drain taint: the cluster stays eligible", placement: guardPlacement("tolerant", func(s *ocm.PlacementSpec) {
				s.Tolerations = []ocm.Toleration{{Key: DrainTaintKey, Operator: ocm.TolerationOpExists}}
			}),
			selected: []string{"a", "b", "c"}, drain: []string{"a"},
			want: &PlacementCheck{Verdict: GuardKept, Remaining: []string{"a", "b", "c"}, Required: 3, Predicted: []string{"a", "b", "c"}},
		},
		{
			name: "tolerationSeconds runs out: the drained cluster leaves later", placement: guardPlacement("tolerant", func(s *ocm.PlacementSpec) {
				s.Tolerations = []ocm.Toleration{{Key: DrainTaintKey, Operator: ocm.TolerationOpExists, TolerationSeconds: secs(600)}}
			}),
			selected: []string{"a", "b", "c"}, drain: []string{"a"},
			want: &PlacementCheck{Verdict: GuardShort, Remaining: []string{"b", "c"}, Required: 3, Predicted: []string{"b", "c"}},
		},
		{
			name: "a spare tainted NoSelect is eligible only where tolerated", placement: guardPlacement("one", func(s *ocm.PlacementSpec) { s.NumberOfClusters = count(1) }),
			edit:     taintSpares,
			selected: []string{"a"}, drain: []string{"a"},
			want: &PlacementCheck{Verdict: GuardShort, Remaining: []string{}, Required: 1, Predicted: []string{}},
		},
		{
			name: "a spare tainted NoSelect that the placement tolerates", placement: guardPlacement("gpu", func(s *ocm.PlacementSpec) {
				s.NumberOfClusters = count(1)
				s.Tolerations = []ocm.Toleration{{Key: "example.com/gpu", Operator: ocm.TolerationOpExists}}
			}),
			edit:     taintSpares,
			selected: []string{"a"}, drain: []string{"a"},
			want: &PlacementCheck{Verdict: GuardKept, Remaining: []string{"c"}, Required: 1, Predicted: []string{"c"}},
		},
		{
			name: "NoSelectIfNew keeps a selected cluster, not a new one", placement: guardPlacement("two", func(s *ocm.PlacementSpec) { s.NumberOfClusters = count(2) }),
			edit: func(s *FleetState) {
				for _, i := range []int{1, 2} {
					s.Clusters[i].Spec.Taints = []ocm.Taint{{Key: "example.com/new", Effect: ocm.TaintEffectNoSelectIfNew, TimeAdded: &added}}
				}
			},
			selected: []string{"a", "b"}, drain: []string{"a"},
			want: &PlacementCheck{Verdict: GuardShort, Remaining: []string{"b"}, Required: 2, Predicted: []string{"b"}},
		},
		{
			name: "a cluster being deleted is no candidate", placement: guardPlacement("one", func(s *ocm.PlacementSpec) { s.NumberOfClusters = count(1) }),
			edit: func(s *FleetState) {
				s.Clusters = s.Clusters[:3]
				s.Clusters[1].DeletionTimestamp = &added
				s.Clusters[2].DeletionTimestamp = &added
			},
			selected: []string{"a"}, drain: []string{"a"},
			want: &PlacementCheck{Verdict: GuardShort, Remaining: []string{}, Required: 1, Predicted: []string{}},
		},
		{
			name: "clusterSets narrows the bound sets: the drained one is not its", placement: guardPlacement("other", func(s *ocm.PlacementSpec) { s.ClusterSets = []string{"other"} }),
			edit:     func(s *FleetState) { s.Bindings = append(s.Bindings, guardBinding("other")) },
			selected: []string{"x"}, drain: []string{"a", "b", "c"},
		},
		{
			name: "clusterSets names a set not bound here: no candidates", placement: guardPlacement("other", func(s *ocm.PlacementSpec) { s.ClusterSets = []string{"other"} }),
			selected: []string{}, drain: []string{"x"},
		},
		{
			name: "a binding to a set that does not exist binds nothing", placement: guardPlacement("ghost", nil),
			edit:     func(s *FleetState) { s.Bindings = []ocm.ManagedClusterSetBinding{guardBinding("gone")} },
			selected: []string{}, drain: []string{"a"},
		},
		{
			name: "a LabelSelector set", placement: guardPlacement("all", nil),
			edit: func(s *FleetState) {
				s.Sets = append(s.Sets, guardSet("global", ocm.ClusterSetSelectorLabels, &metav1.LabelSelector{}))
				s.Bindings = []ocm.ManagedClusterSetBinding{guardBinding("global")}
			},
			selected: []string{"a", "b", "c", "x"}, drain: []string{"x"}, min: MinAvailable{All: &three},
			want: &PlacementCheck{Verdict: GuardKept, Remaining: []string{"a", "b", "c"}, Required: 3, Predicted: []string{"a", "b", "c"}},
		},
		{
			name: "a set selector type it does not know", placement: guardPlacement("all", nil),
			edit: func(s *FleetState) {
				s.Sets = append(s.Sets, guardSet("future", "PlacementSelector", nil))
				s.Bindings = append(s.Bindings, guardBinding("future"))
			},
			selected: []string{"x"}, drain: []string{"c"},
			want: &PlacementCheck{Verdict: GuardCannotCheck, Remaining: []string{}, Required: 1, Reason: `ManagedClusterSet future selects its clusters by "PlacementSelector", which the guard does not know`},
		},
		{
			name: "CEL predicates are not evaluated", placement: guardPlacement("cel", func(s *ocm.PlacementSpec) {
				var sel ocm.ClusterSelector
				sel.CelSelector.CelExpressions = []string{`managedCluster.metadata.name == "a"`}
				s.Predicates = []ocm.ClusterPredicate{{RequiredClusterSelector: sel}}
			}),
			selected: []string{"a"}, drain: []string{"a"},
			want: &PlacementCheck{Verdict: GuardCannotCheck, Remaining: []string{}, Required: 1, Reason: "predicate 1 selects clusters with CEL expressions, which the guard does not evaluate"},
		},
		{
			name: "CEL on a placement the drain cannot touch", placement: guardPlacement("cel", func(s *ocm.PlacementSpec) {
				var sel ocm.ClusterSelector
				sel.CelSelector.CelExpressions = []string{"true"}
				s.Predicates = []ocm.ClusterPredicate{{RequiredClusterSelector: sel}}
			}),
			selected: []string{"a"}, drain: []string{"x"},
		},
		{
			name: "a field of its spec the guard does not know", placement: guardPlacement("new", nil),
			edit:     func(s *FleetState) { s.Unreadable = map[string]string{"apps/new": "spec.futureField is not known"} },
			selected: []string{"a"}, drain: []string{"a"},
			want: &PlacementCheck{Verdict: GuardCannotCheck, Remaining: []string{}, Required: 1, Reason: "spec.futureField is not known"},
		},
		{
			name: "scheduling disabled: its decisions stay", placement: func() ocm.Placement {
				p := guardPlacement("frozen", nil)
				p.Annotations = map[string]string{ocm.PlacementDisableAnnotation: "true"}
				return p
			}(),
			selected: []string{"a"}, drain: []string{"a"},
		},
		{
			name: "tolerations upstream refuses: it selects nothing anyway", placement: guardPlacement("broken", func(s *ocm.PlacementSpec) {
				s.Tolerations = []ocm.Toleration{{Operator: ocm.TolerationOpEqual}}
			}),
			selected: []string{}, drain: []string{"a"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := base()
			if c.edit != nil {
				c.edit(&state)
			}
			state.Placements = []ocm.Placement{c.placement}
			state.Decisions = []ocm.PlacementDecision{guardDecision("apps", c.placement.Name, c.selected...)}
			got := GuardPlacements(state, c.drain, c.min, guardNow)
			if c.want == nil {
				assert.Check(t, is.Len(got, 0), "%+v", got)
				return
			}
			want := *c.want
			want.Placement = "apps/" + c.placement.Name
			want.Selected = c.selected
			want.NumberOfClusters = c.placement.Spec.NumberOfClusters
			if want.Reason == "" {
				want.Reason, got[0].Reason = "", ""
			}
			assert.DeepEqual(t, got, []PlacementCheck{want})
		})
	}
}

// The refusal names each Placement with what it selects today and what
// would remain; Placements kept are not named.
func TestGuardRefusal(t *testing.T) {
	checks := []PlacementCheck{
		{Placement: "apps/all", Verdict: GuardShort, Selected: []string{"a", "b"}, Remaining: []string{"b"}, Required: 2, Reason: "as many as it selects today"},
		{Placement: "apps/one", Verdict: GuardKept, Selected: []string{"a"}, Remaining: []string{"c"}, Required: 1},
		{Placement: "apps/web", Verdict: GuardShort, Selected: []string{"a"}, Remaining: []string{}, Required: 1, Reason: "--min-available apps/web=1"},
		{Placement: "ops/cel", Verdict: GuardCannotCheck, Selected: []string{"a"}, Remaining: []string{}, Required: 1, Reason: "predicate 1 selects clusters with CEL expressions, which the guard does not evaluate"},
	}
	err := guardError(checks, []string{"a"})
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	golden.Assert(t, err.Error()+"\n", "guard-refusal.golden")
	assert.NilError(t, guardError(checks[1:2], []string{"a"}))
}

func TestParseMinAvailable(t *testing.T) {
	m, err := ParseMinAvailable([]string{"2", "apps/web=0", "ops/db.main=3"})
	assert.NilError(t, err)
	assert.Equal(t, *m.All, 2)
	assert.DeepEqual(t, m.Per, map[string]int{"apps/web": 0, "ops/db.main": 3})
	for _, bad := range []string{"-1", "x", "web=1", "apps/web=", "apps/=1", "Apps/web=1", "apps/web=1.5"} {
		_, err := ParseMinAvailable([]string{bad})
		assert.Check(t, is.Equal(exitcode.Of(err), exitcode.Usage), bad)
	}
}
