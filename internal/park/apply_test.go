package park

import (
	"context"
	"net/http"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

const testVersion = "v1beta2"

var clusterGVR = capi.GVR(testVersion, capi.ClusterResource)

// fakePlatform holds cluster c. Its patches of the Cluster go through
// serve, which sees the stored object and the patch the way the API
// server's JSON patch handler does.
func fakePlatform(t *testing.T, c *capi.Cluster, serve func(stored *unstructured.Unstructured, patch []byte) error) (*Platform, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	assert.NilError(t, err)
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(capi.Group + "/" + testVersion)
	u.SetKind("Cluster")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{clusterGVR: "ClusterList"}, u)
	dyn.PrependReactor("patch", capi.ClusterResource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		stored, err := dyn.Tracker().Get(clusterGVR, p.GetNamespace(), p.GetName())
		assert.NilError(t, err)
		return serve != nil, nil, serve(stored.(*unstructured.Unstructured), p.GetPatch())
	})
	return &Platform{Dynamic: dyn, Kube: fake.NewClientset(), Version: testVersion, Namespace: c.Namespace}, dyn
}

// applyJSONPatch is the API server's JSON patch: a failed test is a 422.
func applyJSONPatch(t *testing.T, dyn *dynamicfake.FakeDynamicClient, stored *unstructured.Unstructured, patch []byte) error {
	t.Helper()
	doc, err := stored.MarshalJSON()
	assert.NilError(t, err)
	p, err := jsonpatch.DecodePatch(patch)
	assert.NilError(t, err)
	out, err := p.Apply(doc)
	if err != nil {
		return invalid(err.Error())
	}
	var next unstructured.Unstructured
	assert.NilError(t, next.UnmarshalJSON(out))
	next.SetResourceVersion(nextVersion(stored.GetResourceVersion()))
	if !equality.Semantic.DeepEqual(next.Object["spec"], stored.Object["spec"]) {
		next.SetGeneration(stored.GetGeneration() + 1)
	}
	return dyn.Tracker().Update(clusterGVR, &next, next.GetNamespace())
}

// invalid is a 422 as the API server sends it for a failed test operation
// or a webhook's denial, with msg as its message.
func invalid(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid, Message: msg}}
}

func readCluster(t *testing.T, p *Platform) *capi.Cluster {
	t.Helper()
	c, err := p.Cluster(context.Background(), "app")
	assert.NilError(t, err)
	return c
}

// Between park's read and its patch, someone gives a pool with no replicas
// 5 of them and annotates the Cluster. Before, the patch's unguarded adds
// overwrote both and the record said "unset"; now the patch fails, park
// reads again and plans from what is there. Only the generation test sees
// this edit (no value the patch tests changed): without it, this fails.
func TestParkRaceWithAConcurrentEdit(t *testing.T) {
	cluster := func() *capi.Cluster {
		c := threePools()
		c.Spec.Topology.Workers.MachineDeployments[1].Replicas = nil
		return c
	}
	var p *Platform
	var dyn *dynamicfake.FakeDynamicClient
	raced := false
	p, dyn = fakePlatform(t, cluster(), func(stored *unstructured.Unstructured, patch []byte) error {
		if !raced {
			raced = true
			edited := cluster()
			edited.Spec.Topology.Workers.MachineDeployments[1].Replicas = int32Ptr(5)
			edited.Annotations["owner"] = "b"
			edited.ResourceVersion = nextVersion(stored.GetResourceVersion())
			edited.Generation = stored.GetGeneration() + 1
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(edited)
			assert.NilError(t, err)
			stored = &unstructured.Unstructured{Object: obj}
			stored.SetAPIVersion(capi.Group + "/" + testVersion)
			stored.SetKind("Cluster")
			assert.NilError(t, dyn.Tracker().Update(clusterGVR, stored, stored.GetNamespace()))
		}
		return applyJSONPatch(t, dyn, stored, patch)
	})
	plan, err := applyPlan(context.Background(), p, "app", cli.DryRunNone, nil, func(c *capi.Cluster) (*ParkPlan, error) {
		return PlanPark(c, parkedAt, "alice")
	})
	assert.NilError(t, err)
	md1, ok := plan.Record.Find(MachineDeployments, "md-1")
	assert.Assert(t, ok)
	assert.Assert(t, md1.Replicas != nil, "the record must say 5, not unset")
	assert.Equal(t, *md1.Replicas, int32(5))

	parked := readCluster(t, p)
	assert.Equal(t, parked.Annotations["owner"], "b", "the concurrent annotation is kept")
	assert.Equal(t, *parked.Spec.Topology.Workers.MachineDeployments[1].Replicas, int32(0))
	record, err := ParseRecord(parked.Annotations[RecordAnnotation])
	assert.NilError(t, err)
	md1, _ = record.Find(MachineDeployments, "md-1")
	assert.Equal(t, *md1.Replicas, int32(5))
}

// A webhook's refusal of the patch reaches the user; before, it was lost
// as "%!w(<nil>)".
func TestParkPatchRefusalIsReported(t *testing.T) {
	const denied = `admission webhook "validation.cluster.cluster.x-k8s.io" denied the request: spec.topology.workers: replicas must not be 0`
	p, _ := fakePlatform(t, threePools(), func(*unstructured.Unstructured, []byte) error {
		return invalid(denied)
	})
	_, err := applyPlan(context.Background(), p, "app", cli.DryRunNone, nil, func(c *capi.Cluster) (*ParkPlan, error) {
		return PlanPark(c, parkedAt, "alice")
	})
	assert.ErrorContains(t, err, denied)
	assert.ErrorContains(t, err, "nothing was changed")
	assert.Check(t, !strings.Contains(err.Error(), "%!"), err.Error())
	assert.Equal(t, exitcode.Of(err), exitcode.Failed)
}

// ClusterClient's errors name no flag (each command says what the user can
// do); status names both ways in.
func TestClusterClientErrorsNameNoFlag(t *testing.T) {
	p, _ := fakePlatform(t, threePools(), nil)
	_, _, err := p.ClusterClient(context.Background(), "app", "")
	assert.ErrorContains(t, err, "cannot read secret dynamo-prod/app-kubeconfig")
	assert.Check(t, !strings.Contains(err.Error(), "--cluster-kubeconfig"), err.Error())

	status := &StatusOptions{Name: "app"}
	view, err := status.clusterView(context.Background(), p)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(view.Error, "pass --cluster-kubeconfig FILE"))
}

// The control-plane pods are the ones the platform's runbook selects,
// kamaji.clastix.io/name=<cluster>; only when none carries the cluster's
// name are they found by the name of the control plane the cluster refers
// to (Kamaji's own label value, suffixed by a topology).
func TestControlPlanePodsFollowTheRunbooksLabel(t *testing.T) {
	c := threePools()
	c.Spec.ControlPlaneRef = &capi.ObjectRef{Kind: "KamajiControlPlane", Name: "app-x7k2p"}
	p, _ := fakePlatform(t, c, nil)
	create := func(name, label string) {
		_, err := p.Kube.CoreV1().Pods(c.Namespace).Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: c.Namespace, Labels: map[string]string{capi.KamajiNameLabel: label},
		}}, metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	found := func() []string {
		pods, err := p.ControlPlanePods(context.Background(), c)
		assert.NilError(t, err)
		names := []string{}
		for _, pod := range pods {
			names = append(names, pod.Name)
		}
		return names
	}
	create("tcp-0", "app-x7k2p")
	create("tcp-1", "app-x7k2p")
	assert.DeepEqual(t, found(), []string{"tcp-0", "tcp-1"})
	create("app-0", "app")
	assert.DeepEqual(t, found(), []string{"app-0"})

	c.Spec.ControlPlaneRef = nil
	// The runbook's label needs no control plane reference.
	assert.DeepEqual(t, found(), []string{"app-0"})
	assert.NilError(t, p.Kube.CoreV1().Pods(c.Namespace).Delete(context.Background(), "app-0", metav1.DeleteOptions{}))
	// No reference, no fallback.
	assert.DeepEqual(t, found(), []string{})
}

// Cluster API updates a busy Cluster's status all the time, and every status
// update bumps the resourceVersion; a park guarded by the resourceVersion
// lost that race on every attempt ("kept changing") on the real controllers.
// The guard is the generation (spec changes) and the paths park writes: a
// status update between read and patch no longer refuses it.
func TestStatusUpdatesDoNotRefuseThePatch(t *testing.T) {
	c := threePools()
	c.Generation = 4
	var p *Platform
	var dyn *dynamicfake.FakeDynamicClient
	attempts := 0
	p, dyn = fakePlatform(t, c, func(stored *unstructured.Unstructured, patch []byte) error {
		attempts++
		// A status update landed since park's read.
		stored.SetResourceVersion(nextVersion(stored.GetResourceVersion()))
		assert.NilError(t, unstructured.SetNestedField(stored.Object, "Provisioned", "status", "phase"))
		assert.NilError(t, dyn.Tracker().Update(clusterGVR, stored, stored.GetNamespace()))
		return applyJSONPatch(t, dyn, stored, patch)
	})
	var managers []string
	dyn.PrependReactor("patch", capi.ClusterResource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		managers = append(managers, a.(k8stesting.PatchActionImpl).PatchOptions.FieldManager)
		return false, nil, nil
	})
	_, err := applyPlan(context.Background(), p, "app", cli.DryRunNone, nil, func(c *capi.Cluster) (*ParkPlan, error) {
		return PlanPark(c, parkedAt, "alice")
	})
	assert.NilError(t, err)
	assert.Equal(t, attempts, 1, "one patch")
	assert.DeepEqual(t, managers, []string{"kubectl-park"})
	parked := readCluster(t, p)
	assert.Equal(t, *parked.Spec.Topology.Workers.MachineDeployments[0].Replicas, int32(0))
}

// park list reads the clusters in pages of --chunk-size and by -l, as kubectl get does.
func TestClustersAreListedInChunks(t *testing.T) {
	p, _ := fakePlatform(t, threePools(), nil)
	var limits []int64
	p.Dynamic = limitsRecorder{Interface: p.Dynamic, limits: &limits}
	cs, err := p.Clusters(context.Background(), "", "", 2)
	assert.NilError(t, err)
	assert.Check(t, is.Len(cs, 1))
	assert.DeepEqual(t, limits, []int64{2})
	// -l reaches the list.
	cs, err = p.Clusters(context.Background(), "", "env=none", 0)
	assert.NilError(t, err)
	assert.Check(t, is.Len(cs, 0))
}

// limitsRecorder records the page size of each namespaced list (the fake
// dynamic client drops it from the actions its reactors see).
type limitsRecorder struct {
	dynamic.Interface
	limits *[]int64
}

func (d limitsRecorder) Resource(r schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return limitsRecorderResource{d.Interface.Resource(r), d.limits}
}

type limitsRecorderResource struct {
	dynamic.NamespaceableResourceInterface
	limits *[]int64
}

func (r limitsRecorderResource) Namespace(ns string) dynamic.ResourceInterface {
	return limitsRecorderList{r.NamespaceableResourceInterface.Namespace(ns), r.limits}
}

type limitsRecorderList struct {
	dynamic.ResourceInterface
	limits *[]int64
}

func (r limitsRecorderList) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	*r.limits = append(*r.limits, opts.Limit)
	return r.ResourceInterface.List(ctx, opts)
}
