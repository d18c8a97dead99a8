// Package family holds the test of what the three plugins promise alike, so
// that a user who learned one can predict the other two.
package family

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/fleetdrain"
	"github.com/spokekit/spokekit/internal/park"
	"github.com/spokekit/spokekit/internal/spoke"
)

type plugin struct {
	name    string
	newRoot func(genericiooptions.IOStreams) *cobra.Command
}

// The plugins as their mains build them (plugins/*/main.go).
var plugins = []plugin{
	{"spoke", spoke.NewCmdSpoke},
	{"fleetdrain", fleetdrain.NewCmdFleetdrain},
	{"park", park.NewCmdPark},
}

// leafArgs is, for every leaf command, a command line that passes its
// checks (names valid, required flags given): the rules below change one
// flag of it at a time. A new leaf command must be added here, so that the
// rules apply to it too.
func leafArgs(t *testing.T) map[string][]string {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "spoke.kubeconfig")
	assert.NilError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: spoke, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: admin, user: {token: not-a-real-token}}]
contexts: [{name: spoke, context: {cluster: spoke, user: admin}}]
current-context: spoke
`), 0o600))
	return map[string][]string{
		"kubectl spoke add":                   {"add", "spoke-1", "--spoke-kubeconfig", kubeconfig, "--apply", "--wait"},
		"kubectl spoke list":                  {"list"},
		"kubectl spoke get":                   {"get", "spoke-1"},
		"kubectl spoke status":                {"status", "spoke-1"},
		"kubectl spoke remove":                {"remove", "spoke-1", "--wait"},
		"kubectl spoke force-remove":          {"force-remove", "spoke-1", "--yes"},
		"kubectl spoke rotate-kubeconfig":     {"rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", kubeconfig, "--secret", "spoke-1-kubeconfig-2"},
		"kubectl spoke set":                   {"set", "spoke-1", "logVerbosity=4"},
		"kubectl spoke values-diff":           {"values-diff"}, // its one file flag, --values or --helmrelease, each rule adds
		"kubectl spoke health":                {"health"},
		"kubectl spoke join-command":          {"join-command", "spoke-1", "--accept"},
		"kubectl spoke prepare":               {"prepare", "--output-file", filepath.Join(t.TempDir(), "prepared.kubeconfig")},
		"kubectl fleetdrain node":             {"node", "worker-1"},
		"kubectl fleetdrain cluster":          {"cluster", "spoke-1"},
		"kubectl fleetdrain uncordon node":    {"uncordon", "node", "worker-1"},
		"kubectl fleetdrain uncordon cluster": {"uncordon", "cluster", "spoke-1"},
		"kubectl fleetdrain check":            {"check"},
		"kubectl park cluster":                {"cluster", "app", "--wait"},
		"kubectl park resume":                 {"resume", "app", "--wait"},
		"kubectl park list":                   {"list"},
		"kubectl park status":                 {"status", "app"},
		"kubectl park kubeconfig":             {"kubeconfig", "app", "--output-file", filepath.Join(t.TempDir(), "app.kubeconfig")},
	}
}

// waits are the leaf commands that wait for their change to be done: each
// takes --timeout, and no other command does.
var waits = map[string]bool{
	"kubectl spoke add":          true,
	"kubectl spoke remove":       true,
	"kubectl spoke force-remove": true,
	// --wait with --helmrelease --apply: for the HelmRelease to be Ready.
	"kubectl spoke rotate-kubeconfig": true,
	"kubectl spoke join-command":      true,
	"kubectl fleetdrain node":         true,
	"kubectl fleetdrain cluster":      true,
	"kubectl park cluster":            true,
	"kubectl park resume":             true,
}

// reads are the leaf commands that only read: every other one changes
// something, so takes --dry-run.
var reads = map[string]bool{
	"kubectl spoke list":        true,
	"kubectl spoke get":         true,
	"kubectl spoke status":      true,
	"kubectl park list":         true,
	"kubectl park status":       true,
	"kubectl spoke values-diff": true,
	"kubectl spoke health":      true,
	"kubectl fleetdrain check":  true,
}

// leaves are the commands of a tree that do the work (version aside: every
// plugin gets the same one from internal/cli).
func leaves(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.HasSubCommands() && c.Name() != "version" {
			out = append(out, c)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

func TestEveryPluginEndsItsHelpWithTheExitCodes(t *testing.T) {
	for _, p := range plugins {
		code, stdout, stderr := clitest.RunCommand(p.newRoot, "--help")
		assert.Check(t, is.Equal(code, exitcode.OK), stderr)
		assert.Check(t, is.Contains(stdout, exitcode.Help), "kubectl %s --help", p.name)
	}
}

// Every leaf command of the three plugins keeps the family's promises. The
// command lines run against a stand-in API server that records requests:
// input is checked before any request is sent.
func TestEveryLeafCommandKeepsTheFamilysPromises(t *testing.T) {
	args := leafArgs(t)
	seen := map[string]bool{}
	for _, p := range plugins {
		streams, _, _, _ := genericiooptions.NewTestIOStreams()
		for _, c := range leaves(p.newRoot(streams)) {
			path := c.CommandPath()
			seen[path] = true
			line, ok := args[path]
			if !assert.Check(t, ok, "%s is not in leafArgs: add a valid command line for it", path) {
				continue
			}
			t.Run(strings.TrimPrefix(path, "kubectl "), func(t *testing.T) {
				checkHelp(t, c)
				checkOutput(t, p, c, line)
				checkTimeout(t, p, c, line)
				checkDryRun(t, p, c, line)
				checkFiles(t, p, c, line)
				checkChunkSize(t, p, c, line)
				checkListing(t, p, c, line)
				checkSelectors(t, p, c, line)
			})
		}
	}
	for path := range args {
		assert.Check(t, seen[path], "leafArgs names %s, which no plugin has", path)
	}
}

// checkHelp: a summary, a description and examples that run the command.
func checkHelp(t *testing.T, c *cobra.Command) {
	t.Helper()
	assert.Check(t, c.Short != "", "no Short")
	assert.Check(t, c.Long != "", "no Long")
	assert.Check(t, is.Contains(c.Example, c.CommandPath()+" "), "the examples do not run the command")
}

// checkOutput: -o takes every report format, and an unknown one is a usage
// error before any request.
func checkOutput(t *testing.T, p plugin, c *cobra.Command, line []string) {
	t.Helper()
	f := c.Flags().Lookup("output")
	if !assert.Check(t, f != nil && f.Shorthand == "o", "no -o/--output") {
		return
	}
	for _, format := range clitest.ReportFormats {
		assert.Check(t, is.Contains(f.Usage, strings.TrimSuffix(format, "=")), "-o")
	}
	clitest.AssertExitBeforeAnyRequest(t, p.newRoot, exitcode.Usage, "output format", with(line, "-o", "bogus"))
	// The help offers only what the command takes: no Go templates.
	c.Flags().VisitAll(func(f *pflag.Flag) {
		assert.Check(t, !strings.Contains(f.Usage, "go-template") && !strings.Contains(f.Usage, "golang"), "--%s: %s", f.Name, f.Usage)
	})
}

// checkTimeout: a command that waits takes --timeout, a duration where 0
// means no limit, as its help says; a negative one is a usage error before
// any request, and 0 goes on to the work.
func checkTimeout(t *testing.T, p plugin, c *cobra.Command, line []string) {
	t.Helper()
	f := c.Flags().Lookup("timeout")
	if !waits[c.CommandPath()] {
		assert.Check(t, f == nil, "--timeout, though the command is not in waits")
		return
	}
	if !assert.Check(t, f != nil, "no --timeout, though the command waits") {
		return
	}
	assert.Check(t, is.Equal(f.Value.Type(), "duration"))
	assert.Check(t, is.Contains(f.Usage, "(0: no limit)"))
	clitest.AssertExitBeforeAnyRequest(t, p.newRoot, exitcode.Usage, "must not be negative", with(line, "--timeout", "-1s"))
	srv := clitest.NewAPIServer(t)
	code, _, stderr := clitest.RunCommand(p.newRoot, append(with(line, "--timeout", "0"), "--kubeconfig", srv.Kubeconfig)...)
	assert.Check(t, code != exitcode.Usage, "--timeout 0 refused: %s", stderr)
	assert.Check(t, len(srv.Requests()) > 0, "--timeout 0 did not go on to the work: %s", stderr)
}

// checkChunkSize: --chunk-size is kubectl's, 500 by default; a negative one
// is a usage error before any request.
func checkChunkSize(t *testing.T, p plugin, c *cobra.Command, line []string) {
	t.Helper()
	f := c.Flags().Lookup("chunk-size")
	if f == nil {
		return
	}
	assert.Check(t, is.Equal(f.DefValue, "500"))
	clitest.AssertExitBeforeAnyRequest(t, p.newRoot, exitcode.Usage, "--chunk-size must be 0 or more", with(line, "--chunk-size", "-1"))
}

// checkListing: a command that lists (list, get) takes kubectl get's
// -A, -l, --chunk-size and --no-headers; a bad selector is a usage error
// before any request.
func checkListing(t *testing.T, _ plugin, c *cobra.Command, _ []string) {
	t.Helper()
	if c.Name() != "list" && c.Name() != "get" {
		return
	}
	for _, name := range []string{"all-namespaces", "selector", "chunk-size", "no-headers"} {
		assert.Check(t, c.Flags().Lookup(name) != nil, "no --%s", name)
	}
	for short, name := range map[string]string{"A": "all-namespaces", "l": "selector"} {
		if f := c.Flags().ShorthandLookup(short); assert.Check(t, f != nil, "no -%s", short) {
			assert.Check(t, is.Equal(f.Name, name))
		}
	}
}

// checkSelectors: every label selector flag (-l, --pod-selector) refuses a
// bad selector, and a blank one, before any request. labels.Parse takes
// " " as the empty selector, which selects everything: `fleetdrain cluster
// -l " "` would taint every cluster of the fleet.
func checkSelectors(t *testing.T, p plugin, c *cobra.Command, line []string) {
	t.Helper()
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "selector" && !strings.HasSuffix(f.Name, "-selector") {
			return
		}
		base := line
		if f.Name == "selector" {
			// -l stands in for the names the line gives.
			base = withoutNames(c, line)
		}
		flag := "--" + f.Name
		clitest.AssertExitBeforeAnyRequest(t, p.newRoot, exitcode.Usage, "invalid "+flag, with(base, flag, "env in (prod"))
		for _, blank := range []string{" ", "\t "} {
			clitest.AssertExitBeforeAnyRequest(t, p.newRoot, exitcode.Usage, "is blank and selects everything", with(base, flag, blank))
		}
	})
}

// withoutNames is line without the names that follow the subcommands
// (spoke-1 in "cluster spoke-1 --wait"; the path is "kubectl fleetdrain
// cluster").
func withoutNames(c *cobra.Command, line []string) []string {
	words := len(strings.Fields(c.CommandPath())) - 2
	out := slices.Clone(line[:words])
	rest := line[words:]
	for len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		rest = rest[1:]
	}
	return append(out, rest...)
}

// checkDryRun: a command that changes something takes --dry-run, kubectl's,
// none|client|server, completed as such; another value is a usage error
// before any request.
func checkDryRun(t *testing.T, p plugin, c *cobra.Command, line []string) {
	t.Helper()
	f := c.Flags().Lookup("dry-run")
	if reads[c.CommandPath()] {
		assert.Check(t, f == nil, "--dry-run, though the command only reads")
		return
	}
	if !assert.Check(t, f != nil, "no --dry-run, though the command changes something") {
		return
	}
	assert.Check(t, is.Equal(f.DefValue, "none"))
	complete, ok := c.GetFlagCompletionFunc("dry-run")
	if assert.Check(t, ok, "--dry-run has no completion") {
		values, _ := complete(c, nil, "")
		slices.Sort(values)
		assert.Check(t, is.DeepEqual(values, []string{"client", "none", "server"}))
	}
	clitest.AssertExitBeforeAnyRequest(t, p.newRoot, exitcode.Usage, `Must be "none", "server", or "client"`, with(line, "--dry-run=bogus"))
}

// checkFiles: a file flag naming a file that is not there is refused
// (exit 3, naming the file) before any request: local input is read first.
func checkFiles(t *testing.T, p plugin, c *cobra.Command, line []string) {
	t.Helper()
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if _, ok := f.Annotations[cobra.BashCompFilenameExt]; !ok {
			return
		}
		missing := filepath.Join(t.TempDir(), "missing-"+f.Name+".yaml")
		if f.Name == "template" {
			// The template of -o jsonpath-file: a bad -o is a usage error.
			clitest.AssertExitBeforeAnyRequest(t, p.newRoot, exitcode.Usage, missing, with(line, "-o", "jsonpath-file", "--template", missing))
			return
		}
		clitest.AssertExitBeforeAnyRequest(t, p.newRoot, exitcode.Refused, missing, withFlag(line, f.Name, missing))
	})
}

// withFlag is line with --name set to value, in place of the one line
// gives, if any.
func withFlag(line []string, name, value string) []string {
	out := slices.Clone(line)
	if i := slices.Index(out, "--"+name); i >= 0 && i+1 < len(out) {
		out[i+1] = value
		return out
	}
	return append(out, "--"+name, value)
}

// with is line and more flags, line left as it is.
func with(line []string, flags ...string) []string {
	return append(slices.Clip(line), flags...)
}
