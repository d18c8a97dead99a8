//go:build e2e

package fleetdrain

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/spokekit/spokekit/e2e/fixture"
	"github.com/spokekit/spokekit/internal/fleetdrain"
)

// An unreachable node: no kubelet answers for unr-1 (kwok does not play
// it), so the controller manager's node lifecycle controller marks it Ready
// Unknown, and no pod on it ever runs or finishes terminating. The pods are
// bound to it by name, as pods of a node that died are. The drain still
// ends: an evicted pod terminating past Cluster API's one second counts as
// gone, and the pods whose budget has no healthy pod left are deleted by
// name with --unhealthy-pods=evict-if-budget-empty.
func TestUnreachableNodeDrainEnds(t *testing.T) {
	c := tenant.get(t)
	_, err := c.Kube.CoreV1().Nodes().Create(ctx(t, time.Minute), &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        "unr-1",
		Labels:      map[string]string{"pool": "unr", "kubernetes.io/hostname": "unr-1"},
		Annotations: map[string]string{"cluster.x-k8s.io/machine": "machine-unr-1"},
	}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), fixture.Docs(
		fixture.Namespace("unr"),
		boundDeployment("unr", "lost", "unr-1"),
		fixture.Budget("unr", "lost", "lost", "minAvailable: 2"),
		boundDeployment("unr", "free", "unr-1"),
	)))
	assert.NilError(t, c.WaitUnreachable(ctx(t, 4*time.Minute), "unr-1"), "the node lifecycle controller marks unr-1 Ready Unknown")
	waitList(t, c.Kube.CoreV1().RESTClient(), "pods", "unr", "", &corev1.Pod{}, "4 pods bound to unr-1", func(objs []any) bool { return len(objs) == 4 })
	waitList(t, c.Kube.PolicyV1().RESTClient(), "poddisruptionbudgets", "unr", "", &policyv1.PodDisruptionBudget{},
		"budget unr/lost with no healthy pod", func(objs []any) bool {
			for _, o := range objs {
				if b := o.(*policyv1.PodDisruptionBudget); b.Name == "lost" && b.Status.ObservedGeneration == b.Generation {
					return b.Status.CurrentHealthy == 0 && b.Status.ExpectedPods == 2
				}
			}
			return false
		})
	drain := []string{"fleetdrain", "node", "unr-1", "--unhealthy-pods=evict-if-budget-empty", "--timeout", "3m", "-o", "json"}

	t.Run("the plan says the node is unreachable and how the wait ends", func(t *testing.T) {
		r := kubectl(t, c, append(drain, "--dry-run=client")...)
		assert.Equal(t, r.ExitCode, 0, r)
		n := parseReport(t, r).Items[0]
		assert.Equal(t, n.NodeState, "Unreachable")
		assert.Assert(t, len(n.Warnings) > 0, r.Stdout)
		assert.Check(t, is.Contains(n.Warnings[0], "--skip-wait-for-delete-timeout=1, defaulted as Cluster API does"), r.Stdout)
		var deletes []string
		for _, p := range n.UnhealthyDeletes {
			deletes = append(deletes, p.Namespace+"/"+p.Name)
		}
		assert.Check(t, is.Len(deletes, 2), "the two lost pods, named: %s", r.Stdout)
		for _, p := range deletes {
			assert.Check(t, is.Contains(p, "unr/lost-"), r.Stdout)
		}
		assert.Check(t, !unschedulable(t, c, "unr-1"), "a dry run must not cordon")
	})

	t.Run("the drain ends before its --timeout and deletes only the budget's unhealthy pods", func(t *testing.T) {
		before := podsOn(t, c, "unr", "unr-1")
		r := kubectl(t, c, drain...)
		assert.Equal(t, r.ExitCode, 0, "exit 4 would be --timeout running out: %s", r)
		n := parseReport(t, r).Items[0]
		assert.Equal(t, n.Result, "Drained")
		assert.Check(t, is.Len(n.UnhealthyDeleted, 2), r.Stdout)
		for _, p := range n.UnhealthyDeleted {
			assert.Check(t, is.Contains(p, "unr/lost-"), r.Stdout)
		}
		// No kubelet finishes them: every pod is still there, terminating
		// (beside their replacements, bound to unr-1 by their template).
		for _, name := range before {
			p, err := c.Kube.CoreV1().Pods("unr").Get(ctx(t, time.Minute), name, metav1.GetOptions{})
			assert.NilError(t, err, "the pods never finish terminating on an unreachable node")
			assert.Check(t, p.DeletionTimestamp != nil, "pod %s was evicted or deleted", name)
		}
	})
}

// boundDeployment is a Deployment of two pods bound to node by name,
// past the scheduler.
func boundDeployment(ns, name, node string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  replicas: 2
  selector: {matchLabels: {app: %[2]s}}
  template:
    metadata: {labels: {app: %[2]s}}
    spec:
      nodeName: %[3]s
      containers: [{name: %[2]s, image: nginx}]`, ns, name, node)
}

// Two nodes drained together, each holding one pod of budget a and one of
// budget b, each budget letting one pod go, and no room for a replacement
// until a node is drained and the platform replaces its Machine (here: a
// new node joins once one of them is empty). Taken in parallel, each node
// takes one budget's last disruption and waits on the other's until
// --pdb-timeout; the plan names the deadlock and the order that ends it.
func TestBudgetDeadlockIsOrdered(t *testing.T) {
	c := tenant.get(t)
	addNodes(t, c, "dl", "dl-1", "dl-2")
	// The spread counts only nodes without taints: both must have lost the
	// not-ready taint a new node starts with.
	waitList(t, c.Kube.CoreV1().RESTClient(), "nodes", "", "pool=dl", &corev1.Node{}, "dl-1 and dl-2 without taints", func(objs []any) bool {
		untainted := 0
		for _, o := range objs {
			if len(o.(*corev1.Node).Spec.Taints) == 0 {
				untainted++
			}
		}
		return untainted == 2
	})
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), fixture.CrossedBudgets("dl", "dl")))
	waitPods(t, c, "dl", "", "a and b spread over dl-1 and dl-2", func(r map[string]int) bool { return r["dl-1"] == 2 && r["dl-2"] == 2 })
	waitBudget(t, c, "dl", "a", 1)
	waitBudget(t, c, "dl", "b", 1)
	drain := []string{"fleetdrain", "node", "dl-1", "dl-2", "--max-concurrent", "2", "--pdb-timeout", "3m", "-o", "json"}

	r := kubectl(t, c, append(drain, "--dry-run=client")...)
	assert.Equal(t, r.ExitCode, 0, r)
	for _, n := range parseReport(t, r).Items {
		var deadlock []string
		for _, b := range n.Blockers {
			if b.Kind == "BudgetDeadlock" {
				assert.Check(t, !b.Refuses, "a deadlock is ordered away, not refused")
				deadlock = append(deadlock, b.Message)
			}
		}
		assert.Assert(t, is.Len(deadlock, 1), "node %s: %s", n.Metadata.Name, r.Stdout)
		assert.Check(t, is.Contains(deadlock[0], "dl/a, dl/b"), r.Stdout)
		assert.Check(t, is.Contains(deadlock[0], "dl-1, then dl-2"), r.Stdout)
	}

	replaced, err := c.ReplaceFirstDrained(ctx(t, 10*time.Minute), "dl", []string{"dl-1", "dl-2"}, "dl-3",
		map[string]string{"pool": "dl", "kubernetes.io/hostname": "dl-3", "type": "kwok"})
	assert.NilError(t, err)
	r = kubectl(t, c, drain...)
	assert.Equal(t, r.ExitCode, 0, "waiting on each other would end at --pdb-timeout, exit 1: %s", r)
	for _, n := range parseReport(t, r).Items {
		assert.Check(t, is.Equal(n.Result, "Drained"), "node %s", n.Metadata.Name)
	}
	select {
	case first := <-replaced:
		assert.NilError(t, first.Err)
		assert.Check(t, is.Equal(first.Drained, "dl-1"), "the node the plan put first was drained first")
	case <-ctx(t, time.Minute).Done():
		t.Fatal("both nodes drained, yet no node was seen empty")
	}
}

// --surge on a single replica whose budget allows no disruption: the
// replacement starts first and is Ready on another node before the pod is
// evicted, so the budget's pod count never drops; the replicas come back
// exactly, also when Ctrl-C stops the drain while it waits.
func TestSurgeSingleReplica(t *testing.T) {
	c := tenant.get(t)
	addNodes(t, c, "sg", "sg-1")
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), fixture.Docs(
		fixture.Namespace("sg"),
		fixture.Workload{Namespace: "sg", Name: "solo", Replicas: 1, Pool: "sg"}.YAML(),
		fixture.Budget("sg", "solo", "solo", "minAvailable: 1"),
	)))
	waitPods(t, c, "sg", "app=solo", "solo ready on sg-1", func(r map[string]int) bool { return r["sg-1"] == 1 })
	waitBudget(t, c, "sg", "solo", 0)
	restored := func(t *testing.T) {
		t.Helper()
		d, err := c.Kube.AppsV1().Deployments("sg").Get(ctx(t, time.Minute), "solo", metav1.GetOptions{})
		assert.NilError(t, err)
		assert.Check(t, is.Equal(*d.Spec.Replicas, int32(1)), "the scale is given back exactly")
		_, recorded := d.Annotations[fleetdrain.SurgeAnnotation]
		assert.Check(t, !recorded, "the surge record is removed: %v", d.Annotations)
	}

	// sg-2 is taken (a taint solo does not tolerate): the replacement
	// waits Pending, and so does the drain.
	addNodes(t, c, "sg", "sg-2")
	busy := func(taints ...corev1.Taint) {
		t.Helper()
		// kwok writes the node's status all along: read again on conflict.
		assert.NilError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := c.Kube.CoreV1().Nodes().Get(ctx(t, time.Minute), "sg-2", metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Spec.Taints = taints
			_, err = c.Kube.CoreV1().Nodes().Update(ctx(t, time.Minute), n, metav1.UpdateOptions{})
			return err
		}))
	}
	busy(corev1.Taint{Key: "example.com/busy", Effect: corev1.TaintEffectNoSchedule})

	t.Run("the plan surges the Deployment", func(t *testing.T) {
		r := kubectl(t, c, "fleetdrain", "node", "sg-1", "--surge", "--dry-run=client", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		evict := parseReport(t, r).Items[0].Evict
		assert.Assert(t, is.Len(evict, 1), r.Stdout)
		assert.Check(t, is.Contains(evict[0].Surge, "surge: Deployment sg/solo goes from 1 to 2 replicas first"), r.Stdout)
	})

	t.Run("Ctrl-C while the replacement waits gives the replica back", func(t *testing.T) {
		s := start(t, c, "fleetdrain", "node", "sg-1", "--surge", "--uncordon-on-failure")
		r := interrupt(t, s, "waiting on budget sg/solo", syscall.SIGINT)
		assert.Equal(t, r.ExitCode, 130, r)
		restored(t)
		assert.Check(t, !unschedulable(t, c, "sg-1"), "the cordon is given back")
		waitPods(t, c, "sg", "app=solo", "solo alone on sg-1 again", func(r map[string]int) bool { return r["sg-1"] == 1 && total(r) == 1 })
	})

	t.Run("with room elsewhere the replacement runs before the eviction", func(t *testing.T) {
		busy()
		ready := watchMinReady(t, c, "sg", "app=solo")
		r := kubectl(t, c, "fleetdrain", "node", "sg-1", "--surge", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Equal(parseReport(t, r).Items[0].Result, "Drained"))
		restored(t)
		waitPods(t, c, "sg", "app=solo", "solo alone on sg-2", func(r map[string]int) bool { return r["sg-2"] == 1 && total(r) == 1 })
		ready.mu.Lock()
		lowest := ready.min
		ready.mu.Unlock()
		assert.Check(t, lowest >= 1, "the budget wants 1 solo pod ready; the drain let it drop to %d", lowest)
	})
}

// The drain's newer flags are checked before any node is cordoned.
func TestNewFlagsRefusedBeforeAnyCordon(t *testing.T) {
	c := tenant.get(t)
	addNodes(t, c, "flags", "flags-1")
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown unhealthy-pods policy", []string{"--unhealthy-pods", "always"}, 2, "--unhealthy-pods must be"},
		{"surge without eviction", []string{"--surge", "--disable-eviction"}, 2, "--surge"},
		{"negative skip-wait", []string{"--skip-wait-for-delete-timeout", "-1"}, 2, "--skip-wait-for-delete-timeout"},
		{"platform kubeconfig missing", []string{"--platform-kubeconfig", "/nonexistent/mgmt.kubeconfig"}, 3, "--platform-kubeconfig"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := kubectl(t, c, append([]string{"fleetdrain", "node", "flags-1"}, tc.args...)...)
			assert.Equal(t, r.ExitCode, tc.code, r)
			assert.Check(t, is.Contains(r.Stderr, tc.want), r)
			assert.Check(t, !unschedulable(t, c, "flags-1"), "nothing may be cordoned")
		})
	}
}
