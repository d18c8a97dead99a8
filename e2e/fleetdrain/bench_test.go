//go:build e2e

package fleetdrain

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"gotest.tools/v3/assert"

	"github.com/spokekit/spokekit/e2e/harness"
)

// benchPods spreads 200 pods evenly over the schedulable nodes of a pool, so
// four nodes hold 50 each and evicted pods go to the spare nodes.
const benchPods = `
apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: load, namespace: %[1]s}
spec:
  replicas: 200
  selector: {matchLabels: {app: load}}
  template:
    metadata: {labels: {app: load}}
    spec:
      nodeSelector: {pool: %[1]s}
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, nodeTaintsPolicy: Honor, labelSelector: {matchLabels: {app: load}}}
      containers: [{name: load, image: nginx}]
`

// benchSetup makes pool on c: four nodes with 50 pods each, and four empty
// spare nodes; it returns the four loaded nodes.
func benchSetup(b *testing.B, c *harness.Cluster, pool string) []string {
	var loaded, spare []string
	for i := 1; i <= 4; i++ {
		loaded = append(loaded, fmt.Sprintf("%s-%d", pool, i))
		spare = append(spare, fmt.Sprintf("%s-spare-%d", pool, i))
	}
	addNodes(b, c, pool, loaded...)
	assert.NilError(b, c.ApplyYAML(ctx(b, time.Minute), fmt.Sprintf(benchPods, pool)))
	waitPods(b, c, pool, "", "50 pods ready on each node", func(r map[string]int) bool {
		for _, n := range loaded {
			if r[n] != 50 {
				return false
			}
		}
		return true
	})
	addNodes(b, c, pool, spare...)
	return loaded
}

// BenchmarkDrainFourNodes drains 4 nodes x 50 pods with
// `fleetdrain node --max-concurrent 4`, and the same nodes of an identical
// cluster with `kubectl drain` one after another, and reports how many times
// faster the first is.
func BenchmarkDrainFourNodes(b *testing.B) {
	var ours, theirs *harness.Cluster
	g, gctx := errgroup.WithContext(ctx(b, 5*time.Minute))
	g.Go(func() (err error) { ours, err = env.StartCluster(gctx, "bench-fleetdrain"); return err })
	g.Go(func() (err error) { theirs, err = env.StartCluster(gctx, "bench-kubectl"); return err })
	assert.NilError(b, g.Wait())

	var fleetdrainTime, kubectlTime time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		pool := fmt.Sprintf("bench%d", i)
		ourNodes := benchSetup(b, ours, pool)
		theirNodes := benchSetup(b, theirs, pool)

		start := time.Now()
		for _, n := range theirNodes {
			r := kubectl(b, theirs, "drain", n, "--ignore-daemonsets")
			assert.Equal(b, r.ExitCode, 0, r)
		}
		kubectlTime += time.Since(start)

		b.StartTimer()
		start = time.Now()
		r := kubectl(b, ours, append([]string{"fleetdrain", "node", "--ignore-daemonsets", "--max-concurrent", "4"}, ourNodes...)...)
		fleetdrainTime += time.Since(start)
		b.StopTimer()
		assert.Equal(b, r.ExitCode, 0, r)
	}
	n := float64(b.N)
	b.ReportMetric(fleetdrainTime.Seconds()/n, "fleetdrain-s/op")
	b.ReportMetric(kubectlTime.Seconds()/n, "kubectl-drain-s/op")
	b.ReportMetric(kubectlTime.Seconds()/fleetdrainTime.Seconds(), "speedup")
	b.Logf("4 nodes x 50 pods: fleetdrain --max-concurrent 4 %s, kubectl drain one node after another %s, ratio %.2f",
		fleetdrainTime/time.Duration(b.N), kubectlTime/time.Duration(b.N), kubectlTime.Seconds()/fleetdrainTime.Seconds())
}
