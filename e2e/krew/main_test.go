//go:build e2e

// Package krew installs the release archives with the real krew, as a user
// would: from a manifest and a downloaded archive, and from a custom plugin
// index served on 127.0.0.1. No cluster is needed.
package krew

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spokekit/spokekit/e2e/harness"
)

// version is what the test release is called; the plugins report it.
const version = "v0.0.0-e2e"

// checksums is the release's sha256 file, as `sha256sum -c` reads it.
const checksums = "spokekit_" + version + "_checksums.txt"

var plugins = []string{"spoke", "fleetdrain", "park"}

var (
	tools harness.Tools
	// served is the directory behind server: the release archives under
	// releases/, their krew manifests under manifests/ and two krew indexes
	// (git repositories) spokekit.git and default.git.
	served string
	server *httptest.Server
	// requests lists the paths the server was asked for.
	requests sync.Map
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := harness.NewEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Close()
	tools = env.Tools
	for _, name := range []string{"kubectl-krew", "validate-krew-manifest", "goreleaser"} {
		if _, err := os.Stat(filepath.Join(tools.Bin, name)); err != nil {
			fmt.Fprintf(os.Stderr, "tool %s missing (run `make e2e-tools`): %v\n", name, err)
			return 1
		}
	}

	served = filepath.Join(env.Workdir, "served")
	files := http.FileServer(http.Dir(served))
	// httptest listens on 127.0.0.1 only.
	server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Store(r.URL.Path, true)
		files.ServeHTTP(w, r)
	}))
	defer server.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := publishRelease(ctx, env.Workdir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// publishRelease does what a release of spokekit does: `make dist` (GoReleaser)
// for linux/amd64 with the archives' URLs on the local server, then puts the
// archives and checksums on the server and publishes the manifests in a krew
// index, plus an empty index that stands in for krew's default one.
func publishRelease(ctx context.Context, workdir string) error {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return fmt.Errorf("finding the checkout: %w", err)
	}
	if err := setup(ctx, root, "make", "dist", "VERSION="+version, "PLATFORMS=linux/amd64", "TOOLS_BIN="+tools.Bin,
		"KREW_MANIFESTS="+filepath.Join(served, "manifests"), "RELEASE_URL="+server.URL+"/releases"); err != nil {
		return err
	}
	// GoReleaser writes into the checkout's _output/dist: the files a release
	// uploads are its archives and checksums.
	dist := filepath.Join(root, "_output", "dist")
	uploads, err := filepath.Glob(filepath.Join(dist, "*.tar.gz"))
	if err != nil {
		return fmt.Errorf("listing the archives in %s: %w", dist, err)
	}
	uploads = append(uploads, filepath.Join(dist, checksums))
	if err := os.MkdirAll(filepath.Join(served, "releases"), 0o755); err != nil {
		return fmt.Errorf("creating the release directory: %w", err)
	}
	if err := setup(ctx, "", "cp", append(uploads, filepath.Join(served, "releases"))...); err != nil {
		return err
	}
	if err := publishIndex(ctx, filepath.Join(workdir, "spokekit-index"), filepath.Join(served, "spokekit.git"), manifestPaths(filepath.Join(served, "manifests"))...); err != nil {
		return err
	}
	return publishIndex(ctx, filepath.Join(workdir, "default-index"), filepath.Join(served, "default.git"))
}

func manifestPaths(dir string) []string {
	var paths []string
	for _, p := range plugins {
		paths = append(paths, filepath.Join(dir, p+".yaml"))
	}
	return paths
}

// publishIndex commits the manifests into a krew index repository (plugins/
// holds one manifest per plugin) and makes a bare copy at bare that git
// clones over plain HTTP from the file server.
func publishIndex(ctx context.Context, work, bare string, manifests ...string) error {
	if err := os.MkdirAll(filepath.Join(work, "plugins"), 0o755); err != nil {
		return fmt.Errorf("creating the index: %w", err)
	}
	// git keeps no empty directory, and krew needs plugins/ in every index.
	if err := os.WriteFile(filepath.Join(work, "plugins", ".keep"), nil, 0o644); err != nil {
		return fmt.Errorf("creating the index: %w", err)
	}
	for _, m := range manifests {
		data, err := os.ReadFile(m)
		if err != nil {
			return fmt.Errorf("reading the manifest for the index: %w", err)
		}
		if err := os.WriteFile(filepath.Join(work, "plugins", filepath.Base(m)), data, 0o644); err != nil {
			return fmt.Errorf("adding %s to the index: %w", m, err)
		}
	}
	git := []string{"-c", "init.defaultBranch=main", "-c", "user.name=spokekit e2e", "-c", "user.email=e2e@spokekit.invalid"}
	for _, args := range [][]string{
		{"-C", work, "init", "-q"},
		{"-C", work, "add", "."},
		{"-C", work, "commit", "-qm", "Publish the spokekit plugins"},
		{"clone", "-q", "--bare", work, bare},
		// The metadata git's "dumb" HTTP protocol reads from a plain file server.
		{"-C", bare, "update-server-info"},
	} {
		if err := setup(ctx, "", "git", append(git, args...)...); err != nil {
			return err
		}
	}
	return nil
}

// setup runs a step of the release, failing with its output.
func setup(ctx context.Context, dir, program string, args ...string) error {
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", program, strings.Join(args, " "), err, out)
	}
	return nil
}
