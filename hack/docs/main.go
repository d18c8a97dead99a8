// Command docs writes the command reference in docs/reference from the
// plugins' own cobra commands, so the reference cannot drift from --help:
// `make docs` runs it, and its test fails when the checked-in copy differs.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/fleetdrain"
	"github.com/spokekit/spokekit/internal/park"
	"github.com/spokekit/spokekit/internal/spoke"
)

// roots are the plugins as their mains build them (plugins/*/main.go).
var roots = []func(genericiooptions.IOStreams) *cobra.Command{
	spoke.NewCmdSpoke,
	fleetdrain.NewCmdFleetdrain,
	park.NewCmdPark,
}

func main() {
	dir := "docs/reference"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := write(dir); err != nil {
		fmt.Fprintln(os.Stderr, "docs:", err)
		os.Exit(1)
	}
}

// write replaces dir's contents with one Markdown page per command.
func write(dir string) error {
	if err := os.RemoveAll(dir); err != nil { //nolint:gosec // the reference directory the developer named on the command line
		return fmt.Errorf("clearing %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil { //nolint:gosec // as above
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	for _, newRoot := range roots {
		root := newRoot(genericiooptions.NewTestIOStreamsDiscard())
		cli.RenderHelp(root) // the long descriptions as --help prints them
		if err := writeTree(dir, root); err != nil {
			return err
		}
	}
	return nil
}

func writeTree(dir string, cmd *cobra.Command) error {
	if !cmd.IsAvailableCommand() && cmd.HasParent() {
		return nil
	}
	for _, c := range cmd.Commands() {
		if err := writeTree(dir, c); err != nil {
			return err
		}
	}
	cmd.DisableAutoGenTag = true
	var page bytes.Buffer
	if err := doc.GenMarkdownCustom(cmd, &page, link); err != nil {
		return fmt.Errorf("rendering %s: %w", cmd.CommandPath(), err)
	}
	name := filepath.Join(dir, fileName(cmd))
	if err := os.WriteFile(name, machineFree(page.Bytes()), 0o644); err != nil { //nolint:gosec // documentation, meant to be read by all
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// fileName is the page of a command: kubectl-spoke_add.md for `kubectl spoke add`.
func fileName(cmd *cobra.Command) string {
	return strings.ReplaceAll(strings.ReplaceAll(cmd.CommandPath(), "kubectl ", "kubectl-"), " ", "_") + ".md"
}

// link turns cobra's "SEE ALSO" file names into the pages' own names.
func link(name string) string {
	return strings.ReplaceAll(name, "kubectl_", "kubectl-")
}

// machineFree takes out what depends on the machine that ran the generator:
// flag defaults under the user's home directory (kubectl's --cache-dir).
func machineFree(page []byte) []byte {
	if home, err := os.UserHomeDir(); err == nil && home != "" && home != "/" {
		page = bytes.ReplaceAll(page, []byte(home), []byte("$HOME"))
	}
	return page
}
