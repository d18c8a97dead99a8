//go:build e2e

package fleetdrain

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/spokekit/spokekit/e2e/harness"
	capiapi "github.com/spokekit/spokekit/internal/api/capi"
)

// capiConformance are pods on a Cluster API Machine's node, with their
// cluster.x-k8s.io/drain label, and what Cluster API's drain of the
// Machine should do with each: "evict@ORDER" (evicted in the batch of that
// order), "skip" (never evicted) or "wait" (never evicted, waited for until
// it completes). The MachineDrainRules of capiDrainRules select pods by
// their app label, which is the pod's name. The test checks that the plan
// (`fleetdrain node --platform-kubeconfig --dry-run=client -o json`)
// predicts exactly this, and that Cluster API v1.14.2's own Machine
// controller then does it.
var capiConformance = []struct {
	pod, label, want string
}{
	{"plain", "", "evict@0"},
	{"label-skip", "skip", "skip"},
	{"label-skip-caps", "Skip", "skip"},
	{"label-wait", "wait-completed", "wait"},
	{"label-unknown", "sometimes", "evict@0"},
	{"rule-skip", "", "skip"},
	{"rule-wait", "", "wait"},
	{"rule-late", "", "evict@10"},
	{"label-over-rule", "skip", "skip"},
	{"rule-first", "", "evict@-5"},
}

const capiDrainRules = `apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDrainRule
metadata: {name: skip, namespace: NS}
spec:
  drain: {behavior: Skip}
  pods: [{selector: {matchLabels: {app: rule-skip}}}]
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDrainRule
metadata: {name: wait, namespace: NS}
spec:
  drain: {behavior: WaitCompleted}
  pods: [{selector: {matchLabels: {app: rule-wait}}}]
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDrainRule
metadata: {name: late, namespace: NS}
spec:
  drain: {behavior: Drain, order: 10}
  machines: [{selector: {}, clusterSelector: {}}]
  pods: [{selector: {matchExpressions: [{key: app, operator: In, values: [rule-late, label-over-rule]}]}}]
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDrainRule
metadata: {name: first, namespace: NS}
spec:
  drain: {behavior: Drain, order: -5}
  pods: [{selector: {matchLabels: {app: rule-first}}, namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: cdr}}}]
`

var (
	capiOnce     sync.Once
	capiPlatform *harness.Cluster
	capiManagers *harness.ClusterAPI
	capiErr      error
)

// capiNamespace is the Environment namespace of the platform that holds
// the Cluster, its Machines and the MachineDrainRules.
const capiNamespace = "capi-drain"

// clusterAPIBed starts, the first time a test needs it, a platform cluster
// with Cluster API v1.14.2's managers (core, kubeadm bootstrap and control
// plane, in-memory infrastructure) and its in-memory ClusterClass.
func clusterAPIBed(t *testing.T) (*harness.Cluster, *harness.ClusterAPI) {
	t.Helper()
	capiOnce.Do(func() {
		// Twice the setup time: StartClusterAPI may first wait for the end
		// of e2e/park's run (see TestConformanceDrainPlanMatchesClusterAPI).
		ctx, cancel := context.WithTimeout(context.Background(), 2*harness.SetupTimeout)
		defer cancel()
		if capiPlatform, capiErr = env.StartCluster(ctx, "platform"); capiErr != nil {
			return
		}
		if capiManagers, capiErr = capiPlatform.StartClusterAPI(ctx); capiErr != nil {
			return
		}
		if _, capiErr = capiPlatform.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: capiNamespace}}, metav1.CreateOptions{}); capiErr != nil {
			return
		}
		capiErr = capiPlatform.InstallInMemoryClass(ctx, capiNamespace, "in-memory", nil)
	})
	assert.NilError(t, capiErr)
	return capiPlatform, capiManagers
}

var capiMachines = capiapi.GVR("v1beta2", capiapi.MachineResource)

// workerMachine waits for the cluster's one worker Machine with a node and
// names both.
func workerMachine(t *testing.T, platform *harness.Cluster, ns, cluster string) (machine, node string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx(t, 6*time.Minute), time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := platform.Dynamic.Resource(capiMachines).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "cluster.x-k8s.io/deployment-name"})
		if err != nil {
			return false, err
		}
		for _, m := range l.Items {
			if m.GetLabels()[capiapi.ClusterNameLabel] != cluster {
				continue
			}
			phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
			n, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
			if phase == "Running" && n != "" {
				machine, node = m.GetName(), n
				return true, nil
			}
		}
		return false, nil
	})
	assert.NilError(t, err, "waiting for the running worker Machine of %s", cluster)
	return machine, node
}

// evictionLog records, per pod of a namespace, when its deletion began
// (an eviction sets deletionTimestamp), as long as node exists: what
// happens to the pods once the Machine's node is deleted is garbage
// collection, not the drain.
type evictionLog struct {
	mu       sync.Mutex
	seq      int
	began    map[string]int // pod -> sequence number of its deletion
	gone     map[string]int // pod -> sequence number of its removal
	nodeGone bool
}

func watchEvictions(t *testing.T, c *harness.Cluster, ns, node string) *evictionLog {
	t.Helper()
	l := &evictionLog{began: map[string]int{}, gone: map[string]int{}}
	wctx, cancel := context.WithCancel(ctx(t, 20*time.Minute))
	t.Cleanup(cancel)
	pods := cache.NewListWatchFromClient(c.Kube.CoreV1().RESTClient(), "pods", ns, fields.Everything())
	mark := func(obj any, removed bool) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.nodeGone {
			return
		}
		l.seq++
		if _, seen := l.began[p.Name]; !seen && (removed || p.DeletionTimestamp != nil) {
			l.began[p.Name] = l.seq
		}
		if removed {
			l.gone[p.Name] = l.seq
		}
	}
	_, podCtrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: pods, ObjectType: &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, o any) { mark(o, false) },
			DeleteFunc: func(o any) {
				if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
					o = d.Obj
				}
				mark(o, true)
			},
		},
	})
	nodes := cache.NewListWatchFromClient(c.Kube.CoreV1().RESTClient(), "nodes", "", fields.OneTermEqualSelector("metadata.name", node))
	_, nodeCtrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: nodes, ObjectType: &corev1.Node{},
		Handler: cache.ResourceEventHandlerFuncs{DeleteFunc: func(any) {
			l.mu.Lock()
			l.nodeGone = true
			l.mu.Unlock()
		}},
	})
	go podCtrl.RunWithContext(wctx)
	go nodeCtrl.RunWithContext(wctx)
	assert.Check(t, cache.WaitForCacheSync(wctx.Done(), podCtrl.HasSynced, nodeCtrl.HasSynced))
	return l
}

func (l *evictionLog) snapshot() (began, gone map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	began, gone = map[string]int{}, map[string]int{}
	for k, v := range l.began {
		began[k] = v
	}
	for k, v := range l.gone {
		gone[k] = v
	}
	return began, gone
}

// machineDrainMessage is the message of the Machine's Deleting condition:
// what Cluster API's drain waits on.
func machineDrainMessage(ctx context.Context, platform *harness.Cluster, ns, machine string) string {
	m, err := platform.Dynamic.Resource(capiMachines).Namespace(ns).Get(ctx, machine, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	conds, _, _ := unstructured.NestedSlice(m.Object, "status", "conditions")
	for _, c := range conds {
		if cm, ok := c.(map[string]any); ok && cm["type"] == "Deleting" {
			msg, _ := cm["message"].(string)
			return msg
		}
	}
	return ""
}

func TestConformanceDrainPlanMatchesClusterAPI(t *testing.T) {
	// Cluster API's in-memory provider takes machine-wide ports, so one
	// process at a time runs it (StartClusterAPI waits for the others), and
	// e2e/park, which runs beside this package, holds them all its run.
	// Parallel, this test waits after the package's other tests instead of
	// before them.
	t.Parallel()
	tenantCluster := tenant.get(t)
	platform, managers := clusterAPIBed(t)
	// The only test of the bed: stopping its managers at the end lets
	// another process take the provider's ports.
	t.Cleanup(managers.Stop)
	const cluster = "drained"
	assert.NilError(t, platform.ApplyYAML(ctx(t, time.Minute), harness.TopologyCluster(capiNamespace, cluster, "in-memory", "{class: default-worker, name: md-0, replicas: 1}")))
	assert.NilError(t, platform.ApplyYAML(ctx(t, time.Minute), strings.ReplaceAll(capiDrainRules, "NS", capiNamespace)))
	machine, node := workerMachine(t, platform, capiNamespace, cluster)
	assert.NilError(t, managers.MoveToTenant(ctx(t, 5*time.Minute), capiNamespace, cluster, tenantCluster))

	// The pods, bare (so that each keeps its name), on the Machine's node.
	_, err := tenantCluster.Kube.CoreV1().Namespaces().Create(ctx(t, time.Minute), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cdr"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	for _, row := range capiConformance {
		labels := map[string]string{"app": row.pod}
		if row.label != "" {
			labels[capiapi.PodDrainLabel] = row.label
		}
		_, err := tenantCluster.Kube.CoreV1().Pods("cdr").Create(ctx(t, time.Minute), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: row.pod, Labels: labels},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		}, metav1.CreateOptions{})
		assert.NilError(t, err)
	}
	waitPods(t, tenantCluster, "cdr", "", "the pods ready on "+node, func(r map[string]int) bool { return r[node] == len(capiConformance) })

	// The prediction, with the platform's kubeconfig and Cluster API's own
	// drain settings (it deletes pods without a controller and with local
	// data, and leaves DaemonSet pods).
	r := kubectl(t, tenantCluster, "fleetdrain", "node", node, "--platform-kubeconfig", platform.Kubeconfig,
		"--force", "--delete-emptydir-data", "--ignore-daemonsets", "--dry-run=client", "-o", "json")
	assert.Equal(t, r.ExitCode, 0, r)
	var plan struct {
		Items []struct {
			DrainRules string `json:"drainRules"`
			Evict      []struct {
				Name  string
				Order *int32
			}
			WaitCompleted []struct{ Name string } `json:"waitCompleted"`
			Skip          []struct{ Name, Reason string }
		}
	}
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &plan), r)
	assert.Assert(t, is.Len(plan.Items, 1), r.Stdout)
	predicted := map[string]string{}
	for _, p := range plan.Items[0].Evict {
		order := int32(0)
		if p.Order != nil {
			order = *p.Order
		}
		predicted[p.Name] = fmt.Sprintf("evict@%d", order)
	}
	for _, p := range plan.Items[0].WaitCompleted {
		predicted[p.Name] = "wait"
	}
	for _, p := range plan.Items[0].Skip {
		predicted[p.Name] = "skip"
	}

	// What Cluster API does: the Machine is deleted (its pool scaled to 0)
	// and its controller drains the node.
	evictions := watchEvictions(t, tenantCluster, "cdr", node)
	_, err = platform.Dynamic.Resource(capiapi.GVR("v1beta2", capiapi.ClusterResource)).Namespace(capiNamespace).Patch(ctx(t, time.Minute), cluster, types.JSONPatchType,
		[]byte(`[{"op":"test","path":"/spec/topology/workers/machineDeployments/0/replicas","value":1},{"op":"replace","path":"/spec/topology/workers/machineDeployments/0/replicas","value":0}]`), metav1.PatchOptions{})
	assert.NilError(t, err)

	// Cluster API waits on the wait pods: its condition names them, while
	// the later batch waits for them.
	var waiting string
	err = wait.PollUntilContextTimeout(ctx(t, 4*time.Minute), time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		waiting = machineDrainMessage(ctx, platform, capiNamespace, machine)
		return strings.Contains(waiting, "waiting for completion"), nil
	})
	assert.NilError(t, err, "Cluster API's drain of %s waits for completion; its message: %q", machine, waiting)
	done := map[string]string{}
	var waited []string
	t.Logf("Cluster API's drain of %s: %s", machine, waiting)
	var waitLine, laterLine string
	for _, line := range strings.Split(waiting, "\n") {
		switch {
		case strings.HasSuffix(line, "waiting for completion"):
			waitLine = line
		case strings.Contains(line, "the following Pods will be evicted"):
			laterLine = line + ","
		}
	}
	for _, row := range capiConformance {
		if strings.Contains(waitLine, "cdr/"+row.pod+",") || strings.Contains(waitLine, "cdr/"+row.pod+":") {
			done[row.pod] = "wait"
			waited = append(waited, row.pod)
		}
	}
	// The waited pods complete (they are deleted, as a finished Job's pod
	// would be): the drain goes on to the later batches.
	for _, p := range waited {
		assert.NilError(t, tenantCluster.Kube.CoreV1().Pods("cdr").Delete(ctx(t, time.Minute), p, metav1.DeleteOptions{}))
	}
	err = wait.PollUntilContextTimeout(ctx(t, 6*time.Minute), time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := tenantCluster.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err != nil, nil
	})
	assert.NilError(t, err, "Cluster API finishes the drain and deletes node %s; its message: %q", node, machineDrainMessage(ctx(t, time.Minute), platform, capiNamespace, machine))

	began, gone := evictions.snapshot()
	// Batches: each one's evictions begin once every pod of the batches
	// before it is gone.
	type evicted struct {
		pod          string
		began, order int
	}
	var evictedPods []evicted
	for _, row := range capiConformance {
		if done[row.pod] == "wait" {
			continue
		}
		seq, ok := began[row.pod]
		if !ok {
			done[row.pod] = "skip"
			continue
		}
		// The order is the table's: what is checked of it is that Cluster
		// API's evictions came in batches in that order.
		var order int
		_, _ = fmt.Sscanf(row.want, "evict@%d", &order)
		evictedPods = append(evictedPods, evicted{row.pod, seq, order})
	}
	sort.Slice(evictedPods, func(i, j int) bool { return evictedPods[i].began < evictedPods[j].began })
	for _, e := range evictedPods {
		done[e.pod] = fmt.Sprintf("evict@%d", e.order)
		for _, before := range evictedPods {
			if before.order < e.order {
				assert.Check(t, gone[before.pod] != 0 && gone[before.pod] < e.began,
					"Cluster API evicted %s (order %d) only once %s (order %d) was gone", e.pod, e.order, before.pod, before.order)
			}
		}
	}

	t.Logf("planned %v; Cluster API did %v", predicted, done)
	for _, row := range capiConformance {
		t.Run(row.pod, func(t *testing.T) {
			// While it waits on batch 0, Cluster API names the pods of the
			// batches after it.
			var order int
			if _, err := fmt.Sscanf(row.want, "evict@%d", &order); err == nil {
				assert.Check(t, is.Equal(strings.Contains(laterLine, "cdr/"+row.pod+","), order > 0), "Cluster API evicts it after batch 0: %q", laterLine)
			}
			assert.Check(t, is.Equal(predicted[row.pod], row.want), "the plan")
			assert.Check(t, is.Equal(done[row.pod], row.want), "Cluster API's drain")
		})
	}
	assert.Check(t, is.Contains(plan.Items[0].DrainRules, "--platform-kubeconfig"), r.Stdout)
}
