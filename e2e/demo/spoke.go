package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/e2e/standin/fleet"
)

// demoValues is the values file the hub's release is installed from, and
// which the demo keeps in step with it.
var demoValues = `# values of the mural release (comments survive kubectl spoke's edits)
fleetConfig:
  spokes:
  - name: hub-as-spoke   # the hub manages itself
    kubeconfig: {inCluster: true}
    ociRegistry:
      endpoint: oci://registry.example.com/mural
  hub:
    name: hub
applySpokes:
  # kwok runs no pods: the demo plays the job that applies the Spokes
  managedBy: ` + harness.SpokesJobManager + `
`

// demoChart is the test bed's chart (e2e/charts/mural), from the
// repository's root, where make demo runs.
const demoChart = "e2e/charts/mural"

// spokeLifecycle installs the hub's Helm release (hub-as-spoke its one
// spoke), adds both spokes through it, shows them, rotates a credential, and
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
	job, err := d.installRelease(ctx, values)
	if err != nil {
		return err
	}
	// The seed's path: each change is an upgrade of the release with only
	// fleetConfig.spokes changed, and values.yaml edited alike.
	steps := [][]string{
		{"spoke", "add", "spoke-1", "--spoke-kubeconfig", "spoke-1.kubeconfig", "--release", "mural", "--values", values, "--dry-run=client"},
		{"spoke", "add", "spoke-1", "--spoke-kubeconfig", "spoke-1.kubeconfig", "--release", "mural", "--values", values, "--wait"},
		{"spoke", "add", "spoke-2", "--spoke-kubeconfig", "spoke-2.kubeconfig", "--release", "mural", "--values", values, "--wait"},
		{"spoke", "add", "spoke-1", "--spoke-kubeconfig", "spoke-1.kubeconfig", "--release", "mural", "--values", values, "--wait"},
		{"spoke", "list", "-o", "wide"},
		{"spoke", "status", "spoke-2"},
		{"spoke", "set", "spoke-2", "logVerbosity=2"},
		{"spoke", "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", "spoke-1.kubeconfig"},
		{"spoke", "remove", "spoke-2", "--release", "mural", "--values", values, "--wait"},
		{"spoke", "list"},
		{"spoke", "values-diff", "--release", "mural"},
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
	if errs := job.Errors(); len(errs) > 0 {
		return fmt.Errorf("the release's apply-spokes job: %v", errs)
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

// installRelease installs the hub's release, mural, from the demo's values
// file, as helm install would, and plays the job that applies its Spokes
// after each install and upgrade until the demo ends.
func (d *Demo) installRelease(ctx context.Context, values string) (*harness.SpokesJob, error) {
	fmt.Printf("\n$ KUBECONFIG=hub helm install mural %s -n mural-system -f %s   # the demo installs it with the Helm SDK\n", demoChart, values)
	data, err := os.ReadFile(filepath.Join(d.home, values))
	if err != nil {
		return nil, err
	}
	var vals map[string]any
	if err := yaml.Unmarshal(data, &vals); err != nil {
		return nil, err
	}
	job := d.hub.StartSpokesJob(ctx, "mural-system", "mural")
	r, err := d.hub.HelmInstall(ctx, demoChart, "mural-system", "mural", vals)
	if err != nil {
		return nil, err
	}
	fmt.Printf("release mural: revision %d %s\n", r.Version, r.Info.Status)
	return job, nil
}
