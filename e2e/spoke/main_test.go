//go:build e2e

// Package spoke tests `kubectl spoke` end to end: a hub running Open Cluster
// Management's own hub components, two spokes (real kwokctl control planes)
// whose klusterlet agents the fleet stand-in starts, as the FleetConfig
// controller would, and the built plugin run through the built kubectl.
package spoke

import (
	"context"
	"os"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/e2e/standin/fleet"
)

// releaseNamespace is where the fleet's Hub, Spokes and secrets live.
const releaseNamespace = "mural-system"

var (
	env            *harness.Env
	hub            *harness.OCMHub
	spoke1, spoke2 *harness.Cluster
	standin        *fleet.Fleet
)

func TestMain(m *testing.M) {
	os.Exit(harness.Main(m, func(run, start context.Context, e *harness.Env) (func(), error) {
		env = e
		g, gctx := errgroup.WithContext(start)
		g.Go(func() (err error) {
			if hub, err = env.StartOCMHub(gctx, "hub", harness.AuditWrites()); err != nil {
				return err
			}
			return fleet.InstallRelease(gctx, hub.Config, releaseNamespace, "mural")
		})
		g.Go(func() (err error) { spoke1, err = env.StartCluster(gctx, "spoke-1"); return err })
		g.Go(func() (err error) { spoke2, err = env.StartCluster(gctx, "spoke-2"); return err })
		if err := g.Wait(); err != nil {
			return nil, err
		}
		standin = fleet.Start(run, hub, releaseNamespace, 300*time.Millisecond)
		return nil, nil
	}))
}
