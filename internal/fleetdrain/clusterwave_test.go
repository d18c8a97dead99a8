package fleetdrain

import (
	"bytes"
	"context"
	"os"
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
	"k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// The fake dynamic client answers no watch-list request (it never sends the
// bookmark that ends the initial events): the waits list, then watch.
func init() { _ = os.Setenv("KUBE_FEATURE_WatchListClient", "false") }

func placementWork(ns, name, placement string, conditions ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
		"metadata": map[string]any{"name": name, "namespace": ns, "generation": int64(1), "labels": map[string]any{
			ocm.PlacementLabel: placement, ocm.ManifestWorkReplicaSetLabel: "apps." + placement,
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
func waveFleet(t *testing.T, objs ...k8sruntime.Object) (*ClusterOptions, *fake.FakeDynamicClient, *bytes.Buffer) {
	t.Helper()
	objs = append(objs, managedCluster("a", nil), managedCluster("b", nil), managedCluster("c", nil),
		placementWork("a", "web", "web"), placementWork("b", "web", "web"))
	client := fake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(), map[schema.GroupVersionResource]string{
		ocm.ManagedClusterResource: "ManagedClusterList", ocm.ManifestWorkResource: "ManifestWorkList",
		ocm.PlacementDecisionResource: "PlacementDecisionList",
	}, objs...)
	kube := kubefake.NewClientset()
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = true
		return true, r, nil
	})
	streams, _, _, errOut := genericiooptions.NewTestIOStreams()
	o := &ClusterOptions{clusterTargets: clusterTargets{IOStreams: streams, dynamic: client, access: kube.AuthorizationV1(), Clusters: []string{"a", "b"}},
		MaxConcurrent: 1, Timeout: time.Minute, WaitFor: waitForMoved}
	return o, client, errOut
}

func waveReport(o *ClusterOptions) ClusterDrainReport {
	r := ClusterDrainReport{}
	for i, name := range o.Clusters {
		c := PlanCluster(name, []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: name, Labels: map[string]string{
			ocm.PlacementLabel: "web", ocm.ManifestWorkReplicaSetLabel: "apps.web",
		}}}}, []ocm.Placement{{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"}}}, nil, time.Now())
		c.Wave = 1
		if o.MaxConcurrent > 0 {
			c.Wave += i / o.MaxConcurrent
		}
		r.Items = append(r.Items, c)
	}
	return r
}

func tainted(t *testing.T, client *fake.FakeDynamicClient, name string) bool {
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
	report := waveReport(o)
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
	client.PrependReactor("patch", "managedclusters", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		once.Do(func() { go func() { time.Sleep(50 * time.Millisecond); cancel(exitcode.ErrInterrupted) }() })
		return false, nil, nil
	})
	report := waveReport(o)
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
	client.PrependReactor("patch", "managedclusters", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		go func() { time.Sleep(50 * time.Millisecond); cancel(exitcode.ErrInterrupted) }()
		return false, nil, nil
	})
	report := waveReport(o)
	report.Items[0].Moves = append(report.Items[0].Moves, WorkEntry{Name: "api", Placement: "web"}) // already gone
	err := o.drainWaves(ctx, &report)
	assert.Check(t, is.ErrorContains(err, "the drain taint stays on a"))
	assert.Check(t, tainted(t, client, "a"))
	assert.Check(t, is.Equal(report.Items[0].Result, ClusterNotDrained))
}

// --wait-for=healthy: after the works left, the same replica set's work on
// the cluster the placement decides on now must be Applied and Available.
func TestClusterWaitsForTheMovedWorksToBeHealthy(t *testing.T) {
	o, client, _ := waveFleet(t, decisionObject("web", "c"), placementWork("c", "web", "web", "Applied"))
	o.MaxConcurrent, o.Clusters, o.WaitFor = 0, []string{"a"}, waitForHealthy
	client.PrependReactor("patch", "managedclusters", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		go func() {
			time.Sleep(50 * time.Millisecond)
			_ = client.Tracker().Delete(ocm.ManifestWorkResource, "a", "web")
			time.Sleep(100 * time.Millisecond)
			_ = client.Tracker().Update(ocm.ManifestWorkResource, placementWork("c", "web", "web", "Applied", "Available"), "c")
		}()
		return false, nil, nil
	})
	report := waveReport(o)
	assert.NilError(t, o.drainWaves(context.Background(), &report))
	assert.DeepEqual(t, report.Items[0].Moves[0].MovedTo, []string{"c"})
	assert.Check(t, is.Equal(report.Items[0].Result, ClusterDrained))

	// Never Available within --timeout: exit 4, the cluster TimedOut.
	o, client, _ = waveFleet(t, decisionObject("web", "c"), placementWork("c", "web", "web", "Applied"))
	o.MaxConcurrent, o.Clusters, o.WaitFor, o.Timeout = 0, []string{"a"}, waitForHealthy, 300*time.Millisecond
	assert.NilError(t, client.Tracker().Delete(ocm.ManifestWorkResource, "a", "web"))
	report = waveReport(o)
	err := o.drainWaves(context.Background(), &report)
	assert.Check(t, is.Equal(exitcode.Of(err), exitcode.TimedOut), "%v", err)
	assert.Check(t, is.ErrorContains(err, "not Applied and Available on c"))
	assert.Check(t, is.Equal(report.Items[0].Result, ClusterTimedOut))
}
