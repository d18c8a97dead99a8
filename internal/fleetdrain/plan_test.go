package fleetdrain

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
)

func pod(ns, name, ownerKind string, labels map[string]string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	if ownerKind != "" {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{Kind: ownerKind, Name: name + "-owner", Controller: &yes}}
	}
	return p
}

func budget(ns, name string, allowed int32, match map[string]string) *policyv1.PodDisruptionBudget {
	b := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if match != nil {
		b.Spec.Selector = &metav1.LabelSelector{MatchLabels: match}
	}
	b.Status.DisruptionsAllowed = allowed
	return b
}

func TestPlanNode(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", Annotations: map[string]string{capi.MachineAnnotation: "md-0-abc"}}}
	web := pod("shop", "web-1", "ReplicaSet", map[string]string{"app": "web"})
	db := pod("shop", "db-0", "StatefulSet", map[string]string{"app": "db"})
	agent := pod("kube-system", "agent-x", "DaemonSet", nil)
	lonely := pod("shop", "lonely", "", nil)
	found := NodePods{
		Node:     node,
		All:      []corev1.Pod{agent, db, lonely, web},
		Evict:    []corev1.Pod{db, web},
		Refusals: []error{errors.New("cannot delete Pods that declare no controller (use --force to override): shop/lonely")},
		Warnings: "ignoring DaemonSet-managed Pods: kube-system/agent-x",
	}
	budgets := []*policyv1.PodDisruptionBudget{
		budget("shop", "db", 0, map[string]string{"app": "db"}),
		budget("shop", "web", 1, map[string]string{"app": "web"}),
		budget("shop", "nothing", 0, nil),
		budget("other", "db", 0, map[string]string{"app": "db"}),
	}
	r := PlanNode(found, budgets)

	assert.Equal(t, r.Machine, "md-0-abc")
	assert.Check(t, r.refused())
	assert.Equal(t, len(r.Blockers), 2)
	assert.Equal(t, r.Blockers[0].Kind, BlockerUnmanaged)
	assert.DeepEqual(t, r.Blockers[0].Pods, []string{"shop/lonely"})
	assert.Equal(t, r.Blockers[1].Kind, BlockerBudget)
	assert.Equal(t, r.Blockers[1].Name, "shop/db")
	assert.DeepEqual(t, r.Blockers[1].Pods, []string{"shop/db-0"})
	assert.Check(t, !r.Blockers[1].Refuses, "a budget is waited on")
	assert.Equal(t, len(r.Skip), 1, "the refused pod is a blocker, not a skip")

	report := DrainReport{ReportMeta: api.NewReportMeta("DrainReport", "nodes"), Items: []NodeReport{r}}
	var buf bytes.Buffer
	assert.NilError(t, cli.WriteTable(&buf, report.planTable(), true))
	golden.Assert(t, buf.String(), "plan-node.golden")
}

func TestPlanCluster(t *testing.T) {
	work := func(name string, labels map[string]string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	placementLabel := "work.open-cluster-management.io/placementname"
	mwrs := "work.open-cluster-management.io/manifestworkreplicaset"
	works := []metav1.PartialObjectMetadata{
		work("web", map[string]string{placementLabel: "web", mwrs: "apps.web"}),
		work("web-elsewhere", map[string]string{placementLabel: "web", mwrs: "team.web"}),
		work("mon", map[string]string{placementLabel: "monitoring"}),
		work("ghost", map[string]string{placementLabel: "gone"}),
		work("handmade", nil),
		work("addon", map[string]string{"open-cluster-management.io/addon-name": "governance"}),
	}
	placements := testPlacements()
	r := PlanCluster("spoke-1", works, placements, nil, metav1.Now().Time)
	var moves, stays []string
	for _, w := range r.Moves {
		moves = append(moves, w.Name)
	}
	for _, w := range r.Stays {
		stays = append(stays, w.Name+": "+w.Reason)
	}
	assert.DeepEqual(t, moves, []string{"web"})
	golden.Assert(t, strings.Join(stays, "\n")+"\n", "plan-cluster-stays.golden")
	assert.DeepEqual(t, r.TolerantPlacements, []string{"ops/monitoring", "team/web"})
}

// testPlacements: web in apps drops a drained cluster, web in team and
// monitoring in ops keep it.
func testPlacements() []ocm.Placement {
	p := func(ns, name string, tols ...ocm.Toleration) ocm.Placement {
		pl := ocm.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		pl.Spec.Tolerations = tols
		return pl
	}
	return []ocm.Placement{
		p("apps", "web"),
		p("team", "web", ocm.Toleration{Key: DrainTaintKey, Operator: ocm.TolerationOpExists}),
		p("ops", "monitoring", ocm.Toleration{Operator: ocm.TolerationOpExists}),
	}
}

// FuzzPlanCluster feeds label values from the cluster (untrusted) to the
// plan: every work lands in exactly one of moves and stays.
func FuzzPlanCluster(f *testing.F) {
	f.Add("web", "apps.web", "")
	f.Add("monitoring", "", "governance")
	f.Add("", ".", "")
	f.Add("web", "team.web.extra", "x")
	f.Fuzz(func(t *testing.T, placement, replicaSet, addon string) {
		labels := map[string]string{
			"work.open-cluster-management.io/placementname":          placement,
			"work.open-cluster-management.io/manifestworkreplicaset": replicaSet,
			"open-cluster-management.io/addon-name":                  addon,
		}
		works := []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Name: "w", Labels: labels}}}
		r := PlanCluster("spoke", works, testPlacements(), nil, metav1.Now().Time)
		if len(r.Moves)+len(r.Stays) != 1 {
			t.Fatalf("work planned %d times: %+v", len(r.Moves)+len(r.Stays), r)
		}
	})
}

// TestPlanClusterFollowsUpstream: the drain taint counts as added now,
// tolerationSeconds delay a move, a misconfigured placement selects nothing,
// and the cluster's other taints count too.
func TestPlanClusterFollowsUpstream(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	secs := func(s int64) *int64 { return &s }
	p := func(name string, tols ...ocm.Toleration) ocm.Placement {
		pl := ocm.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}}
		pl.Spec.Tolerations = tols
		return pl
	}
	placements := []ocm.Placement{
		p("for-30s", ocm.Toleration{Key: DrainTaintKey, Operator: ocm.TolerationOpExists, TolerationSeconds: secs(30)}),
		p("for-0s", ocm.Toleration{Key: DrainTaintKey, Operator: ocm.TolerationOpExists, TolerationSeconds: secs(0)}),
		p("empty-key-equal", ocm.Toleration{Operator: ocm.TolerationOpEqual}),
		p("drain-only", ocm.Toleration{Key: DrainTaintKey, Operator: ocm.TolerationOpExists}),
		p("everything", ocm.Toleration{Operator: ocm.TolerationOpExists}),
	}
	var works []metav1.PartialObjectMetadata
	for _, pl := range placements {
		works = append(works, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: pl.Name, Labels: map[string]string{
			ocm.PlacementLabel: pl.Name, ocm.ManifestWorkReplicaSetLabel: "apps." + pl.Name,
		}}})
	}
	earlier := metav1.NewTime(now.Add(-time.Minute))
	maintenance := ocm.Taint{Key: "example.io/maintenance", Effect: ocm.TaintEffectNoSelectIfNew, TimeAdded: &earlier}
	r := PlanCluster("spoke-1", works, placements, []ocm.Taint{maintenance}, now)
	moves := map[string]string{}
	for _, w := range r.Moves {
		at := "now"
		if w.MovesAt != nil {
			at = w.MovesAt.Sub(now).String()
		}
		moves[w.Name] = at
	}
	assert.DeepEqual(t, moves, map[string]string{"for-30s": "30s", "for-0s": "now", "empty-key-equal": "now"})
	assert.DeepEqual(t, r.TolerantPlacements, []string{"apps/drain-only", "apps/everything"})

	// Drained 20 s ago and unreachable since: only the placement that
	// tolerates every taint keeps the cluster.
	drained := metav1.NewTime(now.Add(-20 * time.Second))
	unreachable := ocm.Taint{Key: ocm.TaintUnreachable, Effect: ocm.TaintEffectNoSelect, TimeAdded: &drained}
	r = PlanCluster("spoke-1", works, placements, []ocm.Taint{{Key: DrainTaintKey, Effect: ocm.TaintEffectNoSelect, TimeAdded: &drained}, unreachable}, now)
	moves = map[string]string{}
	for _, w := range r.Moves {
		at := "now"
		if w.MovesAt != nil {
			at = w.MovesAt.Sub(now).String()
		}
		moves[w.Name] = at
	}
	assert.DeepEqual(t, moves, map[string]string{"for-30s": "now", "for-0s": "now", "empty-key-equal": "now", "drain-only": "now"})
}

// -o name prints the Nodes or ManagedClusters drained or given back, as
// kubectl get -o name names them (so they feed kubectl uncordon and get).
func TestNamePrintsTheNodesAndClusters(t *testing.T) {
	managed := "managedcluster.cluster.open-cluster-management.io/"
	for _, c := range []struct {
		report any
		want   string
	}{
		{DrainReport{Items: []NodeReport{{ReportMeta: api.NewReportMeta("NodeDrain", "a")}, {ReportMeta: api.NewReportMeta("NodeDrain", "b")}}}, "node/a\nnode/b\n"},
		{DrainReport{}, ""},
		{ClusterDrainReport{Items: []ClusterReport{{ReportMeta: api.NewReportMeta("ClusterDrain", "spoke-1")}}}, managed + "spoke-1\n"},
		{UncordonReport{Items: []UncordonEntry{{ReportMeta: api.NewReportMeta(api.NodeKind.Kind, "a")}}}, "node/a\n"},
		{UncordonReport{Items: []UncordonEntry{{ReportMeta: api.NewReportMeta(ocm.ManagedClusterKind.Kind, "spoke-1")}}}, managed + "spoke-1\n"},
	} {
		assert.Check(t, is.Equal(clitest.PrintName(t, c.report), c.want), "%T", c.report)
	}
}
