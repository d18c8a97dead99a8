package cli

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/spokekit/spokekit/internal/clientrate"
	"github.com/spokekit/spokekit/internal/exitcode"
)

func testRoot(t *testing.T, streams genericiooptions.IOStreams) *cobra.Command {
	t.Helper()
	// The --cache-dir default in the help text comes from HOME.
	t.Setenv("HOME", "/home/user")
	root, _ := NewRoot(Plugin{Name: "sample", Short: "A sample plugin", Long: "A sample plugin for tests."}, streams)
	return root
}

func TestHelpReadsAsKubectlCommand(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	assert.Equal(t, Execute(testRoot(t, streams), []string{"--help"}, streams), exitcode.OK)
	golden.Assert(t, out.String(), "root-help.golden")
}

func TestVersionHelp(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	assert.Equal(t, Execute(testRoot(t, streams), []string{"version", "--help"}, streams), exitcode.OK)
	golden.Assert(t, out.String(), "version-help.golden")
}

func TestUsageErrorsExit2Once(t *testing.T) {
	for _, args := range [][]string{{"nope"}, {"version", "--nope"}, {"version", "arg"}, {"version", "-o", "xml"}, {"verison"}} { //nolint:misspell // "verison" is the typo whose suggestion this test checks
		streams, _, out, errOut := genericiooptions.NewTestIOStreams()
		assert.Equal(t, Execute(testRoot(t, streams), args, streams), exitcode.Usage, "%v", args)
		assert.Equal(t, out.String(), "", "%v", args)
		golden.Assert(t, errOut.String(), "usage-"+args[len(args)-1]+".golden")
	}
}

// Whatever cobra rejects before the command runs (arguments, required
// flags, flag groups) is a usage error; an error of the command itself is not.
func TestCommandLineChecksBeforeRunExit2(t *testing.T) {
	root := func(streams genericiooptions.IOStreams) *cobra.Command {
		r := testRoot(t, streams)
		need := &cobra.Command{Use: "need NAME", Args: cobra.ExactArgs(1), RunE: func(*cobra.Command, []string) error { return errors.New("it failed") }}
		need.Flags().String("file", "", "")
		need.Flags().Bool("a", false, "")
		need.Flags().Bool("b", false, "")
		_ = need.MarkFlagRequired("file")
		need.MarkFlagsMutuallyExclusive("a", "b")
		r.AddCommand(need)
		return r
	}
	for _, args := range [][]string{{"need"}, {"need", "x"}, {"need", "x", "--file", "f", "--a", "--b"}} {
		streams, _, out, errOut := genericiooptions.NewTestIOStreams()
		assert.Equal(t, Execute(root(streams), args, streams), exitcode.Usage, "%v", args)
		assert.Equal(t, out.String(), "", "%v", args)
		assert.Check(t, strings.HasSuffix(errOut.String(), "See 'kubectl sample need --help' for usage.\n"), "%v: %s", args, errOut)
	}
	streams, _, _, errOut := genericiooptions.NewTestIOStreams()
	assert.Equal(t, Execute(root(streams), []string{"need", "x", "--file", "f"}, streams), exitcode.Failed)
	assert.Equal(t, errOut.String(), "error: it failed\n")
}

func TestVersionJSON(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	assert.Equal(t, Execute(testRoot(t, streams), []string{"version", "-o", "json"}, streams), exitcode.OK)
	assert.Assert(t, out.String() != "")
	u := out.String()
	assert.Assert(t, strings.Contains(u, `"kind": "Version"`) && strings.Contains(u, `"plugin": "sample"`), u)
}

type recordingOptions struct{ calls []string }

func (r *recordingOptions) Validate() error {
	r.calls = append(r.calls, "validate")
	return errors.New("bad input")
}

func (r *recordingOptions) Run(context.Context) error {
	r.calls = append(r.calls, "run")
	return nil
}

// Bad input stops the command after Validate: Run never starts.
func TestRunECompletesValidatesThenRuns(t *testing.T) {
	o := &recordingOptions{}
	runE := RunE(o, func(*cobra.Command, []string) error { o.calls = append(o.calls, "complete"); return nil })
	err := runE(&cobra.Command{}, nil)
	assert.ErrorContains(t, err, "bad input")
	assert.DeepEqual(t, o.calls, []string{"complete", "validate"})
}

func TestEveryClientGetsThePluginRate(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "config")
	assert.NilError(t, os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	root, f := NewRoot(Plugin{Name: "sample"}, streams)
	assert.NilError(t, root.PersistentFlags().Set("kubeconfig", kc))
	cfg, err := f.ToRESTConfig()
	assert.NilError(t, err)
	assert.Equal(t, cfg.QPS, float32(clientrate.QPS))
	assert.Equal(t, cfg.Burst, clientrate.Burst)
}

func TestAPIAndConnectionErrorsReadAsKubectlPrintsThem(t *testing.T) {
	cases := map[error]string{
		apierrors.NewNotFound(schema.GroupResource{Resource: "spokes"}, "x"):                                              `Error from server (NotFound): spokes "x" not found`,
		apierrors.NewUnauthorized("bad token"):                                                                            "error: You must be logged in to the server (bad token)",
		&url.Error{Op: "Get", URL: "https://10.0.0.1:6443/api", Err: errors.New("dial tcp: connect: connection refused")}: "The connection to the server 10.0.0.1:6443 was refused - did you specify the right host or port?",
		&url.Error{Op: "Get", URL: "https://10.0.0.1:6443/api", Err: errors.New("i/o timeout")}:                           "Unable to connect to the server: i/o timeout",
	}
	for err, want := range cases {
		got, ok := standardErrorMessage(err)
		assert.Check(t, ok)
		assert.Equal(t, got, want)
	}
	_, ok := standardErrorMessage(errors.New("plain"))
	assert.Check(t, !ok)
}

// A run that shows no help leaves the long descriptions as written (their
// rendering is most of what help costs at start-up); help renders them once,
// however often it is shown.
func TestHelpIsRenderedOnlyForHelp(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	root, _ := NewRoot(Plugin{Name: "sample", Short: "A sample plugin", Long: LongDesc(`
		A *sample*
		plugin.`)}, streams)
	assert.Equal(t, Execute(root, []string{"version"}, streams), exitcode.OK)
	assert.Assert(t, strings.Contains(root.Long, "*sample*"), root.Long)
	for range 2 {
		out.Reset()
		assert.Equal(t, Execute(root, []string{"--help"}, streams), exitcode.OK)
		assert.Assert(t, strings.HasPrefix(out.String(), "A sample plugin.\n"), out.String())
		assert.Equal(t, strings.Count(out.String(), exitcode.Help), 1)
	}
}

// A command that fails with its live progress line still on the terminal
// (a path that returned before Done) gets its error on a line of its own,
// not glued to the end of that line.
func TestTheErrorStartsALineOfItsOwn(t *testing.T) {
	streams, _, _, errOut := genericiooptions.NewTestIOStreams()
	r := testRoot(t, streams)
	r.AddCommand(&cobra.Command{Use: "step", RunE: func(*cobra.Command, []string) error {
		p := NewProgress(streams.ErrOut)
		p.live = true
		p.Update("spoke x: Joining")
		return errors.New("spoke x is owned by a Compute Pool")
	}})
	assert.Equal(t, Execute(r, []string{"step"}, streams), exitcode.Failed)
	assert.Equal(t, errOut.String(), "\r\033[Kspoke x: Joining\nerror: spoke x is owned by a Compute Pool\n")
}
