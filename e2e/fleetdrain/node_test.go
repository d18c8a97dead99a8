//go:build e2e

package fleetdrain

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/spokekit/spokekit/e2e/fixture"
	"github.com/spokekit/spokekit/e2e/harness"
)

// report is the part of the -o json report the tests read.
type report struct {
	Kind   string `json:"kind"`
	DryRun string `json:"dryRun"`
	Items  []struct {
		Metadata         struct{ Name string } `json:"metadata"`
		Machine          string                `json:"machine"`
		Result           string                `json:"result"`
		NodeState        string                `json:"nodeState"`
		Evict            []struct{ Namespace, Name, Surge string }
		Skip             []struct{ Namespace, Name, Reason string }
		UnhealthyDeletes []struct{ Namespace, Name string }
		UnhealthyDeleted []string `json:"unhealthyDeleted"`
		Blockers         []struct {
			Kind, Name, Message string
			DisruptionsAllowed  *int32
			Pods                []string
			Refuses             bool
		}
		Warnings   []string
		Evicted    int  `json:"evicted"`
		Uncordoned bool `json:"uncordoned"`
	} `json:"items"`
}

func parseReport(t testing.TB, r harness.Result) report {
	t.Helper()
	var rep report
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &rep), r)
	return rep
}

func TestDrainOneNode(t *testing.T) {
	c := tenant.get(t)
	addNodes(t, c, "one", "one-1")
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), workload("one", "one", 4, 2)))
	waitPods(t, c, "one", "", "7 pods ready on one-1", func(r map[string]int) bool { return r["one-1"] == 7 })
	addNodes(t, c, "one", "one-2")

	t.Run("dry run prints the plan and changes nothing", func(t *testing.T) {
		r := kubectl(t, c, "fleetdrain", "node", "one-1", "--ignore-daemonsets", "--dry-run=client", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		rep := parseReport(t, r)
		assert.Equal(t, rep.DryRun, "client")
		assert.Equal(t, len(rep.Items), 1)
		n := rep.Items[0]
		assert.Equal(t, n.Result, "Planned")
		assert.Equal(t, n.Machine, "machine-one-1")
		assert.Equal(t, len(n.Evict), 6, "4 web and 2 db pods: %s", r.Stdout)
		assert.Equal(t, len(n.Skip), 1, r.Stdout)
		assert.Check(t, is.Contains(n.Skip[0].Reason, "DaemonSet"))
		assert.Check(t, !unschedulable(t, c, "one-1"), "a dry run must not cordon")
		assert.Equal(t, len(podsOn(t, c, "one", "one-1")), 7, "a dry run must not evict")

		pods := podsOn(t, c, "one", "one-1")
		r = kubectl(t, c, "fleetdrain", "node", "one-1", "--ignore-daemonsets", "--dry-run=server")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, "one/db-0"), r)
		assert.Check(t, !unschedulable(t, c, "one-1"), "a server dry run must not cordon")
		assert.Check(t, is.DeepEqual(podsOn(t, c, "one", "one-1"), pods), "a server dry run sends the evictions with dryRun: every pod stays")
	})

	t.Run("drain moves the pods and names the machine", func(t *testing.T) {
		r := kubectl(t, c, "fleetdrain", "node", "one-1", "--ignore-daemonsets")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, "Drained"), r)
		assert.Check(t, is.Contains(r.Stdout, "machine-one-1"), r)
		// The hint after the table is on stderr, stdout is the table alone.
		assert.Check(t, is.Contains(r.Stderr, "hand these names to the platform team"), r)
		assert.Check(t, unschedulable(t, c, "one-1"))
		left := podsOn(t, c, "one", "one-1")
		assert.DeepEqual(t, len(left), 1)
		assert.Check(t, hasPrefix(left, "agent-"), "only the DaemonSet pod stays: %v", left)
		waitPods(t, c, "one", "app in (web, db)", "web and db ready on one-2", func(r map[string]int) bool { return r["one-2"] == 6 })

		movedPods := podsOn(t, c, "one", "one-2")
		r = kubectl(t, c, "fleetdrain", "node", "one-1", "--ignore-daemonsets", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, "a second drain is a no-op: %s", r)
		second := parseReport(t, r).Items[0]
		assert.Equal(t, second.Result, "Drained")
		assert.Check(t, is.Len(second.Evict, 0), "nothing left to evict: %s", r.Stdout)
		assert.Equal(t, second.Evicted, 0, "nothing evicted")
		assert.Check(t, is.DeepEqual(podsOn(t, c, "one", "one-1"), left), "the DaemonSet pod is left alone")
		assert.Check(t, is.DeepEqual(podsOn(t, c, "one", "one-2"), movedPods), "the moved pods are the same pods")
	})

	t.Run("uncordon gives the node back", func(t *testing.T) {
		r := kubectl(t, c, "fleetdrain", "uncordon", "node", "one-1", "--dry-run=client")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, unschedulable(t, c, "one-1"), "a dry run must not uncordon")
		r = kubectl(t, c, "fleetdrain", "uncordon", "node", "one-1")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, !unschedulable(t, c, "one-1"))
		r = kubectl(t, c, "fleetdrain", "uncordon", "node", "one-1", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, `"changed": false`), "uncordon twice is a no-op: %s", r)
	})
}

// quorum is two pods on one node or pool whose budget lets none go.
func quorum(ns string, w fixture.Workload) string {
	w.Namespace, w.Name, w.Replicas, w.Image = ns, "quorum", 2, "etcd"
	return fixture.Docs(fixture.Namespace(ns), w.YAML(), fixture.Budget(ns, "quorum", "quorum", "minAvailable: 2"))
}

func TestBudgetWithNoDisruptionStopsTheDrain(t *testing.T) {
	c := tenant.get(t)
	addNodes(t, c, "pdb", "pdb-1")
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), quorum("pdb", fixture.Workload{Pool: "pdb"})))
	waitPods(t, c, "pdb", "app=quorum", "2 quorum pods ready", func(r map[string]int) bool { return r["pdb-1"] == 2 })
	waitBudget(t, c, "pdb", "quorum", 0)
	addNodes(t, c, "pdb", "pdb-2")

	r := kubectl(t, c, "fleetdrain", "node", "pdb-1", "--dry-run=client", "-o", "json")
	assert.Equal(t, r.ExitCode, 0, r)
	blockers := parseReport(t, r).Items[0].Blockers
	assert.Equal(t, len(blockers), 1, r)
	b := blockers[0]
	assert.Equal(t, b.Kind, "PodDisruptionBudget")
	assert.Equal(t, b.Name, "pdb/quorum")
	assert.Equal(t, *b.DisruptionsAllowed, int32(0))
	assert.Equal(t, len(b.Pods), 2)
	assert.Check(t, !b.Refuses, "a budget is waited on, not refused")

	// The drain ends because the budget wait reached --pdb-timeout (a
	// condition the error names), not because some clock allowed it.
	r = kubectl(t, c, "fleetdrain", "node", "pdb-1", "--pdb-timeout", "4s", "--uncordon-on-failure", "-o", "json")
	assert.Equal(t, r.ExitCode, 1, r)
	assert.Check(t, is.Regexp(`PodDisruptionBudget pdb/quorum allowed 0 disruptions \(2 of 2 expected pods healthy\) for 4s`, r.Stderr), r)
	n := parseReport(t, r).Items[0]
	assert.Equal(t, n.Result, "Failed")
	assert.Check(t, n.Uncordoned)
	assert.Check(t, !unschedulable(t, c, "pdb-1"), "--uncordon-on-failure gives the node back")
	assert.Equal(t, len(podsOn(t, c, "pdb", "pdb-1")), 2, "the budget kept both pods")

	r = kubectl(t, c, "fleetdrain", "node", "pdb-1", "--pdb-timeout", "2s")
	assert.Equal(t, r.ExitCode, 1, r)
	assert.Check(t, unschedulable(t, c, "pdb-1"), "without --uncordon-on-failure the node stays cordoned")
	assert.Check(t, is.Contains(r.Stdout, "Failed"), r)
}

func TestRefusedBeforeAnyChange(t *testing.T) {
	c := tenant.get(t)
	addNodes(t, c, "bare", "bare-1")
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), fixture.Docs(fixture.Namespace("bare"), fixture.Pod("bare", "lonely", "bare"))))
	waitPods(t, c, "bare", "app=lonely", "the bare pod ready", func(r map[string]int) bool { return r["bare-1"] == 1 })

	unchanged := func(t *testing.T) {
		t.Helper()
		assert.Check(t, !unschedulable(t, c, "bare-1"), "nothing may be cordoned")
		assert.DeepEqual(t, podsOn(t, c, "bare", "bare-1"), []string{"lonely"})
	}
	t.Run("unmanaged pod without --force", func(t *testing.T) {
		r := kubectl(t, c, "fleetdrain", "node", "bare-1")
		assert.Equal(t, r.ExitCode, 3, r)
		assert.Check(t, is.Contains(r.Stderr, "--force"), r)
		assert.Check(t, is.Contains(r.Stderr, "no node was cordoned"), r)
		assert.Check(t, is.Contains(r.Stdout, "bare/lonely"), "the plan names the pod: %s", r)
		unchanged(t)
	})
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown node", []string{"bare-1", "no-such-node", "--force"}, 3, `node "no-such-node" not found`},
		{"selector matching nothing", []string{"-l", "pool=none", "--force"}, 3, "no node matches"},
		{"no node", []string{"--force"}, 2, "name at least one node"},
		{"names and selector", []string{"bare-1", "-l", "pool=bare"}, 2, "not both"},
		{"bad selector", []string{"-l", "pool in (", "--force"}, 2, "invalid --selector"},
		{"bad pod selector", []string{"bare-1", "--pod-selector", "a=(", "--force"}, 2, "invalid --pod-selector"},
		{"max-concurrent 0", []string{"bare-1", "--max-concurrent", "0", "--force"}, 2, "--max-concurrent"},
		{"pdb-timeout 0", []string{"bare-1", "--pdb-timeout", "0s", "--force"}, 2, "--pdb-timeout"},
		{"grace period -2", []string{"bare-1", "--grace-period", "-2", "--force"}, 2, "--grace-period"},
		{"bad output", []string{"bare-1", "-o", "xml", "--force"}, 2, "output format"},
		{"bad dry-run", []string{"bare-1", "--dry-run=maybe", "--force"}, 2, "dry-run"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := kubectl(t, c, append([]string{"fleetdrain", "node"}, tc.args...)...)
			assert.Equal(t, r.ExitCode, tc.code, r)
			assert.Check(t, is.Contains(r.Stderr, tc.want), r)
			unchanged(t)
		})
	}
	r := kubectl(t, c, "fleetdrain", "uncordon", "node", "no-such-node")
	assert.Equal(t, r.ExitCode, 3, r)
}

// spreadBudget is a Deployment over a pool with a budget that lets one pod
// go at a time, and a Deployment with no budget.
func spreadBudget(pool string) string {
	return fixture.Docs(
		fixture.Namespace(pool),
		fixture.Workload{Namespace: pool, Name: "api", Replicas: 8, Pool: pool}.YAML(),
		fixture.Budget(pool, "api", "api", "minAvailable: 7"),
		fixture.Workload{Namespace: pool, Name: "batch", Replicas: 12, Pool: pool, Image: "busybox"}.YAML(),
	)
}

// minReady follows the Ready pods of a selector and records the lowest count seen.
type minReady struct {
	mu  sync.Mutex
	min int
}

func watchMinReady(t *testing.T, c *harness.Cluster, ns, selector string) *minReady {
	t.Helper()
	m := &minReady{min: 1 << 30}
	lw := cache.NewFilteredListWatchFromClient(c.Kube.CoreV1().RESTClient(), "pods", ns, func(o *metav1.ListOptions) { o.LabelSelector = selector })
	var store cache.Store
	observe := func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.min = min(m.min, total(readyPods(store.List())))
	}
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw, ObjectType: &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { observe() },
			UpdateFunc: func(any, any) { observe() },
			DeleteFunc: func(any) { observe() },
		},
	})
	go ctrl.RunWithContext(ctx(t, 10*time.Minute))
	assert.Check(t, cache.WaitForCacheSync(ctx(t, time.Minute).Done(), ctrl.HasSynced))
	return m
}

// The API server keeps every budget itself: the lowest Ready count alone
// could not tell drains that share one view of the budgets from drains that
// each evict on their own and are refused. So the test also counts the
// evictions the API server refused (429) during the drain: drains sharing
// one view send none.
func TestConcurrentDrainKeepsBudgets(t *testing.T) {
	c := tenant.get(t)
	pools := []string{"conc"}
	nodes := map[string][]string{}
	for _, p := range pools {
		for i := 1; i <= 4; i++ {
			nodes[p] = append(nodes[p], p+"-"+string(rune('0'+i)))
		}
		addNodes(t, c, p, nodes[p]...)
		assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), spreadBudget(p)))
	}
	for _, p := range pools {
		waitPods(t, c, p, "", "20 pods ready in "+p, func(r map[string]int) bool { return total(r) == 20 })
		waitBudget(t, c, p, "api", 1)
		addNodes(t, c, p, p+"-spare-1", p+"-spare-2")
	}

	// How long this takes against kubectl drain is `make bench`'s question,
	// not this test's.
	ready := watchMinReady(t, c, "conc", "app=api")
	before := evictionsByCode(t, c)
	r := kubectl(t, c, append([]string{"fleetdrain", "node", "--max-concurrent", "2", "--ignore-daemonsets", "-o", "json"}, nodes["conc"]...)...)
	assert.Equal(t, r.ExitCode, 0, r)
	after := evictionsByCode(t, c)
	// The granted evictions prove the count is read at all: a metric that
	// went missing would otherwise pass as no refusal.
	assert.Check(t, after["201"]-before["201"] >= 20, "evictions the API server granted during the drain: %v", after["201"]-before["201"])
	assert.Check(t, is.Equal(after["429"]-before["429"], 0.0), "evictions the API server refused: the drains did not share one view of the budgets")
	rep := parseReport(t, r)
	var results []string
	for _, n := range rep.Items {
		results = append(results, n.Metadata.Name+"="+n.Result)
	}
	sort.Strings(results)
	assert.DeepEqual(t, results, []string{"conc-1=Drained", "conc-2=Drained", "conc-3=Drained", "conc-4=Drained"})
	for _, n := range nodes["conc"] {
		assert.Equal(t, len(podsOn(t, c, "conc", n)), 0, "node %s is empty", n)
	}
	waitPods(t, c, "conc", "app=api", "api back at 8", func(r map[string]int) bool { return total(r) == 8 })
	ready.mu.Lock()
	lowest := ready.min
	ready.mu.Unlock()
	assert.Check(t, lowest >= 7, "the budget wants 7 api pods ready; the drain let it drop to %d", lowest)
}

// evictionsByCode reads the API server's count of eviction requests by
// response code from its metrics: 201 granted, 429 refused (a budget
// allowing no disruption).
func evictionsByCode(t testing.TB, c *harness.Cluster) map[string]float64 {
	t.Helper()
	raw, err := c.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx(t, time.Minute))
	assert.NilError(t, err)
	counts := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `subresource="eviction"`) {
			continue
		}
		_, rest, found := strings.Cut(line, `code="`)
		if !found {
			continue
		}
		code, _, _ := strings.Cut(rest, `"`)
		v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		assert.NilError(t, err)
		counts[code] += v
	}
	return counts
}
