//go:build e2e

package bench

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/spokekit/spokekit/e2e/harness"
)

const (
	parkNamespace = "env-bench"
	parkPools     = 10
)

// tenPoolCluster is a topology Cluster with parkPools worker pools of 2.
func tenPoolCluster(name string) string {
	var pools strings.Builder
	for i := range parkPools {
		fmt.Fprintf(&pools, "      - {class: default-worker, name: md-%d, replicas: 2}\n", i)
	}
	return fmt.Sprintf(`apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: %s, namespace: %s}
spec:
  topology:
    classRef: {name: kubevirt-kubeadm}
    version: v1.34.1
    workers:
      machineDeployments:
%s`, name, parkNamespace, pools.String())
}

// writes counts the API server's write requests, leaving out what other
// components write on their own (leases, events) and access and identity
// reviews (the plugin's preflight and its "who am I" for the record), which
// ask a question and store nothing.
func writes(b *testing.B, c *harness.Cluster, fn func()) float64 {
	b.Helper()
	match := func(verb, resource string) bool {
		switch verb {
		case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
		default:
			return false
		}
		switch resource {
		case "leases", "events", "selfsubjectaccessreviews", "selfsubjectreviews":
			return false
		}
		return true
	}
	before := requests(b, c, match)
	fn()
	return requests(b, c, match) - before
}

// BenchmarkPark parks a Cluster of 10 worker pools and counts its writes
// from the API server's metrics, against the runbook's one `kubectl patch`
// per pool. Cluster API's CRDs on a plain cluster: no controller acts on the
// Cluster, so every write counted is the command's.
func BenchmarkPark(b *testing.B) {
	c, err := env.StartCluster(ctx(b, 10*time.Minute), "bench-platform")
	assert.NilError(b, err)
	assert.NilError(b, c.InstallClusterAPICRDs(ctx(b, 5*time.Minute)))
	assert.NilError(b, c.ApplyYAML(ctx(b, time.Minute), "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+parkNamespace+"}\n"))
	kubectl := filepath.Join(env.Tools.Bin, "kubectl")
	cmd := c.For(b.TempDir())
	run := 0
	fresh := func() string {
		run++
		name := fmt.Sprintf("app-%d", run)
		assert.NilError(b, c.ApplyYAML(ctx(b, time.Minute), tenPoolCluster(name)))
		return name
	}
	var ours, theirs []Usage
	var ourWrites, theirWrites []float64
	alternate(pairs, func(int) {
		name := fresh()
		var u Usage
		ourWrites = append(ourWrites, writes(b, c, func() { u = measure(b, cmd, kubectl, "park", "cluster", name, "-n", parkNamespace) }))
		ours = append(ours, u)
	}, func(int) {
		name := fresh()
		var u Usage
		theirWrites = append(theirWrites, writes(b, c, func() {
			for i := range parkPools {
				patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/topology/workers/machineDeployments/%d/replicas","value":0}]`, i)
				u = u.plus(measure(b, cmd, kubectl, "patch", "cluster.cluster.x-k8s.io", name, "-n", parkNamespace, "--type", "json", "-p", patch))
			}
		}))
		theirs = append(theirs, u)
	})
	for i, w := range ourWrites {
		assert.Check(b, w == 1, "park run %d wrote %v times, want its one JSON patch", i+1, w)
	}
	add(b, "park cluster, 10 worker pools / one kubectl patch per pool", "writes", ourWrites, theirWrites, "exactly 1")
	add(b, "park cluster, 10 worker pools / one kubectl patch per pool", "s", seconds(ours), seconds(theirs), "-")
}

// BenchmarkBulkPark parks ten Clusters by label, all at once, with --wait,
// on the real Cluster API managers (in-memory provider), against one
// Cluster's `park cluster --wait` on the same platform: parking a fleet
// should cost about one cluster's wait, not ten. After each measured run
// the same command family resumes what it parked (not measured), so every
// run starts from running workers.
func BenchmarkBulkPark(b *testing.B) {
	const n, ns, sel = 10, "bench-bulk", "bench-bulk=yes"
	platform, err := env.StartCluster(ctx(b, 10*time.Minute), "bench-capi")
	assert.NilError(b, err)
	_, err = platform.StartClusterAPI(ctx(b, 10*time.Minute))
	assert.NilError(b, err)
	assert.NilError(b, platform.ApplyYAML(ctx(b, time.Minute), "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n"))
	assert.NilError(b, platform.InstallInMemoryClass(ctx(b, time.Minute), ns, "in-memory", nil))
	kubectl := filepath.Join(env.Tools.Bin, "kubectl")
	cmd := platform.For(b.TempDir())
	for i := range n {
		name := fmt.Sprintf("bulk-%d", i)
		assert.NilError(b, platform.ApplyYAML(ctx(b, time.Minute), harness.TopologyCluster(ns, name, "in-memory", "{class: default-worker, name: md-0, replicas: 1}")))
		measure(b, cmd, kubectl, "label", "cluster.cluster.x-k8s.io", name, "-n", ns, sel)
	}
	all := []string{"-l", sel, "-n", ns, "--max-concurrent", fmt.Sprint(n), "--wait", "--timeout", "10m"}
	// resume --wait on running Clusters waits for their workers.
	measure(b, cmd, kubectl, append([]string{"park", "resume"}, all...)...)
	var ours, one, byHand []Usage
	alternate(pairs, func(int) {
		ours = append(ours, measure(b, cmd, kubectl, append([]string{"park", "cluster"}, all...)...))
		measure(b, cmd, kubectl, append([]string{"park", "resume"}, all...)...)
	}, func(int) {
		one = append(one, measure(b, cmd, kubectl, "park", "cluster", "bulk-0", "-n", ns, "--wait", "--timeout", "10m"))
		measure(b, cmd, kubectl, "park", "resume", "bulk-0", "-n", ns, "--wait", "--timeout", "10m")
	}, func(int) {
		byHand = append(byHand, scaleByHand(b, cmd, kubectl, ns, sel, n, 0))
		scaleByHand(b, cmd, kubectl, ns, sel, n, 1)
	})
	add(b, fmt.Sprintf("park cluster -l, %d clusters on Cluster API, --wait / one cluster's park cluster --wait", n), "s", seconds(ours), seconds(one), "≤ 1.5")
	add(b, fmt.Sprintf("park cluster -l, %d clusters on Cluster API, --wait / by hand: kubectl patch each, kubectl wait", n), "s", seconds(ours), seconds(byHand), "—")
}

// scaleByHand is the bulk park (replicas 0) or its undoing (1) the way
// kubectl does it: a patch of each Cluster's worker pool, then kubectl wait
// until, when parking, the worker Machines are gone and the Clusters'
// status counts no workers (the end state park cluster --wait waits for),
// or, when undoing it, counts the worker ready. It measures the platform's own pace, with no plugin in it.
func scaleByHand(b *testing.B, cmd harness.Command, kubectl, ns, sel string, n, replicas int) Usage {
	b.Helper()
	var u Usage
	for i := range n {
		u = u.plus(measure(b, cmd, kubectl, "patch", "cluster.cluster.x-k8s.io", fmt.Sprintf("bulk-%d", i), "-n", ns, "--type=json",
			"-p", fmt.Sprintf(`[{"op":"replace","path":"/spec/topology/workers/machineDeployments/0/replicas","value":%d}]`, replicas)))
	}
	if replicas == 0 {
		u = u.plus(measure(b, cmd, kubectl, "wait", "--for=delete", "machines.cluster.x-k8s.io", "-n", ns, "--timeout=10m",
			"-l", "cluster.x-k8s.io/deployment-name,cluster.x-k8s.io/cluster-name in ("+clusterNames(n)+")"))
	}
	// What park list reads: the workers the status counts, all gone or all ready.
	counter := "readyReplicas"
	if replicas == 0 {
		counter = "replicas"
	}
	return u.plus(measure(b, cmd, kubectl, "wait", "cluster.cluster.x-k8s.io", "-n", ns, "-l", sel, "--timeout=10m",
		fmt.Sprintf("--for=jsonpath={.status.workers.%s}=%d", counter, replicas)))
}

func clusterNames(n int) string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("bulk-%d", i)
	}
	return strings.Join(names, ",")
}
