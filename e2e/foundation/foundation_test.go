//go:build e2e

package foundation

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/e2e/harness"
)

var plugins = []string{"spoke", "fleetdrain", "park"}

func ctx(t *testing.T) context.Context {
	t.Helper()
	return harness.Context(t, 2*time.Minute)
}

var kubectl = harness.Kubectl

func TestPluginListFindsAllThree(t *testing.T) {
	r := kubectl(t, hub.For(t.TempDir()), "plugin", "list", "--name-only")
	assert.Equal(t, r.ExitCode, 0, r)
	for _, p := range plugins {
		assert.Check(t, is.Contains(r.Stdout, "kubectl-"+p+"\n"), r)
	}
}

func TestVersionThroughKubectl(t *testing.T) {
	for _, p := range plugins {
		r := kubectl(t, hub.For(t.TempDir()), p, "version", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		var v struct{ Kind, Plugin, Version, Commit, BuildDate string }
		assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &v), r)
		assert.Equal(t, v.Kind, "Version")
		assert.Equal(t, v.Plugin, p)
		// make build stamps the commit and date; "unknown" means the ldflags missed.
		assert.Check(t, v.Commit != "unknown" && v.BuildDate != "unknown", r)

		r = kubectl(t, hub.For(t.TempDir()), p, "--help")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, "kubectl "+p+" [command]"), "help must read as a kubectl command")
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	cases := [][]string{
		{"spoke", "no-such-command"},
		{"park", "version", "--no-such-flag"},
		{"fleetdrain", "version", "-o", "xml"},
		{"spoke", "version", "extra-argument"},
	}
	for _, args := range cases {
		r := kubectl(t, hub.For(t.TempDir()), args...)
		assert.Equal(t, r.ExitCode, 2, "%v: %s", args, r)
		assert.Check(t, is.Contains(r.Stderr, "error: "), r)
		assert.Check(t, is.Contains(r.Stderr, "--help' for usage"), r)
		assert.Equal(t, strings.Count(r.Stderr, "error: "), 1, "the error is printed once: %s", r)
	}
}

// serverURL runs `version --show-server` with the given environment and flags
// and returns the API server it reached.
func serverURL(t *testing.T, c harness.Command, flags ...string) string {
	t.Helper()
	r := kubectl(t, c, append([]string{"spoke", "version", "--show-server", "-o", "json"}, flags...)...)
	assert.Equal(t, r.ExitCode, 0, r)
	var v struct{ Server struct{ URL, Version string } }
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &v), r)
	assert.Equal(t, v.Server.Version, "v1.37.2")
	return v.Server.URL
}

func TestGlobalFlagsReachTheRightCluster(t *testing.T) {
	home := t.TempDir()
	none := harness.Command{Tools: env.Tools, Home: home, Env: []string{"KUBECONFIG=" + filepath.Join(home, "absent")}}

	t.Run("--kubeconfig", func(t *testing.T) {
		assert.Equal(t, serverURL(t, none, "--kubeconfig", hub.Kubeconfig), hub.Config.Host)
		assert.Equal(t, serverURL(t, none, "--kubeconfig", spoke.Kubeconfig), spoke.Config.Host)
	})

	merged := harness.Command{
		Tools: env.Tools, Home: home,
		Env: []string{"KUBECONFIG=" + hub.Kubeconfig + string(os.PathListSeparator) + spoke.Kubeconfig},
	}
	t.Run("two-file KUBECONFIG uses the first file's current context", func(t *testing.T) {
		assert.Equal(t, serverURL(t, merged), hub.Config.Host)
	})
	t.Run("--context selects a context from the second file", func(t *testing.T) {
		assert.Equal(t, serverURL(t, merged, "--context", spoke.Context()), spoke.Config.Host)
	})
	t.Run("--context that does not exist fails", func(t *testing.T) {
		r := kubectl(t, merged, "spoke", "version", "--show-server", "--context", "nope")
		assert.Equal(t, r.ExitCode, 1, r)
		assert.Check(t, is.Contains(r.Stderr, `context "nope" does not exist`), r)
	})
}

func TestCompletionThroughKubectl(t *testing.T) {
	c := hub.For(t.TempDir())
	r := kubectl(t, c, "__complete", "spoke", "vers")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "version"), r)

	r = kubectl(t, c, "__complete", "park", "version", "-o", "")
	assert.Check(t, is.Contains(r.Stdout, "json\n"), r)
	assert.Check(t, is.Contains(r.Stdout, "yaml\n"), r)

	r = kubectl(t, c, "__complete", "fleetdrain", "version", "--context", "")
	assert.Check(t, is.Contains(r.Stdout, hub.Context()), r)

	r = kubectl(t, c, "__complete", "spoke", "version", "-n", "")
	assert.Check(t, is.Contains(r.Stdout, "kube-system"), "namespaces come from the cluster: %s", r)
}

// The Spoke and Hub CRDs are generated from internal/api/fleetconfig; a
// change to the types without `make generate` fails here.
func TestGeneratedCRDsAreUpToDate(t *testing.T) {
	root, err := harness.RepoRoot()
	assert.NilError(t, err)
	out := t.TempDir()
	goBin, err := exec.LookPath("go")
	assert.NilError(t, err, "controller-gen loads packages with the go command")
	c := harness.Command{Tools: env.Tools, Home: t.TempDir(), Env: append(os.Environ(), "PATH="+env.Tools.Path()+string(os.PathListSeparator)+filepath.Dir(goBin))}
	r, err := c.RunIn(ctx(t), root, filepath.Join(env.Tools.Bin, "controller-gen"), "crd", "paths=./internal/api/fleetconfig/...", "output:crd:dir="+out)
	assert.NilError(t, err)
	assert.Equal(t, r.ExitCode, 0, r)
	for _, name := range []string{"fleetconfig.open-cluster-management.io_spokes.yaml", "fleetconfig.open-cluster-management.io_hubs.yaml"} {
		want, err := os.ReadFile(filepath.Join(out, name))
		assert.NilError(t, err)
		got, err := os.ReadFile(filepath.Join(root, "internal", "api", "crds", name))
		assert.NilError(t, err)
		assert.Check(t, bytes.Equal(got, want), "internal/api/crds/%s is stale: run `make generate`", name)
	}
}
