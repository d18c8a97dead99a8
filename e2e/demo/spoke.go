package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spokekit/spokekit/e2e/standin/fleet"
)

// demoValues is the release's values file the demo edits.
const demoValues = `# values of the mural release (comments survive kubectl spoke's edits)
fleetConfig:
  spokes:
  - name: hub-as-spoke   # the hub manages itself
    kubeconfig: {inCluster: true}
    ociRegistry:
      endpoint: oci://registry.example.com/mural
  hub:
    name: hub
`

// spokeLifecycle adds both spokes, shows them, rotates a credential, and
// removes one gracefully: OCM's hub components and agents do the work, a
// stand-in plays the FleetConfig controller. spoke-1 stays joined.
func (d *Demo) spokeLifecycle(ctx context.Context) error {
	fmt.Println("\n==> kubectl spoke: the spoke lifecycle on the hub (OCM's own components; a stand-in plays the FleetConfig controller)")
	if err := fleet.InstallRelease(ctx, d.hub.Config, "mural-system", "mural"); err != nil {
		return err
	}
	fleet.Start(ctx, d.hub, "mural-system", fleet.UpstreamPace().Scaled(fleet.FastScale))
	// The commands run in the demo's home and name its files as a user in
	// that directory would.
	const values, garbage = "values.yaml", "not-a-kubeconfig"
	if err := os.WriteFile(filepath.Join(d.home, values), []byte(demoValues), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d.home, garbage), []byte("hello"), 0o600); err != nil {
		return err
	}
	steps := [][]string{
		{"spoke", "add", "spoke-1", "--spoke-kubeconfig", "spoke-1.kubeconfig", "--values", values, "--dry-run=client"},
		{"spoke", "add", "spoke-1", "--spoke-kubeconfig", "spoke-1.kubeconfig", "--values", values, "--apply", "--wait"},
		{"spoke", "add", "spoke-2", "--spoke-kubeconfig", "spoke-2.kubeconfig", "--values", values, "--apply", "--wait"},
		{"spoke", "add", "spoke-1", "--spoke-kubeconfig", "spoke-1.kubeconfig", "--values", values, "--apply", "--wait"},
		{"spoke", "list", "-o", "wide"},
		{"spoke", "status", "spoke-2"},
		{"spoke", "set", "spoke-2", "logVerbosity=2"},
		{"spoke", "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", "spoke-1.kubeconfig"},
		{"spoke", "remove", "spoke-2", "--values", values, "--wait"},
		{"spoke", "list"},
	}
	for _, args := range steps {
		if err := d.kubectl(ctx, d.hub.Cluster, args...); err != nil {
			return err
		}
		if args[1] == "add" && strings.Contains(strings.Join(args, " "), "spoke-2") {
			data, _ := os.ReadFile(filepath.Join(d.home, values))
			fmt.Printf("\n$ cat values.yaml\n%s", data)
		}
	}
	refused := [][]string{
		{"spoke", "add", "spoke-3", "--spoke-kubeconfig", garbage},
		{"spoke", "set", "spoke-1", "hubRef.name=other"},
		{"spoke", "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", "spoke-2.kubeconfig"},
		{"spoke", "force-remove", "spoke-1", "--yes"},
	}
	for _, args := range refused {
		if err := d.expect(ctx, d.hub.Cluster, 3, args...); err != nil {
			return err
		}
	}
	return nil
}
