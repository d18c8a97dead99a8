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
	l, err := listMachines(cx, ns, name)
	assert.NilError(t, err)
	return l
}

func listMachines(cx context.Context, ns, name string) ([]unstructured.Unstructured, error) {
	l, err := platform.Dynamic.Resource(machines).Namespace(ns).List(cx, metav1.ListOptions{LabelSelector: capiapi.ClusterNameLabel + "=" + name})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// runningWorkerMachines lists the cluster's Running worker Machines: those a
// MachineSet owns, as Cluster API makes them, and not being deleted.
func runningWorkerMachines(cx context.Context, t *testing.T, ns, name string) []unstructured.Unstructured {
	t.Helper()
	return runningWorkerMachinesOf(clusterMachines(cx, t, ns, name))
}

func runningWorkerMachinesOf(ms []unstructured.Unstructured) []unstructured.Unstructured {
	var running []unstructured.Unstructured
	for _, m := range ms {
		phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
		if phase == capiapi.MachinePhaseRunning && m.GetDeletionTimestamp() == nil && ownedBy(m, "MachineSet") {
			running = append(running, m)
		}
	}
	return running
}

// runningWorkers counts the Running workers of a cluster of namespace.
func runningWorkers(t *testing.T, name string) int {
	t.Helper()
	return len(runningWorkerMachines(ctx(t), t, namespace, name))
}

func ownedBy(m unstructured.Unstructured, kind string) bool {
	for _, o := range m.GetOwnerReferences() {
		if o.Kind == kind {
			return true
		}
	}
	return false
}

// finishBound is the --timeout of a wait the test expects to finish
// (exit 0, or an exit that comes from a check, not from the clock). Only a
// failing run waits it out, so it is generous: in a CI run on a loaded
// 2-core machine, bringing back six workers took more than 4 minutes, and
// a health check replaced a machine that was slow to report.
const finishBound = "10m"

// waitRunningWorkers waits, within harness.SetupTimeout, until the cluster has want
// Running workers. A list that fails (a stalled API server) is tried again.
func waitRunningWorkers(t *testing.T, ns, name string, want int) {
	t.Helper()
	have := 0
	err := wait.PollUntilContextTimeout(harness.Context(t, harness.SetupTimeout), time.Second, harness.SetupTimeout, true, func(cx context.Context) (bool, error) {
		ms, err := listMachines(cx, ns, name)
		if err != nil {
			return false, nil
		}
		have = len(runningWorkerMachinesOf(ms))
		return have == want, nil
	})
	assert.NilError(t, err, "waiting for %d running workers of %s (have %d)", want, name, have)
}

// waitControlPlaneAvailable waits, within harness.SetupTimeout, until the Cluster
// says its control plane is available.
func waitControlPlaneAvailable(t *testing.T, ns, name string) {
	t.Helper()
	state := "not read"
	err := wait.PollUntilContextTimeout(harness.Context(t, harness.SetupTimeout), time.Second, harness.SetupTimeout, true, func(cx context.Context) (bool, error) {
		u, err := platform.Dynamic.Resource(clusters).Namespace(ns).Get(cx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		c, err := capiapi.FromUnstructured[capiapi.Cluster](u)
		if err != nil {
			return false, err
		}
		cond := c.Status.Condition(capiapi.ClusterControlPlaneAvailableCondition)
		if cond == nil {
			return false, nil
		}
		state = string(cond.Status) + " " + cond.Reason
		return cond.Status == metav1.ConditionTrue, nil
	})
	assert.NilError(t, err, "waiting for the control plane of %s to be available (last: %s)", name, state)
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
