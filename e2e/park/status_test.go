//go:build e2e

package park

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	capiapi "github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/park"
)

// replacements counts the MachineHealthCheck controller's events for a
// cluster's machines.
func replacements(cx context.Context, t *testing.T, ns, prefix string) int {
	t.Helper()
	l, err := platform.Kube.CoreV1().Events(ns).List(cx, metav1.ListOptions{FieldSelector: "reason=" + capiapi.EventMachineMarkedUnhealthy})
	assert.NilError(t, err)
	n := 0
	for _, e := range l.Items {
		if strings.HasPrefix(e.InvolvedObject.Name, prefix) {
			n++
		}
	}
	return n
}

// soleWorker names the cluster's one running worker Machine and its Node,
// from a single listing: between two listings the health check may have
// begun deleting the machine the first one counted.
func soleWorker(cx context.Context, t *testing.T, ns, cluster string) (machine, node string, ok bool) {
	t.Helper()
	running := runningWorkerMachines(cx, t, ns, cluster)
	if len(running) != 1 {
		return "", "", false
	}
	node, _, _ = unstructured.NestedString(running[0].Object, "status", "nodeRef", "name")
	return running[0].GetName(), node, node != ""
}

// workerNode names the Node of the cluster's one running worker Machine.
func workerNode(t *testing.T, cluster string) (machine, node string) {
	t.Helper()
	machine, node, ok := soleWorker(ctx(t), t, namespace, cluster)
	if !ok {
		t.Fatalf("cluster %s has not exactly one running worker with a node", cluster)
	}
	return machine, node
}

func TestStatusFromTheRealHealthCheck(t *testing.T) {
	t.Parallel()
	// The pool overrides the class's health check: a node NotReady for a
	// second is unhealthy.
	createCluster(t, namespace, "flaky", "in-memory", `class: default-worker
name: md-0
replicas: 1
healthCheck:
  checks:
    unhealthyNodeConditions:
    - {type: Ready, status: "False", timeoutSeconds: 1}`)
	assert.NilError(t, platform.KamajiStandIn(ctx(t), namespace, "flaky"))
	waitRunningWorkers(t, namespace, "flaky", 1)
	broken, node := workerNode(t, "flaky")

	// The node turns NotReady in the workload cluster (the simulated API
	// server keeps what it is told; no kubelet reports otherwise).
	since := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	r := workload(t, workloadKubeconfig(t, "flaky"), "patch", "node", node, "--type=merge", "-p",
		`{"status":{"conditions":[{"type":"Ready","status":"False","reason":"KubeletNotReady","message":"e2e","lastHeartbeatTime":"`+since+`","lastTransitionTime":"`+since+`"}]}}`)
	assert.Equal(t, r.ExitCode, 0, r)

	// Cluster API's MachineHealthCheck marks the machine, its MachineSet
	// replaces it, and the Machine controller deletes the broken one with its
	// node (park status must then count no NotReady node).
	err := wait.PollUntilContextTimeout(ctx(t), time.Second, 4*time.Minute, true, func(cx context.Context) (bool, error) {
		if replacements(cx, t, namespace, "flaky-md-0-") == 0 {
			return false, nil
		}
		if m, _, ok := soleWorker(cx, t, namespace, "flaky"); !ok || m == broken {
			return false, nil
		}
		for _, m := range clusterMachines(cx, t, namespace, "flaky") {
			if m.GetName() == broken {
				return false, nil
			}
		}
		return true, nil
	})
	assert.NilError(t, err, "the health check replaces the broken machine, which goes with its node")
	var mhcs *unstructured.UnstructuredList
	err = wait.PollUntilContextTimeout(ctx(t), time.Second, 2*time.Minute, true, func(cx context.Context) (bool, error) {
		mhcs, err = platform.Dynamic.Resource(capiapi.GVR("v1beta2", capiapi.MachineHealthCheckResource)).Namespace(namespace).List(cx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		healthy := false
		for _, h := range mhcs.Items {
			if strings.HasPrefix(h.GetName(), "flaky-md-0-") {
				n, _, _ := unstructured.NestedInt64(h.Object, "status", "currentHealthy")
				healthy = n == 1
			}
		}
		if !healthy {
			return false, nil
		}
		// The pool's own count of ready machines, which park status shows,
		// is another controller's and may come later.
		mds, err := platform.Dynamic.Resource(machineDeployments).Namespace(namespace).List(cx, metav1.ListOptions{
			LabelSelector: "cluster.x-k8s.io/cluster-name=flaky",
		})
		if err != nil || len(mds.Items) != 1 {
			return false, err
		}
		ready, _, _ := unstructured.NestedInt64(mds.Items[0].Object, "status", "readyReplicas")
		return ready == 1, nil
	})
	assert.NilError(t, err, "the health check counts the new machine healthy, and its pool counts it ready")

	r = kubectl(t, "park", "status", "flaky", "-n", namespace)
	assert.Equal(t, r.ExitCode, 0, r)
	for _, want := range []string{
		"Cluster phase: Provisioned", "MachineHealthCheck flaky-md-0-", ": 1 of 1 machines healthy",
		"Control-plane pods: flaky-0 (Running), flaky-1 (Running)", "NotReady nodes: none",
		// The simulated API server serves no CSRs: said, not hidden.
		"Pending CSRs: not available (listing certificate signing requests",
	} {
		assert.Check(t, is.Contains(r.Stdout, want), r)
	}
	assert.Check(t, is.Regexp(`(?m)^\s+md-0\s+MachineDeployment\s+v1\.37\.0\s+1/1\s+1\s+1\s*$`, r.Stdout), "version, ready, updated, one replacement in the window: %s", r)
	assert.Check(t, is.Contains(r.Stdout, "Kubernetes version: v1.37.0"), r)
	assert.Check(t, is.Regexp(`Control plane: KubeadmControlPlane flaky-\S+, 1 machine\(s\)`, r.Stdout), r)
	assert.Check(t, !strings.Contains(r.Stdout+r.Stderr, "client-key-data") && !strings.Contains(r.Stdout+r.Stderr, "BEGIN"), "no credential in output")

	r = kubectl(t, "park", "status", "flaky", "-n", namespace, "-o", "json")
	assert.Equal(t, r.ExitCode, 0, r)
	var report park.StatusReport
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &report), r)
	assert.Equal(t, report.Platform.Pools[0].Replaced, 1, r)

	r = kubectl(t, "park", "status", "flaky", "-n", namespace, "--window", "0s")
	assert.Equal(t, r.ExitCode, 2, r)
	r = kubectl(t, "park", "status", "nope", "-n", namespace)
	assert.Equal(t, r.ExitCode, 3, r)
}

// After resume --wait has said the workers are back, status must not
// contradict it: the platform's health checks count them healthy too. (make
// demo showed "nodes Ready: 6 of 6" and then "0 of 3 machines healthy": the
// MachineHealthCheck had not checked the new machines yet.)
func TestResumeWaitAndStatusAgree(t *testing.T) {
	t.Parallel()
	createCluster(t, namespace, "agree", "in-memory", "{class: default-worker, name: md-0, replicas: 2}")
	waitRunningWorkers(t, namespace, "agree", 2)
	r := kubectl(t, "park", "cluster", "agree", "-n", namespace, "--wait", "--timeout", finishBound)
	assert.Equal(t, r.ExitCode, 0, r)
	r = kubectl(t, "park", "resume", "agree", "-n", namespace, "--wait", "--timeout", finishBound)
	assert.Equal(t, r.ExitCode, 0, r)
	r = kubectl(t, "park", "status", "agree", "-n", namespace)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Regexp(`MachineHealthCheck agree-md-0-\S+: 2 of 2 machines healthy`, r.Stdout), r)
	assert.Check(t, is.Regexp(`(?m)^\s+md-0\s+MachineDeployment\s+v1\.37\.0\s+2/2\s+2\s`, r.Stdout), r)
}
