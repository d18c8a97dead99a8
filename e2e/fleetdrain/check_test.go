//go:build e2e

package fleetdrain

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/spokekit/spokekit/e2e/fixture"
)

// checkWorkloads has one workload of each kind of finding on pool check
// (a local PersistentVolume on check-1), and a DaemonSet, whose pods check
// leaves out.
var checkWorkloads = fixture.Docs(
	fixture.Namespace("check"),
	fixture.Workload{Namespace: "check", Name: "guarded", Replicas: 2, Pool: "check"}.YAML(),
	fixture.Budget("check", "strict", "guarded", "minAvailable: 2"),
	fixture.Workload{Namespace: "check", Name: "solo", Replicas: 1, Pool: "check"}.YAML(),
	fixture.Workload{Kind: "StatefulSet", Namespace: "check", Name: "members", Replicas: 3, Pool: "check", Image: "example.com/members", Parallel: true}.YAML(),
	fixture.Workload{Namespace: "check", Name: "cache", Replicas: 2, Pool: "check", Volume: "emptyDir: {}"}.YAML(),
	fixture.Workload{Namespace: "check", Name: "logs", Replicas: 2, Pool: "check", Volume: "hostPath: {path: /var/lib/logs}"}.YAML(),
	`apiVersion: v1
kind: PersistentVolume
metadata: {name: check-local}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: check-local
  local: {path: /mnt/disks/check}
  nodeAffinity:
    required:
      nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [check-1]}]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: ledger, namespace: check}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: check-local
  volumeName: check-local
  resources: {requests: {storage: 1Gi}}`,
	fixture.Workload{Namespace: "check", Name: "ledger", Replicas: 2, Pool: "check", Volume: "persistentVolumeClaim: {claimName: ledger}"}.YAML(),
	fixture.Pod("check", "lonely", "check"),
	fixture.Workload{Kind: "DaemonSet", Namespace: "check", Name: "agent", Pool: "check", Image: "busybox", Volume: "hostPath: {path: /}"}.YAML(),
)

// checkReport is the part of check's -o json report the test reads.
type checkReport struct {
	Kind  string   `json:"kind"`
	Nodes []string `json:"nodes"`
	Items []struct {
		Severity, Reason, Object string
		Metadata                 struct{ Namespace string }
		Nodes, Pods              []string
	} `json:"items"`
	Skipped []string `json:"skipped"`
}

// TestCheckFindsEachKindOfFinding runs check on a pool holding one
// workload of each kind of finding, as the real controllers run it: the
// disruption controller's budget status, the scheduler's placement by the
// local volume's node affinity.
func TestCheckFindsEachKindOfFinding(t *testing.T) {
	c := tenant.get(t)
	addNodes(t, c, "check", "check-1", "check-2")
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), checkWorkloads))
	for _, app := range []string{"guarded", "solo", "members", "cache", "logs", "ledger", "lonely", "agent"} {
		want := map[string]int{"guarded": 2, "members": 3, "cache": 2, "logs": 2, "ledger": 2, "agent": 2}[app]
		if want == 0 {
			want = 1
		}
		waitPods(t, c, "check", "app="+app, app+" ready", func(r map[string]int) bool { return total(r) == want })
	}
	waitBudget(t, c, "check", "strict", 0)

	r := kubectl(t, c, "fleetdrain", "check", "-l", "pool=check", "-o", "json")
	assert.Equal(t, r.ExitCode, 3, r)
	var rep checkReport
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &rep), r)
	assert.Check(t, is.DeepEqual(rep.Nodes, []string{"check-1", "check-2"}))
	got := map[string]string{}
	for _, it := range rep.Items {
		assert.Check(t, is.Equal(it.Metadata.Namespace, "check"), "only pool check's pods count: %+v", it)
		got[it.Reason+" "+it.Object] = it.Severity
	}
	assert.Check(t, is.DeepEqual(got, map[string]string{
		"BudgetAllowsNoDisruption poddisruptionbudget.policy/strict": "Blocks",
		"SingleReplica deployment.apps/solo":                         "Disrupts",
		"QuorumWithoutBudget statefulset.apps/members":               "Disrupts",
		"EmptyDir deployment.apps/cache":                             "LosesData",
		"HostPath deployment.apps/logs":                              "LosesData",
		"LocalVolume deployment.apps/ledger":                         "LosesData",
		"NoController pod/lonely":                                    "LosesData",
	}), r)
	assert.Check(t, is.Len(rep.Skipped, 2), "the DaemonSet's pods are left out: %v", rep.Skipped)
	for _, want := range []string{"poddisruptionbudget.policy/strict in check", "pod/lonely in check", "deployment.apps/ledger in check"} {
		assert.Check(t, is.Contains(r.Stderr, want), "exit 3 names each finding that blocks or loses data")
	}

	// The table, wide: the pods of each finding; the left-out pods noted.
	r = kubectl(t, c, "fleetdrain", "check", "check-1", "check-2", "-o", "wide", "--allow-emptydir")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stdout, "check/lonely"), r)
	assert.Check(t, is.Contains(r.Stderr, "Left out: 2 DaemonSet"), r)
	assert.Check(t, !strings.Contains(r.Stderr, "deployment.apps/cache in check"), "--allow-emptydir: emptyDir is a note")

	// A drain of the node refused for the unmanaged pod points to check.
	r = kubectl(t, c, "fleetdrain", "node", "check-1", "check-2", "--ignore-daemonsets", "--dry-run=client")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "kubectl fleetdrain check check-"), r)

	// Bad input is refused before any request, as fleetdrain node refuses it.
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"check-1", "-l", "pool=check"}, 2, "not both"},
		{[]string{"-l", "pool in ("}, 2, "invalid --selector"},
		{[]string{"no-such-node"}, 3, `node "no-such-node" not found`},
		{[]string{"-l", "pool=none"}, 3, "no node matches"},
	} {
		r := kubectl(t, c, append([]string{"fleetdrain", "check"}, tc.args...)...)
		assert.Check(t, is.Equal(r.ExitCode, tc.code), r)
		assert.Check(t, is.Contains(r.Stderr, tc.want), r)
	}
}

// A pool whose workloads ride out a replacement: exit 0, nothing listed.
func TestCheckClearPool(t *testing.T) {
	c := tenant.get(t)
	addNodes(t, c, "check-clear", "check-clear-1")
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), fixture.Docs(
		fixture.Namespace("check-clear"),
		fixture.Workload{Namespace: "check-clear", Name: "web", Replicas: 2, Pool: "check-clear"}.YAML(),
		fixture.Budget("check-clear", "web", "web", "maxUnavailable: 1"),
	)))
	waitPods(t, c, "check-clear", "app=web", "web ready", func(r map[string]int) bool { return total(r) == 2 })
	waitBudget(t, c, "check-clear", "web", 1)
	r := kubectl(t, c, "fleetdrain", "check", "check-clear-1")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Equal(r.Stdout, ""), r)
	assert.Check(t, is.Contains(r.Stderr, "Nothing would block a replacement of 1 node(s) or lose data"), r)
}

// csiVolume is a CSI PersistentVolume of driver whose node affinity
// requires key=value, and a claim of namespace check-csi bound to it.
func csiVolume(name, driver, key, value, access string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: %[1]s}
spec:
  capacity: {storage: 1Gi}
  accessModes: [%[5]s]
  storageClassName: %[1]s
  csi: {driver: %[2]s, volumeHandle: %[1]s, fsType: xfs}
  nodeAffinity:
    required:
      nodeSelectorTerms: [{matchExpressions: [{key: %[3]s, operator: In, values: [%[4]s]}]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %[1]s, namespace: check-csi}
spec:
  accessModes: [%[5]s]
  storageClassName: %[1]s
  volumeName: %[1]s
  resources: {requests: {storage: 1Gi}}`, name, driver, key, value, access)
}

// TestCheckFindsNodeLocalCSIVolumes: volumes as TopoLVM and OpenEBS
// LocalPV (LVM) provision them, pinned to a node by the label their node
// plugins give it, keep their data on that node, and check says so (it
// said "Nothing would ... lose data" and exited 0); a zonal volume does not.
// The real scheduler places each workload by its volume's node affinity.
func TestCheckFindsNodeLocalCSIVolumes(t *testing.T) {
	c := tenant.get(t)
	nodes := []string{"check-csi-1", "check-csi-2"}
	addNodes(t, c, "check-csi", nodes...)
	for _, n := range nodes {
		labels := fmt.Sprintf(`{"metadata":{"labels":{"topology.topolvm.io/node":%q,"openebs.io/nodename":%q,"topology.kubernetes.io/zone":"check-zone"}}}`, n, n)
		_, err := c.Kube.CoreV1().Nodes().Patch(ctx(t, time.Minute), n, types.MergePatchType, []byte(labels), metav1.PatchOptions{})
		assert.NilError(t, err)
	}
	claim := func(name string) string { return "persistentVolumeClaim: {claimName: " + name + "}" }
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), fixture.Docs(
		fixture.Namespace("check-csi"),
		csiVolume("csi-topolvm", "topolvm.io", "topology.topolvm.io/node", "check-csi-1", "ReadWriteOnce"),
		csiVolume("csi-openebs", "local.csi.openebs.io", "openebs.io/nodename", "check-csi-2", "ReadWriteOnce"),
		csiVolume("csi-zonal", "ebs.csi.aws.com", "topology.kubernetes.io/zone", "check-zone", "ReadWriteMany"),
		fixture.Workload{Namespace: "check-csi", Name: "topolvm", Replicas: 2, Pool: "check-csi", Volume: claim("csi-topolvm")}.YAML(),
		fixture.Workload{Namespace: "check-csi", Name: "openebs", Replicas: 2, Pool: "check-csi", Volume: claim("csi-openebs")}.YAML(),
		fixture.Workload{Namespace: "check-csi", Name: "zonal", Replicas: 2, Pool: "check-csi", Volume: claim("csi-zonal")}.YAML(),
	)))
	for app, node := range map[string]string{"topolvm": "check-csi-1", "openebs": "check-csi-2", "zonal": ""} {
		waitPods(t, c, "check-csi", "app="+app, app+" ready", func(r map[string]int) bool { return total(r) == 2 && (node == "" || r[node] == 2) })
	}

	r := kubectl(t, c, "fleetdrain", "check", "-l", "pool=check-csi", "-o", "json")
	assert.Equal(t, r.ExitCode, 3, r)
	var rep checkReport
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &rep), r)
	got := map[string]string{}
	for _, it := range rep.Items {
		got[it.Reason+" "+it.Object] = it.Severity + " " + strings.Join(it.Nodes, ",")
	}
	assert.Check(t, is.DeepEqual(got, map[string]string{
		"LocalVolume deployment.apps/topolvm": "LosesData check-csi-1",
		"LocalVolume deployment.apps/openebs": "LosesData check-csi-2",
	}), r)
	assert.Check(t, is.Contains(r.Stderr, "deployment.apps/topolvm in check-csi (LocalVolume)"), r)

	// Only the node a volume is pinned to loses it.
	r = kubectl(t, c, "fleetdrain", "check", "check-csi-2")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stdout, "csi-openebs (local.csi.openebs.io, pinned to check-csi-2 by openebs.io/nodename)"), r)
	assert.Check(t, !strings.Contains(r.Stdout, "topolvm"), r)
}
