//go:build e2e

package park

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/spokekit/spokekit/e2e/harness"
	capiapi "github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/park"
)

const autoscaled = `class: default-worker
name: auto
metadata:
  annotations:
    cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size: "1"
    cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size: "5"`

func TestParkAndResumeThreePools(t *testing.T) {
	t.Parallel()
	createCluster(t, namespace, "app", "in-memory",
		"{class: default-worker, name: md-0, replicas: 3}",
		"{class: default-worker, name: md-1, replicas: 2}",
		autoscaled)
	assert.NilError(t, platform.KamajiStandIn(ctx(t), namespace, "app"))
	// The autoscaled pool starts at its minimum (Cluster API's defaulting).
	waitRunningWorkers(t, namespace, "app", 6)
	assert.DeepEqual(t, pools(getCluster(t, "app")), []string{"md-0=3 autoscaler=..", "md-1=2 autoscaler=..", "auto=unset autoscaler=1..5"})

	t.Run("the real topology controller made MachineDeployments with MachineSets owning the Machines", func(t *testing.T) {
		mds, err := platform.Dynamic.Resource(machineDeployments).Namespace(namespace).List(ctx(t), metav1.ListOptions{LabelSelector: capiapi.ClusterNameLabel + "=app"})
		assert.NilError(t, err)
		assert.Equal(t, len(mds.Items), 3)
		for _, md := range mds.Items {
			// Named after the cluster and the pool, with a random suffix.
			assert.Check(t, is.Regexp(`^app-(md-0|md-1|auto)-[a-z0-9]+$`, md.GetName()))
		}
		for _, m := range clusterMachines(ctx(t), t, namespace, "app") {
			assert.Check(t, ownedBy(m, "MachineSet") || ownedBy(m, "KubeadmControlPlane"), m.GetName())
		}
	})

	t.Run("dry run prints the patch and changes nothing", func(t *testing.T) {
		before := parkWrites(t, namespace, "app")
		r := kubectl(t, "park", "cluster", "app", "-n", namespace, "--dry-run=client", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		var plan park.ParkPlan
		assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &plan), r)
		assert.Equal(t, len(plan.Changes), 3)
		assert.Check(t, len(plan.Patch) > 0)

		// The server dry run goes through Cluster API's webhooks.
		r = kubectl(t, "park", "cluster", "app", "-n", namespace, "--dry-run=server")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, "JSON patch"), r)
		assert.Equal(t, parkWrites(t, namespace, "app"), before, "no write")
	})

	t.Run("the topology webhook refuses replicas together with autoscaler annotations", func(t *testing.T) {
		r := kubectl(t, "patch", "cluster.cluster.x-k8s.io", "app", "-n", namespace, "--type=json",
			"-p", `[{"op":"add","path":"/spec/topology/workers/machineDeployments/2/replicas","value":0}]`)
		assert.Check(t, r.ExitCode != 0, r)
		assert.Check(t, is.Contains(r.Stderr, "if the same MachineDeploymentTopology has autoscaler annotations"), r)
	})

	var record string
	t.Run("park writes the Cluster once; Cluster API scales every pool to zero", func(t *testing.T) {
		before := parkWrites(t, namespace, "app")
		machinesBefore := clusterMachines(ctx(t), t, namespace, "app")
		r := kubectl(t, "park", "cluster", "app", "-n", namespace, "--wait", "--timeout", finishBound)
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Equal(t, parkWrites(t, namespace, "app"), before+1, "one write to the Cluster, counted by the API server")
		after := getCluster(t, "app")
		assert.DeepEqual(t, pools(after), []string{"md-0=0 autoscaler=..", "md-1=0 autoscaler=..", "auto=0 autoscaler=.."})
		record = after.Annotations[park.RecordAnnotation]
		rec, err := park.ParseRecord(record)
		assert.NilError(t, err)
		assert.Equal(t, *rec.Pools[1].Replicas, int32(2))
		assert.Check(t, rec.ParkedBy != "" && rec.ParkedBy != "unknown", rec.ParkedBy)
		assert.Equal(t, runningWorkers(t, "app"), 0)
		// The MachineSets scaled to zero deleted the Machines; the control
		// plane's machine stays.
		left := clusterMachines(ctx(t), t, namespace, "app")
		assert.Equal(t, len(left), 1)
		assert.Check(t, ownedBy(left[0], "KubeadmControlPlane"))
		sets, err := platform.Dynamic.Resource(machineSets).Namespace(namespace).List(ctx(t), metav1.ListOptions{LabelSelector: capiapi.ClusterNameLabel + "=app"})
		assert.NilError(t, err)
		for _, s := range sets.Items {
			n, _, _ := unstructured.NestedInt64(s.Object, "spec", "replicas")
			assert.Equal(t, n, int64(0), s.GetName())
		}
		for _, want := range []string{"Survives", "control plane: 2 pod(s)", "Goes", "6 worker machine(s)"} {
			assert.Check(t, is.Contains(r.Stdout, want), r)
		}
		for _, m := range machinesBefore {
			if ownedBy(m, "MachineSet") {
				assert.Check(t, is.Contains(r.Stdout, m.GetName()), r)
			}
		}
		// The simulated workload API server serves no PersistentVolumeClaims;
		// park says it could not read them (drain_test.go shows them on a
		// kwok workload cluster).
		assert.Check(t, is.Contains(r.Stdout, "could not be read"), r)
		assert.Check(t, is.Contains(r.Stderr, "cluster app: Parked: its status counts no workers"), r)

		// The wait ended when the platform agreed: list says Parked at once.
		r = kubectl(t, "park", "list", "-n", namespace)
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Regexp(`(?m)^app\s+Parked\s+0/0\s+\S+\s+md-0=3,md-1=2,auto=1\.\.5\s*$`, r.Stdout), r)
	})

	t.Run("parking twice changes nothing and keeps the first record", func(t *testing.T) {
		before := parkWrites(t, namespace, "app")
		r := kubectl(t, "park", "cluster", "app", "-n", namespace)
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, "already parked"), r)
		assert.Equal(t, parkWrites(t, namespace, "app"), before)
		assert.Equal(t, getCluster(t, "app").Annotations[park.RecordAnnotation], record)
	})

	t.Run("resume restores exactly what was recorded, through the real controllers", func(t *testing.T) {
		before := parkWrites(t, namespace, "app")
		r := kubectl(t, "park", "resume", "app", "-n", namespace, "--wait", "--timeout", finishBound)
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Equal(t, parkWrites(t, namespace, "app"), before+1, "one write")
		assert.Check(t, is.Contains(r.Stderr, "machines provisioning"), r)
		assert.Check(t, is.Contains(r.Stderr, "all 6 worker(s) running"), r)
		assert.Check(t, is.Contains(r.Stderr, "nodes of app: nodes Ready: 6 of 6"), "the wait ends on Ready nodes: %s", r)
		after := getCluster(t, "app")
		assert.DeepEqual(t, pools(after), []string{"md-0=3 autoscaler=..", "md-1=2 autoscaler=..", "auto=unset autoscaler=1..5"})
		_, recorded := after.Annotations[park.RecordAnnotation]
		assert.Check(t, !recorded, "the record is removed")
		assert.Equal(t, runningWorkers(t, "app"), 6)
		// The nodes joined the workload cluster and are Ready there.
		// (The simulated API server serves no table columns: read the condition.)
		nodes := workload(t, workloadKubeconfig(t, "app"), "get", "nodes",
			"-o", `jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
		assert.Equal(t, nodes.ExitCode, 0, nodes)
		assert.Equal(t, strings.Count(nodes.Stdout, "=True\n"), 7, nodes)
		running := regexp.MustCompile(`(?m)^app\s+Running\s+6/6\s`)
		err := wait.PollUntilContextTimeout(ctx(t), time.Second, 2*time.Minute, true, func(cx context.Context) (bool, error) {
			var err error
			if r, err = platform.For(t.TempDir()).Kubectl(cx, "park", "list", "-n", namespace); err != nil {
				return false, err
			}
			return running.MatchString(r.Stdout), nil
		})
		assert.NilError(t, err, r)
	})

	t.Run("resuming a running cluster changes nothing", func(t *testing.T) {
		before := parkWrites(t, namespace, "app")
		r := kubectl(t, "park", "resume", "app", "-n", namespace, "-o", "yaml")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, "kind: ResumePlan"), r)
		assert.Equal(t, parkWrites(t, namespace, "app"), before)
	})
}

// TestClassAutoscaledPoolIsRefused: when the ClusterClass gives a worker
// class the autoscaler annotations, Cluster API's webhook refuses replicas
// on every pool of that class, so no patch can park it; park says so before
// writing anything.
func TestClassAutoscaledPoolIsRefused(t *testing.T) {
	t.Parallel()
	assert.NilError(t, platform.InstallInMemoryClass(ctx(t), otherNS, "in-memory-autoscaled", map[string]string{
		capiapi.AutoscalerMinSizeAnnotation: "1", capiapi.AutoscalerMaxSizeAnnotation: "3",
	}))
	createCluster(t, otherNS, "scaled", "in-memory-autoscaled", "{class: default-worker, name: md-0}")
	waitRunningWorkers(t, otherNS, "scaled", 1)

	before := parkWrites(t, otherNS, "scaled")
	r := kubectl(t, "park", "cluster", "scaled", "-n", otherNS)
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "ClusterClass in-memory-autoscaled gives pool(s) md-0 (class default-worker) the cluster autoscaler's min/max annotations"), r)
	assert.Equal(t, parkWrites(t, otherNS, "scaled"), before, "nothing written")
	// The webhook refuses exactly what park would have had to send.
	r = kubectl(t, "patch", "cluster.cluster.x-k8s.io", "scaled", "-n", otherNS, "--type=json",
		"-p", `[{"op":"add","path":"/spec/topology/workers/machineDeployments/0/replicas","value":0}]`)
	assert.Check(t, r.ExitCode != 0, r)
	assert.Check(t, is.Contains(r.Stderr, `if the source class "default-worker" of this MachineDeploymentTopology has autoscaler annotations`), r)

	t.Run("list -A shows the clusters of every namespace", func(t *testing.T) {
		r := kubectl(t, "park", "list", "-A")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Regexp(`(?m)^dynamo-dev\s+scaled\s`, r.Stdout), r)
		assert.Check(t, is.Regexp(`(?m)^dynamo-prod\s+\S+\s`, r.Stdout), r)
		r = kubectl(t, "park", "list", "-A", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		var l park.ClusterList
		assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &l), r)
		namespaces := map[string]bool{}
		for _, item := range l.Items {
			namespaces[item.Metadata.Namespace] = true
		}
		assert.Check(t, namespaces[namespace] && namespaces[otherNS], r)

		// -l and --no-headers as kubectl get takes them; -o name feeds kubectl.
		r = kubectl(t, "label", "cluster.cluster.x-k8s.io", "scaled", "-n", otherNS, "e2e-park-list=picked")
		assert.Equal(t, r.ExitCode, 0, r)
		r = kubectl(t, "park", "list", "-A", "-l", "e2e-park-list=picked", "--no-headers")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Regexp(`^dynamo-dev\s+scaled\s+\S+[^\n]*\n$`, r.Stdout), r)
		r = kubectl(t, "park", "list", "-A", "-l", "e2e-park-list=picked", "-o", "name")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Equal(t, r.Stdout, "cluster.cluster.x-k8s.io/scaled\n", r)
		got := kubectl(t, "get", "-n", otherNS, strings.TrimSpace(r.Stdout), "-o", "name")
		assert.Equal(t, got.Stdout, r.Stdout, got)
	})
}

// Another writer scales a pool between park's read of the Cluster and its
// patch (the fault proxy makes the edit just before the plugin's PATCH
// reaches the API server): the patch's test of the resourceVersion fails,
// park reads again and records the other writer's size, not its own stale one.
func TestParkRacesAConcurrentEdit(t *testing.T) {
	t.Parallel()
	createCluster(t, namespace, "raced", "in-memory",
		"{class: default-worker, name: md-0, replicas: 1}",
		"{class: default-worker, name: md-1, replicas: 1}")
	edit := func() {
		_, err := platform.Dynamic.Resource(clusters).Namespace(namespace).Patch(ctx(t), "raced", types.JSONPatchType,
			[]byte(`[{"op":"replace","path":"/spec/topology/workers/machineDeployments/1/replicas","value":2}]`), metav1.PatchOptions{})
		assert.Check(t, err)
	}
	p := platform.WithFault(ctx(t), t, &harness.Fault{Method: "PATCH", PathContains: "/clusters/raced", Action: harness.Interleave, Interleave: edit})
	r := harness.Kubectl(t, p.For(t.TempDir()), "park", "cluster", "raced", "-n", namespace)
	assert.Equal(t, r.ExitCode, 0, r)
	c := getCluster(t, "raced")
	assert.DeepEqual(t, pools(c), []string{"md-0=0 autoscaler=..", "md-1=0 autoscaler=.."})
	rec, err := park.ParseRecord(c.Annotations[park.RecordAnnotation])
	assert.NilError(t, err)
	assert.Equal(t, *rec.Pools[0].Replicas, int32(1))
	assert.Equal(t, *rec.Pools[1].Replicas, int32(2), "the other writer's size is recorded, not overwritten")
	// Cluster API's own controllers may bump the resourceVersion again while
	// park re-plans, which costs another refused patch; at least the refused
	// one and the re-planned one are there.
	n := parkWrites(t, namespace, "raced")
	assert.Check(t, n >= 2, "want the refused patch and the one re-planned, got %d write(s)", n)
}

func TestRefusalsChangeNothing(t *testing.T) {
	t.Parallel()
	createCluster(t, namespace, "hand", "in-memory",
		"{class: default-worker, name: md-0, replicas: 1}",
		"{class: default-worker, name: md-1, replicas: 1}")
	_, err := platform.Dynamic.Resource(clusters).Namespace(namespace).Patch(ctx(t), "hand", types.JSONPatchType, []byte(`[
		{"op":"replace","path":"/spec/topology/workers/machineDeployments/0/replicas","value":0},
		{"op":"replace","path":"/spec/topology/workers/machineDeployments/1/replicas","value":0}]`), metav1.PatchOptions{})
	assert.NilError(t, err)

	cases := []struct {
		name    string
		cluster string
		args    []string
		code    int
		want    string
	}{
		{"missing cluster", "nope", []string{"park", "cluster", "nope"}, 3, `cluster "nope" not found`},
		{"control plane", "hand", []string{"park", "cluster", "hand", "--control-plane"}, 3, "control plane of cluster hand cannot be parked"},
		{"parked by hand without --replicas", "hand", []string{"park", "resume", "hand"}, 3, "--replicas N"},
		{"zero replicas", "hand", []string{"park", "resume", "hand", "--replicas", "0"}, 2, "--replicas must be at least 1"},
		{"negative timeout", "hand", []string{"park", "cluster", "hand", "--timeout", "-1s"}, 2, "--timeout must not be negative"},
		{"two names", "hand", []string{"park", "cluster", "hand", "other"}, 2, "exactly 1 argument"},
		{"bad output", "hand", []string{"park", "cluster", "hand", "-o", "xml"}, 2, "xml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := parkWrites(t, namespace, tc.cluster)
			r := kubectl(t, append(tc.args, "-n", namespace)...)
			assert.Equal(t, r.ExitCode, tc.code, r)
			assert.Check(t, is.Contains(r.Stderr, tc.want), r)
			assert.Equal(t, parkWrites(t, namespace, tc.cluster), before, "nothing changed")
		})
	}

	t.Run("a cluster parked by hand resumes with --replicas", func(t *testing.T) {
		// The cluster's first start is not what the test measures: the
		// --timeout below is for the workers.
		waitControlPlaneAvailable(t, namespace, "hand")
		// The change is made, the wait runs out at once: exit 4.
		r := kubectl(t, "park", "resume", "hand", "-n", namespace, "--replicas", "1", "--wait", "--timeout", "1ms")
		assert.Equal(t, r.ExitCode, 4, r)
		assert.Check(t, is.Contains(r.Stderr, "timed out"), r)
		// Running it again finishes the job.
		r = kubectl(t, "park", "resume", "hand", "-n", namespace, "--replicas", "1", "--wait", "--timeout", finishBound)
		assert.Equal(t, r.ExitCode, 0, r)
		assert.DeepEqual(t, pools(getCluster(t, "hand")), []string{"md-0=1 autoscaler=..", "md-1=1 autoscaler=.."})
		assert.Equal(t, runningWorkers(t, "hand"), 2)
	})
}
