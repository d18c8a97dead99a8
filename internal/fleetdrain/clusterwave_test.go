package fleetdrain

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// The fake dynamic client answers no watch-list request (it never sends the
// bookmark that ends the initial events): the waits list, then watch.
func init() { _ = os.Setenv("KUBE_FEATURE_WatchListClient", "false") }

// placementWork is the work web of the placement web in the cluster
// namespace ns, with the conditions given True.
func placementWork(ns string, conditions ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
		"metadata": map[string]any{"name": "web", "namespace": ns, "generation": int64(1), "labels": map[string]any{
			ocm.PlacementLabel: "web", ocm.ManifestWorkReplicaSetLabel: "apps.web",
		}},
	}}
	var cs []any
	for _, c := range conditions {
		cs = append(cs, map[string]any{"type": c, "status": "True", "observedGeneration": int64(1)})
	}
	if cs != nil {
		u.Object["status"] = map[string]any{"conditions": cs}
	}
	return u
}

func decisionObject(placement string, clusters ...string) *unstructured.Unstructured {
	var ds []any
	for _, c := range clusters {
		ds = append(ds, map[string]any{"clusterName": c, "reason": ""})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
		"metadata": map[string]any{"name": placement + "-decision-1", "namespace": "apps", "labels": map[string]any{ocm.PlacementDecisionLabel: placement}},
		"status":   map[string]any{"decisions": ds},
	}}
}

// waveFleet is a hub with clusters a and b, each holding the work of
// placement web, and c, where the placement controller moves it.
func waveFleet(t *testing.T, objs ...k8sruntime.Object) (*ClusterOptions, *dynamicfake.FakeDynamicClient, *bytes.Buffer) {
	t.Helper()
	objs = append(objs, managedCluster("a", nil), managedCluster("b", nil), managedCluster("c", nil),
		placementWork("a"), placementWork("b"))
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(), map[schema.GroupVersionResource]string{
		ocm.ManagedClusterResource: "ManagedClusterList", ocm.ManifestWorkResource: "ManifestWorkList",
		ocm.PlacementDecisionResource: "PlacementDecisionList", fleetconfig.SpokeResource: "SpokeList",
	}, objs...)
	kube := kubefake.NewClientset()
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = true
		return true, r, nil
	})
	streams, _, _, errOut := genericiooptions.NewTestIOStreams()
	o := &ClusterOptions{
		clusterTargets: clusterTargets{IOStreams: streams, dynamic: client, access: kube.AuthorizationV1(), Clusters: []string{"a", "b"}},
		MaxConcurrent:  1, Timeout: time.Minute, WaitFor: waitForMoved,
	}
	return o, client, errOut
}

// waveReport is the drain's own plan of o.Clusters, waves included.
func waveReport(t *testing.T, o *ClusterOptions) ClusterDrainReport {
	t.Helper()
	r, err := o.planClusters(context.Background(), []ocm.Placement{{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"}}})
	assert.NilError(t, err)
	return r
}

// waves lists each planned cluster's wave.
func waves(r ClusterDrainReport) []string {
	var out []string
	for _, c := range r.Items {
		out = append(out, c.Metadata.Name+"="+strconv.Itoa(c.Wave))
	}
	return out
}

// --max-concurrent N puts the clusters, in the order given, N to a wave;
// 0 puts them all in the first.
func TestClusterWavesOfMaxConcurrent(t *testing.T) {
	o, _, _ := waveFleet(t)
	o.Clusters = []string{"b", "a", "c"}
	for _, tc := range []struct {
		max  int
		want []string
	}{
		{0, []string{"b=1", "a=1", "c=1"}},
		{1, []string{"b=1", "a=2", "c=3"}},
		{2, []string{"b=1", "a=1", "c=2"}},
		{3, []string{"b=1", "a=1", "c=1"}},
	} {
		o.MaxConcurrent = tc.max
		assert.Check(t, is.DeepEqual(waves(waveReport(t, o)), tc.want), "--max-concurrent %d", tc.max)
	}
}

func tainted(t *testing.T, client *dynamicfake.FakeDynamicClient, name string) bool {
	t.Helper()
	u, err := client.Resource(ocm.ManagedClusterResource).Get(context.Background(), name, metav1.GetOptions{})
	assert.NilError(t, err)
	mc, err := api.FromUnstructured[ocm.ManagedCluster](u)
	assert.NilError(t, err)
	return drainTaintIndex(mc) >= 0
}

// Waves of --max-concurrent 1: b is tainted only once a's works have left.
func TestClusterWavesWaitForThePreviousWave(t *testing.T) {
	o, client, _ := waveFleet(t)
	var mu sync.Mutex
	var order []string
	note := func(s string) { mu.Lock(); defer mu.Unlock(); order = append(order, s) }
	// The placement controller and the replica set controller, in one: a
	// tainted cluster's work goes, soon after.
	client.PrependReactor("patch", "managedclusters", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		name := a.(k8stesting.PatchAction).GetName()
		note("taint " + name)
		go func() {
			time.Sleep(50 * time.Millisecond)
			note("gone " + name)
			if err := client.Tracker().Delete(ocm.ManifestWorkResource, name, "web"); err != nil {
				t.Log(err)
			}
		}()
		return false, nil, nil
	})
	report := waveReport(t, o)
	assert.DeepEqual(t, waves(report), []string{"a=1", "b=2"})
	assert.NilError(t, o.drainWaves(context.Background(), &report))
	assert.DeepEqual(t, order, []string{"taint a", "gone a", "taint b", "gone b"})
	for _, c := range report.Items {
		assert.Check(t, is.Equal(c.Result, ClusterDrained), c.Metadata.Name)
	}
}

// Ctrl-C while a's works have not started to leave: its taint comes off
// again, and b, whose wave never started, is never tainted.
func TestClusterInterruptGivesBackWhatHadNotStarted(t *testing.T) {
	o, client, errOut := waveFleet(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	var once sync.Once
	client.PrependReactor("patch", "managedclusters", func(_ k8stesting.Action) (bool, k8sruntime.Object, error) {
		once.Do(func() { go func() { time.Sleep(50 * time.Millisecond); cancel(exitcode.ErrInterrupted) }() })
		return false, nil, nil
	})
	report := waveReport(t, o)
	err := o.drainWaves(ctx, &report)
	assert.Check(t, is.ErrorContains(err, "taken off again from a"))
	assert.Check(t, is.ErrorContains(err, "not started, not tainted: b"))
	assert.Check(t, !tainted(t, client, "a"), "a is given back")
	assert.Check(t, !tainted(t, client, "b"), "b was never tainted")
	assert.Check(t, is.Equal(report.Items[0].Result, ClusterGivenBack))
	assert.Check(t, is.Equal(report.Items[1].Result, ClusterNotStarted))
	assert.Check(t, is.Contains(errOut.String(), "managedcluster/a drain taint taken off again"))
}

// Ctrl-C after a's works started to leave: a keeps its taint.
func TestClusterInterruptKeepsWhatStarted(t *testing.T) {
	o, client, _ := waveFleet(t)
	o.MaxConcurrent, o.Clusters = 0, []string{"a"}
	ctx, cancel := context.WithCancelCause(context.Background())
	client.PrependReactor("patch", "managedclusters", func(_ k8stesting.Action) (bool, k8sruntime.Object, error) {
		go func() { time.Sleep(50 * time.Millisecond); cancel(exitcode.ErrInterrupted) }()
		return false, nil, nil
	})
	report := waveReport(t, o)
	report.Items[0].Moves = append(report.Items[0].Moves, WorkEntry{Name: "api", Placement: "web"}) // already gone
	err := o.drainWaves(ctx, &report)
	assert.Check(t, is.ErrorContains(err, "the drain taint stays on a"))
	assert.Check(t, tainted(t, client, "a"))
	assert.Check(t, is.Equal(report.Items[0].Result, ClusterNotDrained))
}

// --wait-for=healthy: after the works left, the same replica set's work on
// the cluster the placement decides on now must be Applied and Available.
func TestClusterWaitsForTheMovedWorksToBeHealthy(t *testing.T) {
	o, client, _ := waveFleet(t, decisionObject("web", "c"), placementWork("c", "Applied"))
	o.MaxConcurrent, o.Clusters, o.WaitFor = 0, []string{"a"}, waitForHealthy
	client.PrependReactor("patch", "managedclusters", func(_ k8stesting.Action) (bool, k8sruntime.Object, error) {
		go func() {
			time.Sleep(50 * time.Millisecond)
			_ = client.Tracker().Delete(ocm.ManifestWorkResource, "a", "web")
			time.Sleep(100 * time.Millisecond)
			_ = client.Tracker().Update(ocm.ManifestWorkResource, placementWork("c", "Applied", "Available"), "c")
		}()
		return false, nil, nil
	})
	report := waveReport(t, o)
	assert.NilError(t, o.drainWaves(context.Background(), &report))
	assert.DeepEqual(t, report.Items[0].Moves[0].MovedTo, []string{"c"})
	assert.Check(t, is.Equal(report.Items[0].Result, ClusterDrained))

	// Never Available within --timeout: exit 4, the cluster TimedOut.
	o, client, _ = waveFleet(t, decisionObject("web", "c"), placementWork("c", "Applied"))
	o.MaxConcurrent, o.Clusters, o.WaitFor, o.Timeout = 0, []string{"a"}, waitForHealthy, 300*time.Millisecond
	report = waveReport(t, o)
	assert.NilError(t, client.Tracker().Delete(ocm.ManifestWorkResource, "a", "web"))
	err := o.drainWaves(context.Background(), &report)
	assert.Check(t, is.Equal(exitcode.Of(err), exitcode.TimedOut), "%v", err)
	assert.Check(t, is.ErrorContains(err, "not Applied and Available on c"))
	assert.Check(t, is.Equal(report.Items[0].Result, ClusterTimedOut))
}
