// Command demo brings up the local environment of the end-to-end tests (a
// fleet hub with two spokes, and a Cluster API platform) and runs the
// plugins on it, printing each command and what it printed.
//
//	demo run               bring up, run every step, tear down (make demo)
//	demo up --workdir D    bring up and run, leave running (make demo-up)
//	demo down --workdir D  tear down what up left (make demo-down)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/spokekit/spokekit/e2e/harness"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: demo run | up --workdir DIR | down --workdir DIR")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	workdir := fs.String("workdir", "", "where the clusters live (up, down)")
	_ = fs.Parse(os.Args[2:])
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	err := run(ctx, os.Args[1], *workdir)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, mode, workdir string) error {
	switch mode {
	case "run":
		env, err := harness.NewEnv()
		if err != nil {
			return err
		}
		defer env.Close()
		return demo(ctx, env, false)
	case "up":
		env, err := harness.OpenEnv(workdir)
		if err != nil {
			return err
		}
		if err := env.DeleteAll(ctx); err != nil {
			return err
		}
		return demo(ctx, env, true)
	case "down":
		env, err := harness.OpenEnv(workdir)
		if err != nil {
			return err
		}
		if err := env.DeleteAll(ctx); err != nil {
			return err
		}
		fmt.Println("demo clusters deleted")
		return os.RemoveAll(workdir)
	}
	return fmt.Errorf("unknown mode %q: use run, up or down", mode)
}

// Demo is the running environment the steps use.
type Demo struct {
	env                      *harness.Env
	hub                      *harness.OCMHub
	spoke1, spoke2, platform *harness.Cluster
	// workload serves the parked cluster's workload API (see park).
	workload *harness.Cluster
	home     string
}

func demo(ctx context.Context, env *harness.Env, keep bool) error {
	home, err := os.MkdirTemp(env.Workdir, "home-")
	if err != nil {
		return err
	}
	d := &Demo{env: env, home: home}
	fmt.Println("==> starting a hub, two spokes, a platform and a workload cluster (kwokctl, binary runtime)")
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { d.hub, err = env.StartOCMHub(gctx, "hub"); return err })
	g.Go(func() (err error) { d.spoke1, err = env.StartCluster(gctx, "spoke-1"); return err })
	g.Go(func() (err error) { d.spoke2, err = env.StartCluster(gctx, "spoke-2"); return err })
	g.Go(func() (err error) { d.platform, err = env.StartCluster(gctx, "platform"); return err })
	g.Go(func() (err error) {
		d.workload, err = env.StartCluster(gctx, "workload", harness.KwokManagesAnnotatedNodesOnly())
		return err
	})
	if err := g.Wait(); err != nil {
		return err
	}
	// The spokes' admin kubeconfigs, as their owners would hand them over.
	for _, c := range []*harness.Cluster{d.spoke1, d.spoke2} {
		data, err := os.ReadFile(c.Kubeconfig)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(home, c.Name+".kubeconfig"), data, 0o600); err != nil {
			return err
		}
	}
	steps := []func(context.Context) error{d.plugins, d.spokeLifecycle, d.fleetdrain, d.park}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
		if err := env.Failures(); err != nil {
			return fmt.Errorf("the demo's test bed failed: %w", err)
		}
	}
	if keep {
		fmt.Println("\n==> the demo clusters keep running; use them with:")
		for _, c := range []*harness.Cluster{d.hub.Cluster, d.spoke1, d.spoke2, d.platform, d.workload} {
			fmt.Printf("  export KUBECONFIG=%s   # %s\n", c.Kubeconfig, c.Name)
		}
		fmt.Printf("  export PATH=%s:$PATH\n", env.Tools.Plugins)
		fmt.Println("  (the Cluster API managers stopped with the demo: the platform keeps its objects, nothing reconciles them)")
		fmt.Println("  (so did the FleetConfig stand-in and the player of the mural release's apply-spokes job: an upgrade of the release waits for that hook until it times out)")
		fmt.Println("  make demo-down   # when done")
	}
	return nil
}

// plugins shows the three plugins found by kubectl.
func (d *Demo) plugins(ctx context.Context) error {
	fmt.Println("\n==> kubectl finds the three plugins")
	if err := d.kubectl(ctx, d.hub.Cluster, "plugin", "list"); err != nil {
		return err
	}
	return d.kubectl(ctx, d.hub.Cluster, "spoke", "version", "--show-server")
}

// kubectl runs and prints one command against cluster c; a non-zero exit fails the demo.
func (d *Demo) kubectl(ctx context.Context, c *harness.Cluster, args ...string) error {
	return d.expect(ctx, c, 0, args...)
}

// expect runs one command against cluster c and requires the given exit
// code. It runs in the demo's home, so the files the demo writes there are
// named as a user in that directory would name them.
func (d *Demo) expect(ctx context.Context, c *harness.Cluster, code int, args ...string) error {
	fmt.Printf("\n$ KUBECONFIG=%s kubectl %s\n", c.Name, strings.Join(args, " "))
	cmd := c.For(d.home)
	r, err := cmd.RunIn(ctx, d.home, filepath.Join(cmd.Tools.Bin, "kubectl"), args...)
	if err != nil {
		return err
	}
	fmt.Print(r.Stdout)
	fmt.Fprint(os.Stdout, r.Stderr)
	if r.ExitCode != code {
		return fmt.Errorf("kubectl %s exited %d, want %d", strings.Join(args, " "), r.ExitCode, code)
	}
	return nil
}
