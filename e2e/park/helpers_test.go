//go:build e2e

package park

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/spokekit/spokekit/e2e/harness"
	capiapi "github.com/spokekit/spokekit/internal/api/capi"
)

var (
	clusters           = capiapi.GVR("v1beta2", capiapi.ClusterResource)
	machines           = capiapi.GVR("v1beta2", capiapi.MachineResource)
	machineSets        = capiapi.GVR("v1beta2", "machinesets")
	machineDeployments = capiapi.GVR("v1beta2", capiapi.MachineDeploymentResource)
)

func ctx(t *testing.T) context.Context {
	t.Helper()
	return harness.Context(t, 6*time.Minute)
}

// kubectl runs the built kubectl (and through it the built plugin) against
// the platform.
func kubectl(t *testing.T, args ...string) harness.Result {
	t.Helper()
	return harness.Kubectl(t, platform.For(t.TempDir()), args...)
}

func getCluster(t *testing.T, name string) *capiapi.Cluster {
	t.Helper()
	u, err := platform.Dynamic.Resource(clusters).Namespace(namespace).Get(ctx(t), name, metav1.GetOptions{})
	assert.NilError(t, err)
	c, err := capiapi.FromUnstructured[capiapi.Cluster](u)
	assert.NilError(t, err)
	return c
}

// clusterMachines lists the cluster's Machines within cx.
func clusterMachines(cx context.Context, t *testing.T, ns, name string) []unstructured.Unstructured {
	t.Helper()
	l, err := platform.Dynamic.Resource(machines).Namespace(ns).List(cx, metav1.ListOptions{LabelSelector: capiapi.ClusterNameLabel + "=" + name})
	assert.NilError(t, err)
	return l.Items
}

// runningWorkerMachines lists the cluster's Running worker Machines: those a
// MachineSet owns, as Cluster API makes them, and not being deleted.
func runningWorkerMachines(cx context.Context, t *testing.T, ns, name string) []unstructured.Unstructured {
	t.Helper()
	var running []unstructured.Unstructured
	for _, m := range clusterMachines(cx, t, ns, name) {
		phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
		if phase == capiapi.MachinePhaseRunning && m.GetDeletionTimestamp() == nil && ownedBy(m, "MachineSet") {
			running = append(running, m)
		}
	}
	return running
}

func runningWorkers(t *testing.T, ns, name string) int {
	t.Helper()
	return len(runningWorkerMachines(ctx(t), t, ns, name))
}

func ownedBy(m unstructured.Unstructured, kind string) bool {
	for _, o := range m.GetOwnerReferences() {
		if o.Kind == kind {
			return true
		}
	}
	return false
}

func waitRunningWorkers(t *testing.T, ns, name string, want int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx(t), time.Second, 5*time.Minute, true, func(cx context.Context) (bool, error) {
		return len(runningWorkerMachines(cx, t, ns, name)) == want, nil
	})
	assert.NilError(t, err, "waiting for %d running workers of %s (have %d)", want, name, runningWorkers(t, ns, name))
}

// createCluster creates a Cluster of the ClusterClass class with one
// control-plane machine and the given worker pools.
func createCluster(t *testing.T, ns, name, class string, pools ...string) {
	t.Helper()
	assert.NilError(t, platform.ApplyYAML(ctx(t), harness.TopologyCluster(ns, name, class, pools...)))
}

// pools reads the topology's pools as "name=replicas autoscaler=min..max".
func pools(c *capiapi.Cluster) []string {
	var out []string
	for _, p := range c.Spec.Topology.Workers.MachineDeployments {
		r := "unset"
		if p.Replicas != nil {
			r = strconv.Itoa(int(*p.Replicas))
		}
		out = append(out, p.Name+"="+r+" autoscaler="+p.Metadata.Annotations[capiapi.AutoscalerMinSizeAnnotation]+".."+p.Metadata.Annotations[capiapi.AutoscalerMaxSizeAnnotation])
	}
	return out
}

// parkWrites counts the plugin's write requests to a Cluster (not its
// status), dry runs left out, from the platform API server's audit log:
// the controllers' own writes to the Cluster are not counted.
func parkWrites(t *testing.T, ns, name string) int {
	t.Helper()
	n, err := platform.Writes(ctx(t), "kubectl-park/", "clusters", ns, name)
	assert.NilError(t, err)
	return n
}

// workloadKubeconfig writes the cluster's admin kubeconfig, as Cluster API
// keeps it in the NAME-kubeconfig Secret, to a file of the test.
func workloadKubeconfig(t *testing.T, name string) string {
	t.Helper()
	s, err := platform.Kube.CoreV1().Secrets(namespace).Get(ctx(t), capiapi.KubeconfigSecretName(name), metav1.GetOptions{})
	assert.NilError(t, err)
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	assert.NilError(t, os.WriteFile(path, s.Data[capiapi.KubeconfigSecretKey], 0o600))
	return path
}

// workloadCommand runs kubectl with kubeconfig alone, in a home of t.
func workloadCommand(t *testing.T, kubeconfig string) harness.Command {
	t.Helper()
	cmd := platform.For(t.TempDir())
	cmd.Env = []string{"KUBECONFIG=" + kubeconfig}
	return cmd
}

// workload runs the built kubectl against a workload cluster.
func workload(t *testing.T, kubeconfig string, args ...string) harness.Result {
	t.Helper()
	r := harness.Kubectl(t, workloadCommand(t, kubeconfig), args...)
	return r
}
