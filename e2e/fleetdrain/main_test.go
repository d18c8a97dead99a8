//go:build e2e

// Package fleetdrain tests `kubectl fleetdrain` end to end: node drains on a
// tenant cluster whose nodes are kwok nodes (the real scheduler places the
// pods, the real controller manager runs the workload and disruption
// controllers), and cluster drains on a hub running Open Cluster
// Management's own hub components, with spokes joined by their real agents
// (placements decided by the real placement controller, works removed by the
// real ManifestWorkReplicaSet controller and work agents).
package fleetdrain

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/spokekit/spokekit/e2e/harness"
)

var env *harness.Env

// TestMain starts nothing up front: the clusters start when a test first
// needs them, so a run of only the node tests starts no hub.
func TestMain(m *testing.M) {
	os.Exit(harness.Main(m, func(_, _ context.Context, e *harness.Env) (func(), error) {
		env = e
		return nil, nil
	}))
}

// lazyCluster starts a cluster the first time a test needs it, so a run of
// only the benchmark (or only the hub tests) starts nothing else.
type lazyCluster struct {
	once    sync.Once
	cluster *harness.Cluster
	err     error
	name    string
	opts    []harness.ClusterOption
	setup   func(context.Context, *harness.Cluster) error
}

func (l *lazyCluster) get(t testing.TB) *harness.Cluster {
	t.Helper()
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		l.cluster, l.err = env.StartCluster(ctx, l.name, l.opts...)
		if l.err == nil && l.setup != nil {
			l.err = l.setup(ctx, l.cluster)
		}
	})
	assert.NilError(t, l.err)
	return l.cluster
}

// tenant's kwok plays the kubelet of the nodes addNodes annotates only, so
// a test can take a node's kubelet away (unreachable nodes).
var tenant = &lazyCluster{name: "tenant", opts: []harness.ClusterOption{harness.KwokManagesAnnotatedNodesOnly()}}

// fleet is the hub with its OCM components and two joined spokes: spoke-a
// for the drain walk-through, spoke-b for the conformance table.
type fleet struct {
	hub            *harness.OCMHub
	spokeA, spokeB *harness.Cluster
}

var (
	fleetOnce sync.Once
	fleetBed  fleet
	fleetErr  error
)

// hubFleet starts the fleet the first time a test needs it.
func hubFleet(t testing.TB) fleet {
	t.Helper()
	fleetOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), harness.SetupTimeout)
		defer cancel()
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() (err error) { fleetBed.hub, err = env.StartOCMHub(gctx, "hub"); return err })
		g.Go(func() (err error) { fleetBed.spokeA, err = env.StartCluster(gctx, "spoke-a"); return err })
		g.Go(func() (err error) { fleetBed.spokeB, err = env.StartCluster(gctx, "spoke-b"); return err })
		if fleetErr = g.Wait(); fleetErr != nil {
			return
		}
		g, gctx = errgroup.WithContext(ctx)
		g.Go(func() error { return fleetBed.hub.Join(gctx, "spoke-a", fleetBed.spokeA) })
		g.Go(func() error { return fleetBed.hub.Join(gctx, "spoke-b", fleetBed.spokeB) })
		fleetErr = g.Wait()
	})
	assert.NilError(t, fleetErr)
	return fleetBed
}

var (
	extraMu     sync.Mutex
	extraJoined = map[string]error{}
)

// drainBed joins clusters to the hub (their agents share spoke-a's API
// server, so each costs one agent process, not a control plane), puts them
// in their own cluster set bound to namespace set, and gives that namespace
// a placement web with the given spec and an empty ManifestWorkReplicaSet
// over it; it returns once every cluster carries the placement's work.
func drainBed(t *testing.T, set, placementSpec string, clusters ...string) fleet {
	t.Helper()
	f := hubFleet(t)
	extraMu.Lock()
	for _, name := range clusters {
		if _, done := extraJoined[name]; !done {
			extraJoined[name] = f.hub.Join(ctx(t, harness.SetupTimeout), name, f.spokeA)
		}
		err := extraJoined[name]
		if err != nil {
			extraMu.Unlock()
			assert.NilError(t, err)
		}
	}
	extraMu.Unlock()
	assert.NilError(t, f.hub.ApplyYAML(ctx(t, time.Minute), clusterSet(set, set)+`
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: web, namespace: `+set+`}
spec: `+placementSpec+`
---
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata: {name: web, namespace: `+set+`}
spec:
  placementRefs: [{name: web}]
  manifestWorkTemplate: {workload: {manifests: []}}
`))
	for _, name := range clusters {
		joinSet(t, f.hub.Cluster, name, set)
	}
	for _, name := range clusters {
		err := wait.PollUntilContextTimeout(ctx(t, 3*time.Minute), 200*time.Millisecond, 2*time.Minute, true, func(cx context.Context) (bool, error) {
			return workExistsIn(cx, t, f.hub.Cluster, name, "web"), nil
		})
		assert.NilError(t, err, "the placement's work on %s", name)
	}
	waitAppliedApart(t, f.spokeA, "web", len(clusters))
	return f
}

var appliedWorkResource = schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1", Resource: "appliedmanifestworks"}

// waitAppliedApart waits until spoke holds the work of that name applied
// under at least n hub hashes: clusters whose agents share one spoke API
// server must each keep their own AppliedManifestWork, as separate spoke
// clusters would, or one agent's removal of the work deletes what the
// other applied (the harness gives each agent its own hub address).
func waitAppliedApart(t *testing.T, spoke *harness.Cluster, work string, n int) {
	t.Helper()
	hashes := map[string]bool{}
	err := wait.PollUntilContextTimeout(ctx(t, 3*time.Minute), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := spoke.Dynamic.Resource(appliedWorkResource).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		clear(hashes)
		for _, a := range l.Items {
			if name, _, _ := unstructured.NestedString(a.Object, "spec", "manifestWorkName"); name == work {
				hash, _, _ := unstructured.NestedString(a.Object, "spec", "hubHash")
				hashes[hash] = true
			}
		}
		return len(hashes) >= n, nil
	})
	assert.NilError(t, err, "work %s applied under %d hub hashes on the shared spoke, want at least %d", work, len(hashes), n)
}

func ctx(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	return harness.Context(t, d)
}

func kubectl(t testing.TB, c *harness.Cluster, args ...string) harness.Result {
	t.Helper()
	return harness.Kubectl(t, c.For(t.TempDir()), args...)
}
