package fleetdrain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/kubectl/pkg/drain"

	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

func node(name string, unschedulable bool, annotations map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1", Annotations: annotations}, Spec: corev1.NodeSpec{Unschedulable: unschedulable}}
}

func workers(n int) []k8sruntime.Object {
	var out []k8sruntime.Object
	for i := range n {
		out = append(out, node(fmt.Sprintf("worker-%02d", i), false, nil))
	}
	return out
}

// fakeCluster is a clientset holding objs that serves evictions, and whose
// pod watches are counted while they are open.
func fakeCluster(t *testing.T, objs ...k8sruntime.Object) (*fake.Clientset, *atomic.Int32) {
	t.Helper()
	client := fake.NewClientset(objs...)
	client.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: drain.EvictionSubresource, Kind: drain.EvictionKind, Group: "policy", Version: "v1"},
	}}}
	// The API server allows every access the preflight asks about.
	client.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = true
		return true, r, nil
	})
	var open atomic.Int32
	client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		open.Add(1)
		return true, &countedWatch{Interface: watch.NewRaceFreeFake(), open: &open}, nil
	})
	return client, &open
}

// countedWatch counts itself out of the open watches when stopped.
type countedWatch struct {
	watch.Interface
	open *atomic.Int32
	once sync.Once
}

func (w *countedWatch) Stop() {
	w.once.Do(func() { w.open.Add(-1) })
	w.Interface.Stop()
}

func nodeOptions(client *fake.Clientset, names ...string) (*NodeOptions, *bytes.Buffer, *bytes.Buffer) {
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o := NewNodeOptions(streams)
	o.Nodes, o.client = names, client
	return o, out, errOut
}

func nodeNames(objs []k8sruntime.Object) []string {
	var names []string
	for _, o := range objs {
		names = append(names, o.(*corev1.Node).Name)
	}
	return names
}

func getNode(t *testing.T, client *fake.Clientset, name string) *corev1.Node {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	assert.NilError(t, err)
	return n
}

// A node's pod watch ends with its drain, even with --timeout=0 (no
// deadline of its own): before, 12 nodes left 12 watches and their
// goroutines open until the end of the run.
func TestNodeWatchEndsWithItsDrain(t *testing.T) {
	objs := workers(12)
	client, open := fakeCluster(t, objs...)
	d := &NodeDrainer{Helper: &drain.Helper{Ctx: context.Background(), Client: client, IgnoreAllDaemonSets: true}}
	drainNode := func(o k8sruntime.Object) {
		_, err := d.Drain(context.Background(), o.(*corev1.Node))
		assert.NilError(t, err)
	}
	// The first drain starts what client-go starts once per process.
	drainNode(objs[0])
	before := runtime.NumGoroutine()
	for _, o := range objs[1:] {
		drainNode(o)
	}
	assert.Equal(t, open.Load(), int32(0), "pod watches left open")
	// A finished watch's goroutines exit a moment after it: wait for that,
	// while 11 leaked watches would keep theirs.
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return runtime.NumGoroutine() <= before, nil
	})
	assert.Check(t, err, "goroutines: %d before the drains, %d after", before, runtime.NumGoroutine())
}

// The lines of concurrent drains and the live line share stderr; run with
// -race. The final line counts only drained nodes.
func TestConcurrentDrainsWriteStderrInTurn(t *testing.T) {
	objs := workers(12)
	client, _ := fakeCluster(t, objs...)
	o, out, errOut := nodeOptions(client, nodeNames(objs)...)
	o.MaxConcurrent = 4
	assert.NilError(t, o.drainNodes(context.Background()))
	assert.Equal(t, len(regexp.MustCompile(`(?m)^node/worker-\d+ drained$`).FindAllString(errOut.String(), -1)), 12, errOut.String())
	assert.Check(t, is.Contains(errOut.String(), "12/12 nodes drained\n"))
	assert.Check(t, is.Contains(out.String(), "Drained"))
	for _, name := range nodeNames(objs) {
		n := getNode(t, client, name)
		assert.Check(t, n.Spec.Unschedulable && CordonedByUs(n), "%s is cordoned and marked", name)
	}
}

func TestProgressCountsAFailedNodeAsNotDrained(t *testing.T) {
	var buf bytes.Buffer
	p := NewDrainProgress(cli.NewProgress(&buf), 3)
	p.start("a", 1)
	p.start("b", 1)
	p.Finished("a", false)
	p.Finished("b", true)
	p.Done()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	assert.Check(t, strings.HasSuffix(lines[len(lines)-1], " 1/3 nodes drained, 1 not drained"), buf.String())
	assert.Check(t, strings.HasSuffix(lines[2], " 0/3 nodes drained, 1 not drained | b 0/1 evicted"), buf.String())
}

func TestGiveBackOnlyFleetdrainsCordon(t *testing.T) {
	ctx := context.Background()
	client, _ := fakeCluster(t, node("ours", false, nil), node("theirs", true, nil), node("free", false, map[string]string{"team": "a"}))

	changed, err := Cordon(ctx, client, "ours", cli.DryRunNone)
	assert.NilError(t, err)
	assert.Check(t, changed)
	n := getNode(t, client, "ours")
	assert.Check(t, n.Spec.Unschedulable && n.Annotations[CordonedByAnnotation] == "kubectl-fleetdrain", "%v", n)

	changed, err = Cordon(ctx, client, "theirs", cli.DryRunNone)
	assert.NilError(t, err)
	assert.Check(t, !changed, "a cordoned node is left as it is")
	assert.Check(t, !CordonedByUs(getNode(t, client, "theirs")))

	result, err := GiveBack(ctx, client, "theirs", cli.DryRunNone)
	assert.NilError(t, err)
	assert.Equal(t, result, CordonedByOther)
	assert.Check(t, getNode(t, client, "theirs").Spec.Unschedulable, "someone else's cordon stays")

	result, err = GiveBack(ctx, client, "ours", cli.DryRunNone)
	assert.NilError(t, err)
	assert.Equal(t, result, GaveBack)
	n = getNode(t, client, "ours")
	assert.Check(t, !n.Spec.Unschedulable && !CordonedByUs(n), "%v", n)

	result, err = GiveBack(ctx, client, "free", cli.DryRunNone)
	assert.NilError(t, err)
	assert.Equal(t, result, NotCordoned)
	assert.DeepEqual(t, getNode(t, client, "free").Annotations, map[string]string{"team": "a"})
}

// cordonedByFleetdrain is a node as an interrupted run leaves it: cordoned
// and marked, and the API server records fleetdrain set spec.unschedulable.
func cordonedByFleetdrain(name string) *corev1.Node {
	n := node(name, true, map[string]string{CordonedByAnnotation: FieldManager})
	n.ManagedFields = []metav1.ManagedFieldsEntry{{
		Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{"f:` + CordonedByAnnotation + `":{}}},"f:spec":{"f:unschedulable":{}}}`),
	}}
	return n
}

// setUnschedulable is someone else's kubectl cordon or uncordon, under
// another field manager.
func setUnschedulable(t *testing.T, client *fake.Clientset, name string, value bool) {
	t.Helper()
	_, err := client.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType,
		[]byte(fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, value)), metav1.PatchOptions{FieldManager: "kubectl-cordon"})
	assert.NilError(t, err)
}

// A plain `kubectl uncordon` leaves fleetdrain's mark behind. A later
// cordon by someone else is theirs: never given back, and the stale mark
// goes; before, the mark alone made the cordon fleetdrain's.
func TestAMarkOutlivingItsCordonIsNeverHonoured(t *testing.T) {
	ctx := context.Background()
	client, _ := fakeCluster(t, node("n", false, nil), node("m", false, nil))
	for _, name := range []string{"n", "m"} {
		_, err := Cordon(ctx, client, name, cli.DryRunNone)
		assert.NilError(t, err)
		assert.Check(t, CordonedByUs(getNode(t, client, name)), "a fresh cordon is ours")
		setUnschedulable(t, client, name, false) // kubectl uncordon
	}
	setUnschedulable(t, client, "n", true) // kubectl cordon, by someone else

	n := getNode(t, client, "n")
	assert.Check(t, !CordonedByUs(n), "someone else's cordon under an old mark: %v", n.ManagedFields)
	result, err := GiveBack(ctx, client, "n", cli.DryRunNone)
	assert.NilError(t, err)
	assert.Equal(t, result, CordonedByOther)
	n = getNode(t, client, "n")
	assert.Check(t, n.Spec.Unschedulable, "someone else's cordon stays")
	assert.Check(t, is.Len(n.Annotations, 0), "the stale mark is removed")

	// Schedulable under an old mark: nothing to give back, the mark goes.
	result, err = GiveBack(ctx, client, "m", cli.DryRunNone)
	assert.NilError(t, err)
	assert.Equal(t, result, StaleMarkRemoved)
	assert.Check(t, is.Len(getNode(t, client, "m").Annotations, 0))

	// A drain meeting someone else's cordon under an old mark leaves the
	// cordon as it is and removes the mark, so no later run gives it back.
	setUnschedulable(t, client, "m", true)
	assert.NilError(t, client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("nodes"), withMark(getNode(t, client, "m")), ""))
	changed, err := Cordon(ctx, client, "m", cli.DryRunNone)
	assert.NilError(t, err)
	assert.Check(t, !changed)
	m := getNode(t, client, "m")
	assert.Check(t, m.Spec.Unschedulable && is.Len(m.Annotations, 0)().Success(), "%v", m)
}

func withMark(n *corev1.Node) *corev1.Node {
	n.Annotations = map[string]string{CordonedByAnnotation: FieldManager}
	return n
}

// The cordon and its mark go in one patch behind the resourceVersion read.
func TestCordonPatchIsGuarded(t *testing.T) {
	data, err := guardedPatch("42", cordonOps(node("n", false, nil)))
	assert.NilError(t, err)
	assert.Equal(t, string(data), `[{"op":"replace","path":"/metadata/resourceVersion","value":"42"},`+
		`{"op":"add","path":"/spec/unschedulable","value":true},`+
		`{"op":"add","path":"/metadata/annotations","value":{"fleetdrain.spokekit.io/cordoned-by":"kubectl-fleetdrain"}}]`)
}

// Ctrl-C in the middle of a drain: the run stops, prints its summary, gives
// back every node fleetdrain cordoned (this run's, and the cordon an earlier
// interrupted run left) and never one someone else cordoned; exit 130.
func TestInterruptedDrainGivesBackItsCordons(t *testing.T) {
	stuck := corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "db", Name: "db-0", Labels: map[string]string{"app": "db"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "db", Controller: ptr(true)}},
	}, Spec: corev1.PodSpec{NodeName: "a"}}
	client, open := fakeCluster(t,
		node("a", false, nil),
		cordonedByFleetdrain("b"), // an interrupted run's cordon
		node("c", true, nil),      // someone else's
		&stuck, budget("db", "quorum", 0, map[string]string{"app": "db"}))
	o, out, _ := nodeOptions(client, "a", "b", "c")
	o.UncordonOnFailure = true
	ctx, cancel := context.WithCancelCause(context.Background())
	// Ctrl-C once the drain of a waits on the budget.
	o.ErrOut = writerFunc(func(p []byte) {
		if bytes.Contains(p, []byte("waiting on budget db/quorum")) {
			cancel(fmt.Errorf("%w by SIGINT", exitcode.ErrInterrupted))
		}
	})

	err := o.drainNodes(ctx)
	assert.Equal(t, exitcode.Of(err), exitcode.Interrupted, "%v", err)
	assert.ErrorContains(t, err, "0 of 3 node(s) drained; not drained: a, b, c; still cordoned: c;")
	assert.ErrorContains(t, err, "kubectl fleetdrain uncordon node c`")
	assert.Check(t, is.Contains(out.String(), "Interrupted"), out.String())
	assert.Check(t, is.Contains(out.String(), "(node uncordoned)"), out.String())
	for _, name := range []string{"a", "b"} {
		n := getNode(t, client, name)
		assert.Check(t, !n.Spec.Unschedulable && !CordonedByUs(n), "%s given back", name)
	}
	assert.Check(t, getNode(t, client, "c").Spec.Unschedulable, "someone else's cordon stays")
	assert.Equal(t, open.Load(), int32(0), "pod watches left open")
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

func ptr[T any](v T) *T { return &v }

// --timeout expiring after the cordon is a wait that timed out after a
// change: exit 4, as every plugin's waits, and the node stays cordoned.
func TestNodeTimeoutAfterTheCordonExitsFour(t *testing.T) {
	stuck := pod("db", "db-0", "StatefulSet", map[string]string{"app": "db"})
	stuck.Spec.NodeName = "a"
	client, _ := fakeCluster(t, node("a", false, nil), &stuck, budget("db", "quorum", 0, map[string]string{"app": "db"}))
	o, _, _ := nodeOptions(client, "a")
	o.Timeout = time.Millisecond * 200
	err := o.drainNodes(context.Background())
	assert.Equal(t, exitcode.Of(err), exitcode.TimedOut, "%v", err)
	assert.ErrorContains(t, err, "0 of 1 node(s) drained")
	assert.Check(t, getNode(t, client, "a").Spec.Unschedulable, "the cordon stays: a re-run finishes")
}

// --dry-run=server sends what a real run sends, each with dryRun: the
// cordon and every eviction. The pods stay.
func TestServerDryRunSendsTheCordonAndEvictionsWithDryRun(t *testing.T) {
	web := pod("shop", "web-1", "ReplicaSet", nil)
	web.Spec.NodeName = "a"
	client, _ := fakeCluster(t, node("a", false, nil), &web)
	o, _, _ := nodeOptions(client, "a")
	o.DryRun = cli.DryRunServer
	assert.NilError(t, o.drainNodes(context.Background()))
	var evictions, patches int
	for _, a := range client.Actions() {
		switch {
		case a.GetSubresource() == "eviction":
			evictions++
			e := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
			assert.Check(t, is.DeepEqual(e.DeleteOptions.DryRun, []string{metav1.DryRunAll}), "%s", e.Name)
		case a.GetVerb() == "patch":
			patches++
			assert.Check(t, is.DeepEqual(a.(k8stesting.PatchActionImpl).PatchOptions.DryRun, []string{metav1.DryRunAll}))
		}
	}
	assert.Equal(t, evictions, 1)
	assert.Equal(t, patches, 1)
}

// Every write of fleetdrain names one field manager.
func TestNodeWritesNameTheFieldManager(t *testing.T) {
	client, _ := fakeCluster(t, node("a", false, nil))
	_, err := Cordon(context.Background(), client, "a", cli.DryRunNone)
	assert.NilError(t, err)
	_, err = GiveBack(context.Background(), client, "a", cli.DryRunNone)
	assert.NilError(t, err)
	var patches int
	for _, a := range client.Actions() {
		if a.GetVerb() == "patch" {
			patches++
			assert.Check(t, is.Equal(a.(k8stesting.PatchActionImpl).PatchOptions.FieldManager, FieldManager))
		}
	}
	assert.Equal(t, patches, 2)
}

// stdout is the report alone, so it can be piped; the hint after the table
// (the Machines to hand to the platform team) goes to stderr.
func TestTheHintAfterTheTableGoesToStderr(t *testing.T) {
	client, _ := fakeCluster(t, node("a", false, map[string]string{capi.MachineAnnotation: "md-0-abc"}))
	o, out, errOut := nodeOptions(client, "a")
	assert.NilError(t, o.drainNodes(context.Background()))
	assert.Check(t, is.Contains(out.String(), "Drained"))
	assert.Check(t, !strings.Contains(out.String(), "platform team"), out.String())
	assert.Check(t, is.Contains(errOut.String(), "node a is Machine md-0-abc"))
}

// --chunk-size pages every list the drain makes, as kubectl drain's does.
func TestNodeDrainListsInChunks(t *testing.T) {
	var objs []k8sruntime.Object
	a := node("a", false, nil)
	a.Labels = map[string]string{"pool": "x"}
	objs = append(objs, a)
	for _, name := range []string{"web-1", "web-2", "web-3"} {
		p := pod("shop", name, "ReplicaSet", nil)
		p.Spec.NodeName = "a"
		objs = append(objs, &p)
	}
	client, _ := fakeCluster(t, objs...)
	limits := map[string][]int64{}
	client.PrependReactor("list", "*", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		limits[a.GetResource().Resource] = append(limits[a.GetResource().Resource], a.(k8stesting.ListActionImpl).ListOptions.Limit)
		return false, nil, nil
	})
	o, _, _ := nodeOptions(client)
	// Server dry run lists as a drain does, and the fake then deletes nothing to wait for.
	o.Selector, o.ChunkSize, o.DryRun = "pool=x", 2, cli.DryRunServer
	assert.NilError(t, o.drainNodes(context.Background()))
	assert.Check(t, len(limits["nodes"]) > 0 && len(limits["pods"]) > 0, "%v", limits)
	for _, resource := range []string{"nodes", "pods"} {
		for _, limit := range limits[resource] {
			assert.Check(t, is.Equal(limit, int64(2)), "a list of %s", resource)
		}
	}
	assert.Equal(t, NewNodeOptions(genericiooptions.IOStreams{}).ChunkSize, cli.DefaultChunkSize)
}

// A list or watch the server denies ends the drain at once, naming the
// denial: the informers behind the budgets and a node's pods would retry it
// until the run's context ends, and without --timeout that is never. Before
// any change (the budgets are read to plan) it is a refusal, exit 3, and no
// node is cordoned; a denied pod watch after the cordon fails the node.
func TestADeniedListOrWatchEndsTheDrainAtOnce(t *testing.T) {
	forbidden := func(resource string) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("not in the role"))
	}
	web := pod("shop", "web-1", "ReplicaSet", nil)
	web.Spec.NodeName = "a"

	t.Run("budgets, before any change", func(t *testing.T) {
		client, _ := fakeCluster(t, node("a", false, nil), &web)
		client.PrependReactor("list", "poddisruptionbudgets", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
			return true, nil, forbidden("poddisruptionbudgets")
		})
		o, _, _ := nodeOptions(client, "a")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := o.drainNodes(ctx)
		assert.Equal(t, exitcode.Of(err), exitcode.Refused, "%v", err)
		assert.ErrorContains(t, err, "poddisruptionbudgets is forbidden")
		assert.ErrorContains(t, err, "nothing was changed")
		assert.Check(t, !getNode(t, client, "a").Spec.Unschedulable, "no cordon")
	})

	t.Run("a node's pods, after the cordon", func(t *testing.T) {
		client, _ := fakeCluster(t, node("a", false, nil), &web)
		client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
			return true, nil, forbidden("pods")
		})
		o, out, _ := nodeOptions(client, "a")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := o.drainNodes(ctx)
		assert.Equal(t, exitcode.Of(err), exitcode.Failed, "%v", err)
		assert.Check(t, is.Contains(out.String(), "pods is forbidden"), out.String())
		assert.Check(t, !strings.Contains(out.String(), "deadline"), out.String())
	})
}
