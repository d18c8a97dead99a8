//go:build e2e

// Package foundation tests what all three plugins share, end to end: plugin
// discovery through kubectl, version, usage errors, the kubectl global flags
// and shell completion, against two real local clusters.
package foundation

import (
	"context"
	"os"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/spokekit/spokekit/e2e/harness"
)

var (
	env        *harness.Env
	hub, spoke *harness.Cluster
)

func TestMain(m *testing.M) {
	os.Exit(harness.Main(m, func(_, start context.Context, e *harness.Env) (func(), error) {
		env = e
		g, gctx := errgroup.WithContext(start)
		g.Go(func() (err error) {
			if hub, err = env.StartCluster(gctx, "hub"); err != nil {
				return err
			}
			return harness.InstallHubCRDs(gctx, hub)
		})
		g.Go(func() (err error) { spoke, err = env.StartCluster(gctx, "spoke"); return err })
		return nil, g.Wait()
	}))
}
