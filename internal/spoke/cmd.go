// Package spoke is `kubectl spoke`: the lifecycle of the spoke clusters of an
// Open Cluster Management hub, driven through the FleetConfig Spoke resource.
package spoke

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/cli"
)

// spokeResourceName is the resource completion looks up for NAME arguments.
const spokeResourceName = "spokes.fleetconfig.open-cluster-management.io"

// NewCmdSpoke builds `kubectl spoke` and its subcommands.
func NewCmdSpoke(streams genericiooptions.IOStreams) *cobra.Command {
	root, f := cli.NewRoot(cli.Plugin{
		Name:  "spoke",
		Short: "Add, inspect, rotate and remove the spoke clusters of a fleet hub",
		Long: cli.LongDesc(`
			Manage the spoke clusters registered to an Open Cluster Management hub
			through FleetConfig Spoke resources.

			Run it against the hub cluster: the kubeconfig flags select the hub,
			and -n the namespace of the fleet's release (by default the namespace
			of the fleet's Hub resource).

			Spokes a PaletteAI Compute Pool registers are left to it: one with an
			owner reference of kind ComputePool, or the label
			spectrocloud.com/compute-pool, is refused (exit 3) by every command
			that changes spokes. FleetConfig's addon mode (the chart's default)
			and unified mode are both supported; see add and status.`),
		Example: templates.Examples(`
			# Register a cluster and wait until it joined
			kubectl spoke add spoke-2 --spoke-kubeconfig spoke-2.kubeconfig --values values.yaml --apply --wait

			# See every spoke
			kubectl spoke list`),
	}, streams)
	root.AddCommand(
		NewCmdAdd(f, streams),
		NewCmdList(f, streams),
		NewCmdGet(f, streams),
		NewCmdStatus(f, streams),
		NewCmdRemove(f, streams),
		NewCmdForceRemove(f, streams),
		NewCmdRotateKubeconfig(f, streams),
		NewCmdSet(f, streams),
		NewCmdValuesDiff(f, streams),
		NewCmdHealth(f, streams),
		NewCmdJoinCommand(f, streams),
		NewCmdPrepare(f, streams),
	)
	return root
}
