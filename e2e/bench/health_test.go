//go:build e2e

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
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
// and as many ManagedClusters, then 10,000 (no controllers: nothing changes
// while it runs).
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
	add(b, what, "s", seconds(ours), seconds(theirs), "≤ 0.6")
	add(b, what+", peak memory", "MB", megabytes(ours), megabytes(theirs), "≤ 100 MB")
	add(b, what+", LIST requests", "all five kinds", []float64{ourLists}, []float64{theirLists}, fmt.Sprintf("one per page: %d", 2*((n+499)/500)+3))

	// Five times the fleet: the table is built from pages, so memory must
	// not grow with it the way a whole list held at once would.
	const big = 10000
	createSpokes(b, hub, n, big)
	ours, theirs = nil, nil
	alternate(pairs, func(int) { ours = append(ours, plugin()) }, func(int) { theirs = append(theirs, getAll()) })
	what = fmt.Sprintf("spoke health, %d spokes, hub view", big)
	add(b, what, "s", seconds(ours), seconds(theirs), "—")
	add(b, what+", peak memory", "MB", megabytes(ours), megabytes(theirs), "≤ 100 MB")
}

// BenchmarkSpokeHealthDeep compares `kubectl spoke health --deep
// --max-concurrent 16` over 200 spokes spread over four local clusters (50
// Spokes each, reached through their stored kubeconfigs) with the least a
// script would do to reach every spoke: a loop of `kubectl get nodes`, one
// per spoke with its kubeconfig.
func BenchmarkSpokeHealthDeep(b *testing.B) {
	const clusters, perCluster = 4, 50
	var hub *harness.Cluster
	members := make([]*harness.Cluster, clusters)
	g, gctx := errgroup.WithContext(ctx(b, 10*time.Minute))
	g.Go(func() (err error) { hub, err = env.StartCluster(gctx, "bench-deep-hub"); return err })
	for i := range members {
		g.Go(func() (err error) {
			members[i], err = env.StartCluster(gctx, fmt.Sprintf("bench-deep-%d", i))
			return err
		})
	}
	assert.NilError(b, g.Wait())
	assert.NilError(b, harness.InstallHubCRDs(ctx(b, 5*time.Minute), hub))
	_, err := hub.Kube.CoreV1().Namespaces().Create(ctx(b, time.Minute), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: listNamespace}}, metav1.CreateOptions{})
	assert.NilError(b, err)
	var names []string
	kubeconfigOf := map[string]string{}
	for i, m := range members {
		data, err := os.ReadFile(m.Kubeconfig)
		assert.NilError(b, err)
		for j := range perCluster {
			name := fmt.Sprintf("deep-%d-%02d", i, j)
			sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: listNamespace}, Data: map[string][]byte{"kubeconfig": data}}
			_, err := hub.Kube.CoreV1().Secrets(listNamespace).Create(ctx(b, time.Minute), sec, metav1.CreateOptions{})
			assert.NilError(b, err)
			names = append(names, name)
			kubeconfigOf[name] = m.Kubeconfig
		}
	}
	assert.NilError(b, harness.CreateUnacceptedSpokes(ctx(b, 5*time.Minute), hub, listNamespace, listNamespace, names, nil))
	c := hub.For(b.TempDir())
	kubectl := filepath.Join(env.Tools.Bin, "kubectl")
	// The unaccepted spokes are unhealthy: exit 1 is the command's answer.
	plugin := func() Usage {
		return measureExit(b, c, 1, kubectl, "spoke", "health", "-n", listNamespace, "--deep", "--max-concurrent", "16")
	}
	loop := func() Usage {
		var u Usage
		for _, name := range names {
			u = u.plus(measure(b, c, kubectl, "get", "nodes", "--kubeconfig", kubeconfigOf[name]))
		}
		return u
	}
	plugin()
	var ours, theirs []Usage
	alternate(pairs, func(int) { ours = append(ours, plugin()) }, func(int) { theirs = append(theirs, loop()) })
	what := fmt.Sprintf("spoke health --deep, %d spokes over %d clusters, --max-concurrent 16 / a kubectl get nodes per spoke", clusters*perCluster, clusters)
	add(b, what, "s", seconds(ours), seconds(theirs), "≤ 0.15")
}
