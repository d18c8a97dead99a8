//go:build e2e

package bench

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/e2e/harness"
)

// healthKinds are the kinds `kubectl spoke health` lists in its hub view.
var healthKinds = []string{"spokes", "managedclusters", "leases", "managedclusteraddons", "secrets"}

// BenchmarkSpokeHealth compares the hub view of `kubectl spoke health`
// with `kubectl get` of the same kinds, one after the other: the Spokes and
// ManagedClusters, the clusters' leases, their add-ons and the release
// namespace's Secrets (the stored kubeconfigs), on a hub with 2,000 Spokes
// and as many ManagedClusters (no controllers: nothing changes while it runs).
func BenchmarkSpokeHealth(b *testing.B) {
	const n = 2000
	hub, err := env.StartCluster(ctx(b, 10*time.Minute), "bench-health-hub")
	assert.NilError(b, err)
	assert.NilError(b, harness.InstallHubCRDs(ctx(b, 5*time.Minute), hub))
	_, err = hub.Kube.CoreV1().Namespaces().Create(ctx(b, time.Minute), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: listNamespace}}, metav1.CreateOptions{})
	assert.NilError(b, err)
	createSpokes(b, hub, 0, n)
	c := hub.For(b.TempDir())
	kubectl := func(args ...string) Usage { return measure(b, c, filepath.Join(env.Tools.Bin, "kubectl"), args...) }
	// The unaccepted spokes are unhealthy: exit 1 is the command's answer.
	plugin := func() Usage {
		return measureExit(b, c, 1, filepath.Join(env.Tools.Bin, "kubectl"), "spoke", "health", "-n", listNamespace)
	}
	getAll := func() Usage {
		return kubectl("get", "spokes.fleetconfig.open-cluster-management.io", "-n", listNamespace).
			plus(kubectl("get", "managedclusters")).
			plus(kubectl("get", "leases", "-A", "--field-selector", "metadata.name=managed-cluster-lease")).
			plus(kubectl("get", "managedclusteraddons", "-A")).
			plus(kubectl("get", "secrets", "-n", listNamespace))
	}
	plugin()
	getAll()
	lists := func(fn func()) float64 {
		match := func(verb, resource string) bool { return verb == "LIST" && slices.Contains(healthKinds, resource) }
		before := requests(b, hub, match)
		fn()
		return requests(b, hub, match) - before
	}
	ourLists, theirLists := lists(func() { plugin() }), lists(func() { getAll() })
	var ours, theirs []Usage
	alternate(pairs, func(int) { ours = append(ours, plugin()) }, func(int) { theirs = append(theirs, getAll()) })
	what := fmt.Sprintf("spoke health, %d spokes, hub view", n)
	add(what, "s", seconds(ours), seconds(theirs), "≤ 0.6")
	add(what+", peak memory", "MB", megabytes(ours), megabytes(theirs), "≤ 100 MB")
	add(what+", LIST requests", "all five kinds", []float64{ourLists}, []float64{theirLists}, fmt.Sprintf("one per page: %d", 2*((n+499)/500)+3))
}
