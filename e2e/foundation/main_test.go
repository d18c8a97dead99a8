//go:build e2e

// Package foundation tests what all three plugins share, end to end: plugin
// discovery through kubectl, version, usage errors, the kubectl global flags
// and shell completion, against two real local clusters.
package foundation

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/spokekit/spokekit/e2e/harness"
)

var (
	env        *harness.Env
	hub, spoke *harness.Cluster
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var err error
	if env, err = harness.NewEnv(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Close()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		if hub, err = env.StartCluster(gctx, "hub"); err != nil {
			return err
		}
		return harness.InstallHubCRDs(gctx, hub)
	})
	g.Go(func() (err error) { spoke, err = env.StartCluster(gctx, "spoke"); return err })
	if err := g.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
