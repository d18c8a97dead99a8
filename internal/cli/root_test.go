package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func testRoot(t *testing.T, streams genericiooptions.IOStreams) *cobra.Command {
	// The --cache-dir default in the help text comes from HOME.
	t.Setenv("HOME", "/home/user")
	root, _ := NewRoot(Plugin{Name: "sample", Short: "A sample plugin", Long: "A sample plugin for tests."}, streams)
	return root
}

func TestHelpReadsAsKubectlCommand(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	assert.Equal(t, Execute(testRoot(t, streams), []string{"--help"}, streams), ExitOK)
	golden.Assert(t, out.String(), "root-help.golden")
}

func TestVersionHelp(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	assert.Equal(t, Execute(testRoot(t, streams), []string{"version", "--help"}, streams), ExitOK)
	golden.Assert(t, out.String(), "version-help.golden")
}

func TestUsageErrorsExit2Once(t *testing.T) {
	for _, args := range [][]string{{"nope"}, {"version", "--nope"}, {"version", "arg"}, {"version", "-o", "xml"}, {"verison"}} {
		streams, _, out, errOut := genericiooptions.NewTestIOStreams()
		assert.Equal(t, Execute(testRoot(t, streams), args, streams), ExitUsage, "%v", args)
		assert.Equal(t, out.String(), "", "%v", args)
		golden.Assert(t, errOut.String(), "usage-"+args[len(args)-1]+".golden")
	}
}

func TestVersionJSON(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	assert.Equal(t, Execute(testRoot(t, streams), []string{"version", "-o", "json"}, streams), ExitOK)
	assert.Assert(t, len(out.String()) > 0)
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
