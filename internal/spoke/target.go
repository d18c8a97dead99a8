package spoke

import (
	"github.com/spf13/cobra"

	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/values"
)

// writeTarget is what every writing command of kubectl spoke but set takes:
// the spoke, the dry-run strategy, and the file that holds (or gets) the
// spoke's values entry.
type writeTarget struct {
	Name string
	// ValuesFile is a Helm values file, ReleaseFile a Flux HelmRelease
	// manifest; at most one is given.
	ValuesFile  string
	ReleaseFile string
	// Release is the hub's Helm release the command upgrades, with only
	// fleetConfig.spokes changed (the seed's own path).
	Release string
	DryRun  cli.DryRun
	Output  *cli.Output

	f *cli.Factory
	// values is the file as readFile read it (nil: none given).
	values *values.File
}

func newWriteTarget(f *cli.Factory) writeTarget {
	return writeTarget{Output: cli.NewOutput(), f: f}
}

// addFlags registers --values and --helmrelease (with what each does to the
// entry), --dry-run and -o.
func (t *writeTarget) addFlags(cmd *cobra.Command, valuesUsage, releaseUsage string) {
	cmd.Flags().StringVar(&t.ValuesFile, "values", "", valuesUsage)
	cmd.Flags().StringVar(&t.ReleaseFile, "helmrelease", "", releaseUsage)
	cmd.Flags().StringVar(&t.Release, "release", "", "The hub's Helm release to upgrade with only fleetConfig.spokes changed (the chart and every other value as the release has them); --values, if given, is edited too.")
	_ = cmd.MarkFlagFilename("values", "yaml", "yml")
	_ = cmd.MarkFlagFilename("helmrelease", "yaml", "yml")
	cli.AddDryRunFlag(cmd)
	t.Output.AddFlags(cmd)
}

// Complete reads the arguments and the dry-run strategy.
func (t *writeTarget) Complete(cmd *cobra.Command, args []string) error {
	t.Name = args[0]
	var err error
	t.DryRun, err = cli.GetDryRun(cmd)
	return err
}

// validate checks the name, the namespace, that one file at most is given,
// and -o.
func (t *writeTarget) validate() error {
	if err := cli.ValidateNames(cli.ClusterName, t.Name); err != nil {
		return err
	}
	if err := t.f.ValidateNamespace(); err != nil {
		return err
	}
	if t.ValuesFile != "" && t.ReleaseFile != "" {
		return exitcode.UsageErrorf("--values and --helmrelease are two ways to name the file of the spoke's entry: give one")
	}
	if t.Release != "" && t.ReleaseFile != "" {
		return exitcode.UsageErrorf("--release upgrades a release with Helm, --helmrelease edits the manifest Flux upgrades it from: a Flux-managed release takes only the second")
	}
	return t.Output.Validate()
}

// file is the path of the --values or --helmrelease file ("" without one)
// and its kind.
func (t *writeTarget) file() (string, values.Kind) {
	if t.ReleaseFile != "" {
		return t.ReleaseFile, values.HelmRelease
	}
	return t.ValuesFile, values.HelmValues
}

// readFile reads the --values or --helmrelease file, if one is given. The
// commands call it at the end of Validate: a file that is missing or does
// not parse is refused before any request.
func (t *writeTarget) readFile() error {
	path, kind := t.file()
	if path == "" {
		return nil
	}
	f, err := values.Read(path, kind)
	if err != nil {
		return exitcode.RefusedErrorf("%w; nothing was changed", err)
	}
	t.values = f
	return nil
}

// fileEdit is a planned edit of the --values or --helmrelease file: the
// file as read, and what it becomes (nil: nothing to write).
type fileEdit struct {
	File   *values.File
	Edited []byte
}

// write writes the edit, when there is one and this is no dry run.
func (e fileEdit) write(dryRun cli.DryRun) error {
	if e.Edited == nil || dryRun != cli.DryRunNone {
		return nil
	}
	return e.File.Write(e.Edited)
}
