//go:build e2e

// Package spoke tests `kubectl spoke` end to end: a hub running Open Cluster
// Management's own hub components, two spokes (real kwokctl control planes)
// whose klusterlet agents the fleet stand-in starts, as the FleetConfig
// controller would, behind upstream's validating webhook, and the built
// plugin run through the built kubectl. Every test runs in addon mode (the
// chart's default); then, on clusters of their own, the tests whose
// behaviour differs by FleetConfig mode (modeTests) run in unified mode.
// SPOKEKIT_E2E_FLEET_MODE=addon or =unified runs one pass; with -run, the
// unified pass runs what -run names. SPOKEKIT_E2E_SHARD=i/n runs the i-th of
// n shares of a pass's tests, on clusters of its own: hack/e2e.sh runs the
// addon pass as two such processes beside each other and the unified one.
package spoke

import (
	"context"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	// pace is the stand-in's (SPOKEKIT_E2E_FLEET_PACE; fast by default).
	pace fleet.Pace
)

func TestMain(m *testing.M) {
	flag.Parse() // selectTests reads -run
	modes := []fleet.Mode{fleet.ModeAddon, fleet.ModeUnified}
	only, err := fleet.ModeFromEnv()
	if err == nil {
		pace, err = fleet.PaceFromEnv()
	}
	var sh shard
	if err == nil {
		sh, err = shardFromEnv()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if only != "" {
		modes = []fleet.Mode{only}
	}
	commandLineRun := flag.Lookup("test.run").Value.String()
	code := 0
	for _, mode = range modes {
		if err := selectTests(mode, sh, commandLineRun); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "=== e2e/spoke: FleetConfig in %s mode%s\n", mode, sh)
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
	standin, err = fleet.Run(run, hub, releaseNamespace, fleet.Options{Mode: mode, Pace: pace})
	return nil, err
}

// modeTests are the tests whose behaviour differs by FleetConfig mode, and
// how: the unified pass runs only these. In unified mode the hub does all a
// spoke needs with the stored kubeconfig, every reconcile, and no agent
// add-on takes over (see e2e/standin/fleet). A test that is not here checks
// what the plugin does the same way in both modes.
var modeTests = map[string]string{
	"TestAddJoinsListsAndIsIdempotent":           "the hub joins and keeps the spoke without an agent add-on; no pivot",
	"TestWebhookAddOnRulesPerMode":               "upstream's webhook requires the agent add-on in one mode and forbids it in the other",
	"TestPurgeKubeconfigSecretAfterPivot":        "only addon mode purges the Secret; unified mode keeps it, for the unjoin only",
	"TestHealth":                                 "the credential's state and the agent add-on column differ",
	"TestRemoveBlockedByManifestWorkThenAllowed": "the hub, not the agent, unjoins the removed spoke",
	"TestRemovedSpokeJoinsAgain":                 "the hub's unjoin must leave the spoke able to join again",
	"TestAgentStoppedSpoke":                      "who unjoins a spoke whose klusterlet stopped",
	"TestForceRemoveUnreachableSpoke":            "the hub, not the agent, fails to unjoin the dark spoke; the force-delete",
	"TestRotateKubeconfig":                       "the hub keeps using the rotated credential after the join",
	"TestPrepareThenAdd":                         "the prepared identity is what the hub uses on every reconcile",
	"TestLeastPrivilege":                         "every command with the shipped roles alone, in the other mode too",
}

// selectTests sets -run for a pass, unless the command line set it: in
// unified mode to modeTests, once it checked that each is a test of this
// package (so a rename cannot drop one silently); then to the shard's share.
func selectTests(mode fleet.Mode, sh shard, commandLineRun string) error {
	names, err := packageTests()
	if err != nil {
		return err
	}
	for name := range modeTests {
		if !slices.Contains(names, name) {
			return fmt.Errorf("e2e/spoke: modeTests names %s, which is no test of this package", name)
		}
	}
	if commandLineRun != "" {
		if sh.n > 1 {
			return fmt.Errorf("e2e/spoke: SPOKEKIT_E2E_SHARD=%d/%d and -run %q cannot be combined", sh.i, sh.n, commandLineRun)
		}
		return nil
	}
	run := names
	if mode == fleet.ModeUnified {
		run = slices.Collect(maps.Keys(modeTests))
	}
	slices.Sort(run)
	run = sh.of(run)
	if len(run) == 0 {
		return fmt.Errorf("e2e/spoke: shard %d/%d of the %s pass has no tests", sh.i, sh.n, mode)
	}
	return flag.Lookup("test.run").Value.Set("^(" + strings.Join(run, "|") + ")$")
}

// shard is the i-th of n shares of a pass's tests (1/1: all of them).
type shard struct{ i, n int }

// shardFromEnv reads SPOKEKIT_E2E_SHARD ("i/n"); unset is 1/1.
func shardFromEnv() (shard, error) {
	v := os.Getenv("SPOKEKIT_E2E_SHARD")
	if v == "" {
		return shard{1, 1}, nil
	}
	is, ns, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return shard{}, fmt.Errorf("SPOKEKIT_E2E_SHARD=%q: want i/n, 1 <= i <= n", v)
	}
	return shard{i, n}, nil
}

// of deals sorted names out like cards, so each share gets tests from
// every part of the alphabet (the slow ones are not all in one place).
func (s shard) of(names []string) []string {
	var share []string
	for k, name := range names {
		if k%s.n == s.i-1 {
			share = append(share, name)
		}
	}
	return share
}

func (s shard) String() string {
	if s.n == 1 {
		return ""
	}
	return fmt.Sprintf(", shard %d/%d", s.i, s.n)
}

// packageTests names the Test functions of this package's files.
func packageTests() ([]string, error) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		return nil, err
	}
	var names []string
	fset := token.NewFileSet()
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.Name != "TestMain" {
				names = append(names, fn.Name.Name)
			}
		}
	}
	return names, nil
}
