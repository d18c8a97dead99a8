package spoke

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// newSpoke is a valid joined Spoke; options change what a test is about.
func newSpoke(name string, opts ...func(*fleetconfig.Spoke)) fleetconfig.Spoke {
	s := fleetconfig.Spoke{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "mural-system", CreationTimestamp: metav1.NewTime(now.Add(-3 * time.Hour))},
		Spec: fleetconfig.SpokeSpec{
			HubRef:        fleetconfig.HubRef{Name: "hub", Namespace: "mural-system"},
			Kubeconfig:    fleetconfig.Kubeconfig{SecretReference: &fleetconfig.SecretReference{Name: name + "-kubeconfig"}},
			CleanupConfig: fleetconfig.CleanupConfig{PurgeKlusterletOperator: true},
		},
		Status: fleetconfig.SpokeStatus{Phase: fleetconfig.SpokePhaseRunning},
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func newCluster(name string, available metav1.ConditionStatus, taints ...string) ocm.ManagedCluster {
	mc := ocm.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	mc.Status.Conditions = []metav1.Condition{
		{Type: ocm.ManagedClusterConditionJoined, Status: metav1.ConditionTrue},
		{Type: ocm.ManagedClusterConditionAvailable, Status: available, Message: "lease not renewed"},
	}
	for _, t := range taints {
		mc.Spec.Taints = append(mc.Spec.Taints, ocm.Taint{Key: t, Effect: ocm.TaintEffectNoSelect})
	}
	return mc
}

func TestBuildRowsJoinsByName(t *testing.T) {
	spokes := []fleetconfig.Spoke{
		newSpoke("spoke-2", func(s *fleetconfig.Spoke) { s.Status.Phase = fleetconfig.SpokePhaseUnhealthy }),
		newSpoke("spoke-1"),
		newSpoke("spoke-3", func(s *fleetconfig.Spoke) { s.Status.Phase = ""; s.Spec.CleanupConfig.ForceClusterDrain = true }),
	}
	clusters := []ocm.ManagedCluster{
		newCluster("spoke-1", metav1.ConditionTrue),
		newCluster("spoke-2", metav1.ConditionUnknown, ocm.TaintUnreachable),
		newCluster("unrelated", metav1.ConditionTrue),
	}
	list := SpokeList{Items: BuildRows(spokes, clusters)}
	for _, wide := range []bool{false, true} {
		var buf bytes.Buffer
		assert.NilError(t, cli.WriteTable(&buf, list.Table(now), wide))
		name := "rows.golden"
		if wide {
			name = "rows-wide.golden"
		}
		golden.Assert(t, buf.String(), name)
	}
	rows, err := selectRows(list.Items, []string{"spoke-3", "nope"})
	assert.ErrorContains(t, err, "not found: nope")
	assert.Equal(t, len(rows), 1)
}

func TestBlockingWorks(t *testing.T) {
	work := func(name string, labels map[string]string, owners ...string) ocm.ManifestWork {
		w := ocm.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		for _, o := range owners {
			w.OwnerReferences = append(w.OwnerReferences, metav1.OwnerReference{Kind: o, Name: "x"})
		}
		return w
	}
	works := []ocm.ManifestWork{
		work("hand-made", nil),
		work("addon", nil, ocm.ManagedClusterAddOnKind),
		work("mixed-owners", nil, ocm.ManagedClusterAddOnKind, "Deployment"),
		work("placement", map[string]string{ocm.PlacementLabel: "spokes"}),
	}
	// Upstream counts a work with any ManagedClusterAddOn owner as an add-on's.
	assert.DeepEqual(t, BlockingWorks(works), []string{"hand-made"})
}

func TestStatusTable(t *testing.T) {
	s := newSpoke("spoke-2", func(s *fleetconfig.Spoke) {
		s.Status.Phase = fleetconfig.SpokePhaseUnhealthy
		s.Status.Conditions = []fleetconfig.Condition{{
			Condition:  metav1.Condition{Type: fleetconfig.SpokeConditionJoined, Status: metav1.ConditionFalse, Message: "spoke API server https://10.0.0.2:6443: connection refused"},
			WantStatus: metav1.ConditionTrue,
		}}
		s.Annotations = map[string]string{fleetconfig.HelmReleaseNameAnnotation: "mural"}
	})
	mc := newCluster("spoke-2", metav1.ConditionUnknown, ocm.TaintUnreachable)
	works := []ocm.ManifestWork{{ObjectMeta: metav1.ObjectMeta{Name: "hand-made"}}}
	r := BuildStatus(&s, &mc, works, FindRemovalBlockers(&s, works, nil, nil, now), &CredentialReport{Kind: "client certificate", Expires: "2126-11-06T12:00:00Z"})
	var buf bytes.Buffer
	assert.NilError(t, cli.WriteTable(&buf, r.Table(), false))
	golden.Assert(t, buf.String(), "status.golden")
}

// In addon mode with purgeKubeconfigSecret the secret is gone once the
// agent took over: status says so, as a normal state. Placement works are
// described by the rule remove enforces: with forceClusterDrain off they
// block.
func TestStatusOfAPurgedSpokeWithPlacementWorks(t *testing.T) {
	s := newSpoke("spoke-3", pivotedAndPurging)
	mc := newCluster("spoke-3", metav1.ConditionTrue)
	works := []ocm.ManifestWork{
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{ocm.PlacementLabel: "web"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "agent", OwnerReferences: []metav1.OwnerReference{{Kind: ocm.ManagedClusterAddOnKind, Name: "x"}}}},
	}
	r := BuildStatus(&s, &mc, works, FindRemovalBlockers(&s, works, nil, nil, now), missingSecret(&s))
	var buf bytes.Buffer
	assert.NilError(t, cli.WriteTable(&buf, r.Table(), false))
	golden.Assert(t, buf.String(), "status-purged.golden")

	s.Status.Conditions = nil
	assert.Check(t, strings.Contains(missingSecret(&s).Problem, "does not exist"), "without the pivot a missing secret is a problem")
}

func TestSetFields(t *testing.T) {
	as, err := ParseAssignments([]string{"logVerbosity=3", "spec.cleanupConfig.forceClusterDrain=true", "klusterlet.annotations.team=ml", "klusterlet.annotations.old=null"})
	assert.NilError(t, err)
	for _, a := range as {
		assert.Check(t, Mutable(a.Path), a.Field())
	}
	assert.DeepEqual(t, SetSpec(as), map[string]any{
		"logVerbosity":  3,
		"cleanupConfig": map[string]any{"forceClusterDrain": true},
		"klusterlet":    map[string]any{"annotations": map[string]any{"team": "ml", "old": nil}},
	})
	for _, f := range []string{"hubRef.name", "klusterlet.mode", "proxyUrl", "createNamespace", "klusterlet", "kubeconfigs"} {
		as, err := ParseAssignments([]string{f + "=x"})
		assert.NilError(t, err)
		assert.Check(t, !Mutable(as[0].Path), f)
		err = refuseImmutable("s", as)
		assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	}
	for _, bad := range []string{"noequals", "=3", "a..b=1", "timeout=[unclosed"} {
		_, err := ParseAssignments([]string{bad})
		assert.Equal(t, exitcode.Of(err), exitcode.Usage, bad)
	}
}

func TestRenderSpokeAsTheChart(t *testing.T) {
	hub := &fleetconfig.Hub{ObjectMeta: metav1.ObjectMeta{
		Name: "hub", Namespace: "mural-system",
		Annotations: map[string]string{fleetconfig.HelmReleaseNameAnnotation: "mural"},
	}}
	entry := map[string]any{
		"name": "spoke-2", "ociRegistry": map[string]any{"endpoint": "oci://r"},
		"hubRef":        map[string]any{"name": "ignored", "namespace": ""},
		"cleanupConfig": map[string]any{"purgeKlusterletOperator": true, "forceClusterDrain": true},
		"klusterlet":    map[string]any{"mode": "Default", "forceInternalEndpointLookup": true, "values": map[string]any{}},
	}
	s, err := RenderSpoke("spoke-2", hub, "spoke-2-kubeconfig", entry, ChartSettings{Mode: modeUnified, HelmOwned: true})
	assert.NilError(t, err)
	assert.Equal(t, s.Spec.HubRef, fleetconfig.HubRef{Name: "hub", Namespace: "mural-system"})
	assert.Equal(t, s.Spec.Kubeconfig.SecretReference.Name, "spoke-2-kubeconfig")
	assert.Check(t, s.Spec.CleanupConfig.ForceClusterDrain)
	assert.Check(t, s.Spec.Klusterlet.ForceInternalEndpointLookup, "as the entry says")
	assert.Check(t, s.Spec.Klusterlet.Values == nil)
	assert.Equal(t, HelmRelease(s), "mural")

	s, err = RenderSpoke("spoke-2", hub, "spoke-2-kubeconfig", nil, ChartSettings{Mode: modeUnified, HelmOwned: true})
	assert.NilError(t, err)
	assert.Equal(t, HelmRelease(s), "", "not in any values: not Helm's")

	// Under the seed's job model the release's job applies the Spokes, and
	// Helm owns none: no marks, which would have the next upgrade adopt it.
	s, err = RenderSpoke("spoke-2", hub, "spoke-2-kubeconfig", entry, ChartSettings{Mode: modeUnified})
	assert.NilError(t, err)
	assert.Equal(t, HelmRelease(s), "", "a release whose job applies the Spokes does not own them")
}

// Without a values entry the Spoke takes the cleanupConfig add was given,
// and sends all four values: a false left out would become the CRD's default
// (true for purgeKlusterletOperator).
func TestRenderSpokeWithoutValuesSendsTheGivenCleanupInFull(t *testing.T) {
	hub := &fleetconfig.Hub{ObjectMeta: metav1.ObjectMeta{Name: "hub", Namespace: "mural-system"}}
	s, err := RenderSpoke("spoke-2", hub, "spoke-2-kubeconfig", nil, ChartSettings{Cleanup: fleetconfig.CleanupConfig{ForceClusterDrain: true}, Mode: modeUnified})
	assert.NilError(t, err)
	data, err := json.Marshal(s.Spec.CleanupConfig)
	assert.NilError(t, err)
	assert.Equal(t, string(data), `{"purgeAgentNamespace":false,"purgeKlusterletOperator":false,"purgeKubeconfigSecret":false,"forceClusterDrain":true}`)
}

// In addon mode a Spoke lists the agent add-on, as upstream's webhook
// requires; in unified mode it must not; an entry that disagrees is refused.
// featureGates is what the chart renders from spokeFeatureGates.
func TestRenderSpokeFollowsTheFleetMode(t *testing.T) {
	hub := &fleetconfig.Hub{ObjectMeta: metav1.ObjectMeta{Name: "hub", Namespace: "mural-system"}}
	gates, err := featureGates(chartSpokeFeatureGates)
	assert.NilError(t, err)
	assert.Equal(t, gates, "ClusterClaim=true,RawFeedbackJsonString=true")
	s, err := RenderSpoke("spoke-2", hub, "s", nil, ChartSettings{Mode: modeAddon, FeatureGates: gates})
	assert.NilError(t, err)
	assert.DeepEqual(t, s.Spec.AddOns, []fleetconfig.AddOn{{ConfigName: fleetconfig.AgentAddOn}})
	assert.Equal(t, s.Spec.Klusterlet.FeatureGates, gates)
	s, err = RenderSpoke("spoke-2", hub, "s", nil, ChartSettings{Mode: modeUnified})
	assert.NilError(t, err)
	assert.Check(t, s.Spec.AddOns == nil)

	entry := map[string]any{"name": "spoke-2"}
	_, err = RenderSpoke("spoke-2", hub, "s", entry, ChartSettings{Mode: modeAddon})
	assert.ErrorContains(t, err, "must list addOns: [{configName: fleetconfig-controller-agent}]")
	entry["addOns"] = []any{map[string]any{"configName": fleetconfig.AgentAddOn}}
	_, err = RenderSpoke("spoke-2", hub, "s", entry, ChartSettings{Mode: modeUnified})
	assert.ErrorContains(t, err, "unified mode")

	_, err = featureGates(map[string]any{"ClusterClaim": "yes"})
	assert.ErrorContains(t, err, "not true or false")
}

func TestComputePoolOwnership(t *testing.T) {
	s := newSpoke("pool-1", func(s *fleetconfig.Spoke) {
		s.OwnerReferences = []metav1.OwnerReference{{Kind: fleetconfig.ComputePoolKind, Name: "gpu-pool"}}
	})
	err := refuseComputePool(&s)
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	assert.ErrorContains(t, err, `Compute Pool "gpu-pool"`)
	s = newSpoke("pool-2", func(s *fleetconfig.Spoke) { s.Labels = map[string]string{fleetconfig.ComputePoolLabel: "cpu-pool"} })
	assert.Equal(t, fleetconfig.ComputePoolOf(&s), "cpu-pool")
	s = newSpoke("mine")
	assert.NilError(t, refuseComputePool(&s))
}

// With -A the table leads with the namespace, as kubectl get -A does, and
// rows sort by namespace, then name.
func TestListAllNamespacesShowsTheNamespace(t *testing.T) {
	spokes := []fleetconfig.Spoke{
		newSpoke("spoke-2", func(s *fleetconfig.Spoke) { s.Namespace = "fleet-b" }),
		newSpoke("spoke-1", func(s *fleetconfig.Spoke) { s.Namespace = "fleet-b" }),
		newSpoke("spoke-3", func(s *fleetconfig.Spoke) { s.Namespace = "fleet-a" }),
	}
	list := SpokeList{Items: BuildRows(spokes, nil), allNamespaces: true}
	var buf bytes.Buffer
	assert.NilError(t, cli.WriteTable(&buf, list.Table(now), false))
	golden.Assert(t, buf.String(), "rows-all-namespaces.golden")
}
