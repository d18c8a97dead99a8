//go:build e2e

// Package spoke tests `kubectl spoke` end to end: a hub running Open Cluster
// Management's own hub components, two spokes (real kwokctl control planes)
// whose klusterlet agents the fleet stand-in starts, as the FleetConfig
// controller would, behind upstream's validating webhook, and the built
// plugin run through the built kubectl. The tests run once per FleetConfig
// mode, each pass on clusters of its own: addon mode (the chart's default),
// then unified mode; SPOKEKIT_E2E_FLEET_MODE=addon or =unified runs one.
package spoke

import (
	"context"
	"fmt"
	"os"
	"testing"

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
	// mode is the FleetConfig mode of this pass.
	mode fleet.Mode
)

func TestMain(m *testing.M) {
	modes := []fleet.Mode{fleet.ModeAddon, fleet.ModeUnified}
	only, err := fleet.ModeFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if only != "" {
		modes = []fleet.Mode{only}
	}
	code := 0
	for _, mode = range modes {
		fmt.Fprintf(os.Stderr, "=== e2e/spoke: FleetConfig in %s mode\n", mode)
		if c := harness.Main(m, setup); c != 0 {
			fmt.Fprintf(os.Stderr, "=== e2e/spoke: FleetConfig in %s mode: FAIL\n", mode)
			code = c
		}
	}
	os.Exit(code)
}

func setup(run, start context.Context, e *harness.Env) (func(), error) {
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
	var err error
	standin, err = fleet.Run(run, hub, releaseNamespace, fleet.Options{Mode: mode})
	return nil, err
}
