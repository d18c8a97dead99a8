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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/spokekit/spokekit/e2e/harness"
	standin "github.com/spokekit/spokekit/e2e/standin/capi"
	capiapi "github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/park"
)

var (
	clusters = capiapi.GVR("v1beta2", capiapi.ClusterResource)
	machines = capiapi.GVR("v1beta2", capiapi.MachineResource)
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	return c
}

func kubectl(t *testing.T, args ...string) harness.Result {
	t.Helper()
	r, err := platform.For(t.TempDir()).Kubectl(ctx(t), args...)
	assert.NilError(t, err)
	return r
}

func getCluster(t *testing.T, name string) *capiapi.Cluster {
	t.Helper()
	u, err := platform.Dynamic.Resource(clusters).Namespace(namespace).Get(ctx(t), name, metav1.GetOptions{})
	assert.NilError(t, err)
	c, err := capiapi.FromUnstructured[capiapi.Cluster](u)
	assert.NilError(t, err)
	return c
}

// runningMachines counts the cluster's Running machines.
func runningMachines(t *testing.T, name string) int {
	l, err := platform.Dynamic.Resource(machines).Namespace(namespace).List(ctx(t), metav1.ListOptions{LabelSelector: capiapi.ClusterNameLabel + "=" + name})
	assert.NilError(t, err)
	n := 0
	for _, m := range l.Items {
		if phase, _, _ := unstructured.NestedString(m.Object, "status", "phase"); phase == capiapi.MachinePhaseRunning {
			n++
		}
	}
	return n
}

func waitRunning(t *testing.T, name string, want int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx(t), 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return runningMachines(t, name) == want, nil
	})
	assert.NilError(t, err, "waiting for %d running machines of %s (have %d)", want, name, runningMachines(t, name))
}

func createCluster(t *testing.T, name string) {
	t.Helper()
	capi.AddTenant(name, tenant)
	assert.NilError(t, platform.ApplyYAML(ctx(t), standin.ThreePoolCluster(namespace, name)))
}

func replicas(c *capiapi.Cluster) []string {
	var out []string
	for _, p := range append(append([]capiapi.WorkerPool{}, c.Spec.Topology.Workers.MachineDeployments...), c.Spec.Topology.Workers.MachinePools...) {
		r := "unset"
		if p.Replicas != nil {
			r = strings.TrimSpace(string(rune('0' + *p.Replicas)))
		}
		out = append(out, p.Name+"="+r+" autoscaler="+p.Metadata.Annotations[capiapi.AutoscalerMinSizeAnnotation]+".."+p.Metadata.Annotations[capiapi.AutoscalerMaxSizeAnnotation])
	}
	return out
}

func TestParkAndResumeThreePools(t *testing.T) {
	createCluster(t, "app")
	waitRunning(t, "app", 6)
	_, err := tenant.Kube.CoreV1().PersistentVolumeClaims("default").Create(ctx(t), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}}},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	running := []string{"md-0=3 autoscaler=..", "md-1=2 autoscaler=..", "auto=unset autoscaler=1..5"}
	assert.DeepEqual(t, replicas(getCluster(t, "app")), running)

	t.Run("dry run prints the patch and changes nothing", func(t *testing.T) {
		// The stand-in keeps updating the status; the spec changes bump the generation.
		before := getCluster(t, "app")
		r := kubectl(t, "park", "cluster", "app", "-n", namespace, "--dry-run=client", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		var plan park.ParkPlan
		assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &plan), r)
		assert.Equal(t, len(plan.Changes), 3)
		assert.Check(t, len(plan.Patch) > 0)
		assert.Equal(t, getCluster(t, "app").Generation, before.Generation)

		r = kubectl(t, "park", "cluster", "app", "-n", namespace, "--dry-run=server")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, "JSON patch"), r)
		assert.Equal(t, getCluster(t, "app").Generation, before.Generation)
	})

	t.Run("a change between read and write is not overwritten", func(t *testing.T) {
		r := kubectl(t, "park", "cluster", "app", "-n", namespace, "--dry-run=client", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		var plan park.ParkPlan
		assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &plan), r)
		// Someone scales md-1 after park read the cluster...
		_, err := platform.Dynamic.Resource(clusters).Namespace(namespace).Patch(ctx(t), "app", types.JSONPatchType,
			[]byte(`[{"op":"replace","path":"/spec/topology/workers/machineDeployments/1/replicas","value":4}]`), metav1.PatchOptions{})
		assert.NilError(t, err)
		// ...so the patch park planned from the older read fails as a whole.
		data, err := plan.Patch.JSON()
		assert.NilError(t, err)
		r = kubectl(t, "patch", "cluster.cluster.x-k8s.io", "app", "-n", namespace, "--type=json", "-p", string(data))
		assert.Check(t, r.ExitCode != 0, r)
		assert.DeepEqual(t, replicas(getCluster(t, "app")), []string{"md-0=3 autoscaler=..", "md-1=4 autoscaler=..", "auto=unset autoscaler=1..5"})
		waitRunning(t, "app", 8)
	})

	var record string
	t.Run("park sets every pool to zero in one write and waits for the machines", func(t *testing.T) {
		before := getCluster(t, "app")
		r := kubectl(t, "park", "cluster", "app", "-n", namespace, "--wait", "--timeout", "2m")
		assert.Equal(t, r.ExitCode, 0, r)
		after := getCluster(t, "app")
		assert.Equal(t, after.Generation, before.Generation+1, "one write")
		assert.DeepEqual(t, replicas(after), []string{"md-0=0 autoscaler=..", "md-1=0 autoscaler=..", "auto=0 autoscaler=.."})
		record = after.Annotations[park.RecordAnnotation]
		rec, err := park.ParseRecord(record)
		assert.NilError(t, err)
		assert.Equal(t, *rec.Pools[1].Replicas, int32(4), "the concurrent change is what was recorded")
		assert.Check(t, rec.ParkedBy != "" && rec.ParkedBy != "unknown", rec.ParkedBy)
		assert.Equal(t, runningMachines(t, "app"), 0)
		for _, want := range []string{"Survives", "control plane: 2 pod(s)", "default/data 5Gi", "Goes", "8 worker machine(s)"} {
			assert.Check(t, is.Contains(r.Stdout, want), r)
		}
	})

	t.Run("parking twice changes nothing and keeps the first record", func(t *testing.T) {
		before := getCluster(t, "app")
		r := kubectl(t, "park", "cluster", "app", "-n", namespace)
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, "already parked"), r)
		after := getCluster(t, "app")
		assert.Equal(t, after.Generation, before.Generation)
		assert.Equal(t, after.Annotations[park.RecordAnnotation], record)
	})

	t.Run("list shows the parked cluster and its record", func(t *testing.T) {
		r := kubectl(t, "park", "list", "-n", namespace)
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Regexp(`(?m)^app\s+Parked\s+0/0\s+\S+\s+md-0=3,md-1=4,auto=1\.\.5\s*$`, r.Stdout), r)
		r = kubectl(t, "park", "list", "-A", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		var l park.ClusterList
		assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &l), r)
		assert.Check(t, len(l.Items) > 0)
	})

	t.Run("resume restores exactly what was recorded", func(t *testing.T) {
		before := getCluster(t, "app")
		r := kubectl(t, "park", "resume", "app", "-n", namespace, "--wait", "--timeout", "2m")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stderr, "all 8 worker(s) running"), r)
		assert.Check(t, is.Contains(r.Stderr, "nodes of app: nodes Ready: 8 of 8"), "the wait ends on Ready nodes: %s", r)
		after := getCluster(t, "app")
		assert.Equal(t, after.Generation, before.Generation+1, "one write")
		assert.DeepEqual(t, replicas(after), []string{"md-0=3 autoscaler=..", "md-1=4 autoscaler=..", "auto=unset autoscaler=1..5"})
		_, recorded := after.Annotations[park.RecordAnnotation]
		assert.Check(t, !recorded, "the record is removed")
		assert.Equal(t, runningMachines(t, "app"), 8)
		// Nodes turn Ready (kwok) shortly after they join; list then says Running.
		running := regexp.MustCompile(`(?m)^app\s+Running\s+8/8\s`)
		err := wait.PollUntilContextTimeout(ctx(t), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			r = kubectl(t, "park", "list", "-n", namespace)
			return running.MatchString(r.Stdout), nil
		})
		assert.NilError(t, err, r)
	})

	t.Run("resuming a running cluster changes nothing", func(t *testing.T) {
		before := getCluster(t, "app")
		r := kubectl(t, "park", "resume", "app", "-n", namespace, "-o", "yaml")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, "kind: ResumePlan"), r)
		assert.Equal(t, getCluster(t, "app").Generation, before.Generation)
	})
}

func TestRefusalsChangeNothing(t *testing.T) {
	assert.NilError(t, platform.ApplyYAML(ctx(t), `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: bare
  namespace: `+namespace+`
spec:
  paused: false
`))
	createCluster(t, "hand")
	_, err := platform.Dynamic.Resource(clusters).Namespace(namespace).Patch(ctx(t), "hand", types.JSONPatchType, []byte(`[
		{"op":"replace","path":"/spec/topology/workers/machineDeployments/0/replicas","value":0},
		{"op":"replace","path":"/spec/topology/workers/machineDeployments/1/replicas","value":0},
		{"op":"remove","path":"/spec/topology/workers/machinePools"}]`), metav1.PatchOptions{})
	assert.NilError(t, err)

	cases := []struct {
		name    string
		cluster string
		args    []string
		code    int
		want    string
	}{
		{"missing cluster", "nope", []string{"park", "cluster", "nope"}, 3, `cluster "nope" not found`},
		{"no topology", "bare", []string{"park", "cluster", "bare"}, 3, "no spec.topology"},
		{"control plane", "hand", []string{"park", "cluster", "hand", "--control-plane"}, 3, "control plane of cluster hand cannot be parked"},
		{"parked by hand without --replicas", "hand", []string{"park", "resume", "hand"}, 3, "--replicas N"},
		{"zero replicas", "hand", []string{"park", "resume", "hand", "--replicas", "0"}, 2, "--replicas must be at least 1"},
		{"negative timeout", "hand", []string{"park", "cluster", "hand", "--timeout", "-1s"}, 2, "--timeout must not be negative"},
		{"two names", "hand", []string{"park", "cluster", "hand", "bare"}, 2, "exactly 1 argument"},
		{"bad output", "hand", []string{"park", "cluster", "hand", "-o", "xml"}, 2, "xml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before int64
			if tc.cluster != "nope" {
				before = getCluster(t, tc.cluster).Generation
			}
			r := kubectl(t, append(tc.args, "-n", namespace)...)
			assert.Equal(t, r.ExitCode, tc.code, r)
			assert.Check(t, is.Contains(r.Stderr, tc.want), r)
			if tc.cluster != "nope" {
				assert.Equal(t, getCluster(t, tc.cluster).Generation, before, "nothing changed")
			}
		})
	}

	t.Run("a cluster parked by hand resumes with --replicas", func(t *testing.T) {
		// The change is made, the wait runs out at once: exit 4.
		r := kubectl(t, "park", "resume", "hand", "-n", namespace, "--replicas", "1", "--wait", "--timeout", "1ms")
		assert.Equal(t, r.ExitCode, 4, r)
		assert.Check(t, is.Contains(r.Stderr, "timed out"), r)
		// Running it again finishes the job.
		r = kubectl(t, "park", "resume", "hand", "-n", namespace, "--replicas", "1", "--wait", "--timeout", "2m")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.DeepEqual(t, replicas(getCluster(t, "hand")), []string{"md-0=1 autoscaler=..", "md-1=1 autoscaler=.."})
	})
}
