// Package fleetdrain is `kubectl fleetdrain`: taking capacity out of service,
// nodes inside a cluster and whole spokes out of a fleet's placements.
package fleetdrain

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/cli"
)

// managedClusters is the resource that cluster names complete from (cluster,
// uncordon cluster).
const managedClusters = "managedclusters.cluster.open-cluster-management.io"

// NewCmdFleetdrain builds `kubectl fleetdrain` and its subcommands.
func NewCmdFleetdrain(streams genericiooptions.IOStreams) *cobra.Command {
	root, f := cli.NewRoot(cli.Plugin{
		Name:  "fleetdrain",
		Short: "Drain nodes of a cluster, or a spoke out of the fleet, and give them back",
		Long: cli.LongDesc(`
			Take capacity out of service safely: drain nodes like kubectl drain
			(several at once, within every PodDisruptionBudget, with a plan first),
			or drain a whole spoke cluster out of the fleet's placements.`),
		Example: templates.Examples(`
			# Drain two nodes at once, within every PodDisruptionBudget
			kubectl fleetdrain node worker-1 worker-2 --ignore-daemonsets --max-concurrent 2

			# Give a node back
			kubectl fleetdrain uncordon node worker-1`),
	}, streams)
	root.AddCommand(NewCmdNode(f, streams), NewCmdCluster(f, streams), newCmdUncordon(f, streams), NewCmdCheck(f, streams))
	return root
}
