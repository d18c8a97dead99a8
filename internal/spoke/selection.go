package spoke

import (
	"github.com/spf13/cobra"

	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// spokeSelection is which spokes list, get and health read: the named
// ones or those -l matches, in one namespace or all (-A), a page at a time.
type spokeSelection struct {
	Names []string
	// AllNamespaces (-A) reads the Spokes of every namespace.
	AllNamespaces bool
	// Selector (-l) keeps the Spokes whose labels match.
	Selector  string
	ChunkSize int64
}

func (s *spokeSelection) addFlags(cmd *cobra.Command, selectorUsage string) {
	cmd.Flags().BoolVarP(&s.AllNamespaces, "all-namespaces", "A", s.AllNamespaces, "The spokes of every namespace; -n is ignored, as in kubectl get -A.")
	cmd.Flags().StringVarP(&s.Selector, "selector", "l", s.Selector, selectorUsage)
	cli.AddChunkSizeFlag(cmd, &s.ChunkSize)
}

// complete takes the names from the arguments.
func (s *spokeSelection) complete(args []string) { s.Names = args }

// validate rejects a bad selection before any request.
func (s *spokeSelection) validate(f *cli.Factory) error {
	if err := cli.ValidateNames(cli.ClusterName, s.Names...); err != nil {
		return err
	}
	if err := f.ValidateNamespace(); err != nil {
		return err
	}
	if err := cli.ValidateChunkSize(s.ChunkSize); err != nil {
		return err
	}
	if err := cli.ValidateSelector("--selector", s.Selector); err != nil {
		return err
	}
	if s.Selector != "" && len(s.Names) > 0 {
		return exitcode.UsageErrorf("-l selects spokes: name them or select them, not both")
	}
	return nil
}
