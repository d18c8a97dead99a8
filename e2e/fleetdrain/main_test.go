//go:build e2e

// Package fleetdrain tests `kubectl fleetdrain` end to end: node drains on a
// tenant cluster whose nodes are kwok nodes (the real scheduler places the
// pods, the real controller manager runs the workload and disruption
// controllers), and cluster drains on a fleet hub with the placement stand-in.
package fleetdrain

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/spokekit/spokekit/e2e/harness"
)

var env *harness.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = harness.NewEnv(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	env.Close()
	os.Exit(code)
}

// lazyCluster starts a cluster the first time a test needs it, so a run of
// only the benchmark (or only the hub tests) starts nothing else.
type lazyCluster struct {
	once    sync.Once
	cluster *harness.Cluster
	err     error
	name    string
	setup   func(context.Context, *harness.Cluster) error
}

func (l *lazyCluster) get(t testing.TB) *harness.Cluster {
	t.Helper()
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		l.cluster, l.err = env.StartCluster(ctx, l.name)
		if l.err == nil && l.setup != nil {
			l.err = l.setup(ctx, l.cluster)
		}
	})
	assert.NilError(t, l.err)
	return l.cluster
}

var (
	tenant = &lazyCluster{name: "tenant"}
	hub    = &lazyCluster{name: "hub", setup: harness.InstallHubCRDs}
)

func ctx(t testing.TB, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

func kubectl(t testing.TB, c *harness.Cluster, args ...string) harness.Result {
	t.Helper()
	r, err := c.For(t.TempDir()).Kubectl(ctx(t, 5*time.Minute), args...)
	assert.NilError(t, err)
	return r
}
