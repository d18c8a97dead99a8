// Package park is `kubectl park`: parking a Cluster API cluster's workers at
// zero, bringing them back, and reading the cluster's health.
package park

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/cli"
)

// NewCmdPark builds `kubectl park` and its subcommands.
func NewCmdPark(streams genericiooptions.IOStreams) *cobra.Command {
	root, f := cli.NewRoot(cli.Plugin{
		Name:  "park",
		Short: "Park a Cluster API cluster's workers at zero, resume them, read its health",
		Long: templates.LongDesc(`
			Stop paying for a Cluster API cluster's workers without losing the
			cluster: park scales every worker pool to zero and records what it
			was, resume brings back exactly that.

			Run it against the platform cluster, in the namespace of the
			cluster's Environment (-n).`),
		Example: templates.Examples(`
			# Park the cluster "app" and wait until its workers are gone
			kubectl park cluster app -n dynamo-prod --wait

			# Bring back exactly what was parked
			kubectl park resume app -n dynamo-prod --wait`),
	}, streams)
	root.AddCommand(
		NewCmdParkCluster(f, streams),
		NewCmdResume(f, streams),
		NewCmdList(f, streams),
		NewCmdStatus(f, streams),
	)
	return root
}

// validateTarget checks a Cluster's name and namespace before any request.
func validateTarget(name, namespace string) error {
	if err := cli.ValidateNames(cli.CAPIClusterName, name); err != nil {
		return err
	}
	return cli.ValidateNames(cli.NamespaceName, namespace)
}
