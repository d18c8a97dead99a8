// Package spoke is `kubectl spoke`: the lifecycle of the spoke clusters of an
// Open Cluster Management hub, driven through the FleetConfig Spoke resource.
//
// # Layers
//
//   - spoke/hubclient: every request sent to the hub, reads, lists, watches
//     and writes, each write with its guard (see Writes). It knows the
//     hub's kinds, not the commands; depguard keeps the client-go clients
//     out of this package's command files.
//   - spoke/probe: a spoke's own API server, for health --deep.
//   - spoke/health: the rules of a healthy spoke (problems, what --deep
//     could not check, a stored credential's state), judged on what the
//     health command read: no request, no printing, so each rule is a pure
//     function its tests reach directly.
//   - this package: HubClient wraps hubclient.Client with what several
//     commands check and refuse alike, in words that name commands and
//     roles, and the commands on top:
//   - the commands, one file each, wire flags to a plan: add, forceremove,
//     health, joincommand, list (list and get), prepare, remove, rotate,
//     set, status, valuesdiff; a long plan is in <command>plan.go,
//     removal.go holds what remove and force-remove share, and
//     preparerevoke.go is prepare --revoke;
//   - what several commands share, in files named for it: steps.go (the
//     steps a report lists), selection.go (names, -l, -A), target.go (the
//     values file or release written), spokekubeconfig.go (the kubeconfig
//     given), row.go (list's rows), render.go (a Spoke as the chart renders
//     it), record.go (what kubectl spoke records on a Spoke);
//   - the hub's checks: hub.go (HubClient, the stored kubeconfig, the works
//     that block a removal), listed.go (the lean lists of list and health),
//     healthread.go (what else health reads: leases, add-ons, each stored
//     kubeconfig for --deep), healthassess.go (the rows health judges,
//     each spoke's reads joined), access.go (the permissions a command asks
//     before writing, and the Role to name when one is missing), wait.go
//     (watches until joined or gone), outofband.go, samecluster.go,
//     secretusers.go.
//
// # Writes
//
// No write overwrites what changed since it was read. The hub's writes are
// hubclient's, which refuses one sent without its guard:
//
//   - a Spoke is created only when absent (CreateSpoke); patched with a JSON
//     patch whose tests pin what the plan read (PatchSpoke: the record; the
//     force-delete annotation behind tests of the UID and its absence), or
//     with a merge patch carrying the resourceVersion read
//     (SetSpokeFields); deleted under a UID precondition (DeleteSpoke);
//   - a kubeconfig Secret is created, or updated carrying the
//     resourceVersion read (WriteSecret);
//   - a ManagedCluster is accepted by a JSON patch testing its
//     resourceVersion (AcceptCluster), a CSR approved carrying the
//     resourceVersion read (UpdateCSRApproval) and judged again here on a
//     conflict (joincommand.go);
//   - a HelmRelease is server-side applied with the live resourceVersion as
//     precondition (ApplyHelmRelease); a Helm release is upgraded from the
//     revision read only (helmupgrade.go, through helmrelease);
//   - prepare writes on the spoke, not the hub: it creates, or updates
//     under the resourceVersion read; --revoke deletes under a UID and
//     resourceVersion precondition (preparerevoke.go).
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
