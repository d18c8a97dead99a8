package cli

import (
	"testing"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"

	"github.com/spokekit/spokekit/internal/exitcode"
)

func TestDryRunStrategy(t *testing.T) {
	cases := map[string]DryRun{"none": DryRunNone, "client": DryRunClient, "server": DryRunServer}
	for value, want := range cases {
		cmd := &cobra.Command{}
		AddDryRunFlag(cmd)
		assert.NilError(t, cmd.Flags().Set("dry-run", value))
		got, err := GetDryRun(cmd)
		assert.NilError(t, err)
		assert.Equal(t, got, want, value)
	}
	assert.DeepEqual(t, DryRunOption(DryRunServer), []string{"All"})
	assert.Assert(t, DryRunOption(DryRunClient) == nil)
}

func TestDryRunRejectsUnknownValue(t *testing.T) {
	cmd := &cobra.Command{}
	AddDryRunFlag(cmd)
	assert.NilError(t, cmd.Flags().Set("dry-run", "maybe"))
	_, err := GetDryRun(cmd)
	assert.Equal(t, exitcode.Of(err), exitcode.Usage)
	assert.ErrorContains(t, err, "maybe")
}

func TestDryRunNameIsTheFlagValueAndEmptyForARealRun(t *testing.T) {
	assert.Equal(t, DryRunName(DryRunNone), "")
	assert.Equal(t, DryRunName(DryRunClient), "client")
	assert.Equal(t, DryRunName(DryRunServer), "server")
}

func TestDryRunKeepsKubectlsOldForms(t *testing.T) {
	for args, want := range map[string]DryRun{"--dry-run": DryRunClient, "--dry-run=true": DryRunClient, "--dry-run=false": DryRunNone} {
		cmd := &cobra.Command{}
		AddDryRunFlag(cmd)
		assert.NilError(t, cmd.ParseFlags([]string{args}))
		got, err := GetDryRun(cmd)
		assert.NilError(t, err)
		assert.Equal(t, got, want, args)
	}
}
