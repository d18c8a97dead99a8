package spoke

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// RemoveOptions are the options of `kubectl spoke remove`.
type RemoveOptions struct {
	removalOptions
	Wait bool
}

// NewCmdRemove builds `kubectl spoke remove`.
func NewCmdRemove(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &RemoveOptions{removalOptions: newRemovalOptions(f, streams)}
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Unregister a spoke the graceful way, after checking nothing blocks it",
		Long: cli.LongDesc(`
			Remove a spoke from the fleet: the Spoke is deleted, the hub takes the
			spoke out of its placements and disables its add-ons, and then the
			cluster is unjoined and its klusterlet removed. In addon mode (the
			chart's default) the fleetconfig-controller-agent on the spoke does
			that part; the hub does it itself, with the stored kubeconfig, in
			unified mode, for hub-as-spoke, and before the agent took over. Last
			the hub deletes the ManagedCluster and its namespace.

			Refused (exit 3, nothing changed) while ManifestWorks in the cluster's
			namespace would keep the hub waiting forever: works no placement or
			add-on owns (listed with the command to delete them), and placement
			works unless cleanupConfig.forceClusterDrain is on (run kubectl
			fleetdrain cluster first) or whose placements tolerate the
			workload-cleanup taint the hub then adds. Refused too when those works
			cannot be listed (the hub does not serve ManifestWorks, or the list
			fails): what cannot be checked is never taken for no works. Refused
			as well when the hub must unjoin the cluster itself (unified mode,
			hub-as-spoke, addon mode before the agent took over) and the stored
			kubeconfig cannot do it: its secret is gone or unreadable, or its
			credential has expired; rotate-kubeconfig first, or the removal
			would wait forever.

			With --release NAME (the seed's path) the hub's Helm release is
			upgraded after the delete, from the chart its record holds, with
			only the spoke's fleetConfig.spokes entry taken out and every other
			value kept, so the job the upgrade runs does not register the spoke
			again; --values, if given, loses the entry too. A release that is
			pending or failed, or whose chart renders no fleetConfig.spokes, is
			refused before anything changes (exit 3).

			With --values or --helmrelease alone the spoke's entry leaves that file
			too, and the command names the step that must follow: the helm
			upgrade of the release with that file (or, for Flux, applying the
			HelmRelease), without which the next upgrade registers the spoke
			again. A spoke a Helm release renders gets a warning, since the next
			helm upgrade would register it again: without a file, from the
			release named on the Spoke; with a file that has no entry for it,
			because the release's values must then live elsewhere.

			With --helmrelease and --apply (a hub whose release Flux manages),
			after deleting the Spoke it server-side applies the edited
			HelmRelease to the hub under its own field manager, so Flux upgrades
			the release without the entry now. It refuses (exit 3, nothing
			written) when there is no such HelmRelease on the hub, or when the
			live one differs from the file outside spec.values. Commit the file
			where Flux reads it: Flux applies it from Git again.

			With --wait it waits (at most --timeout) for the applied HelmRelease
			to be Ready, then until the Spoke, the ManagedCluster and the
			cluster namespace are gone. A spoke already gone is not
			an error: running it again finishes the job.`),
		Example: templates.Examples(`
			# The seed's path: delete the Spoke, upgrade the hub's release without its entry, wait until it is gone
			kubectl spoke remove spoke-2 --release mural --wait

			# Flux: the entry out of the HelmRelease manifest, applied to the hub
			kubectl spoke remove spoke-2 --helmrelease mural.yaml --apply --wait

			# Remove spoke-2 and its values entry, and wait until it is gone
			kubectl spoke remove spoke-2 --values values.yaml --wait

			# Only check what would happen
			kubectl spoke remove spoke-2 --dry-run=client`),
		Args:              cli.ExactArgs(1, "NAME"),
		ValidArgsFunction: cli.ResourceNames(f, spokeResourceName),
		RunE:              cli.RunE(o, o.Complete),
	}
	cmd.Flags().BoolVar(&o.Wait, "wait", false, "Wait until the Spoke, its ManagedCluster and the cluster namespace are gone.")
	o.addFlags(cmd, "How long --wait waits (0: no limit).")
	return cmd
}

// Run checks that nothing blocks the removal, then carries it out.
func (o *RemoveOptions) Run(ctx context.Context) error {
	return o.run(ctx, removal{
		Kind:         "SpokeRemove",
		Check:        refuseBlockedRemoval,
		Wait:         o.Wait,
		AfterTimeout: fmt.Sprintf("the Spoke is marked for deletion: see kubectl spoke status %s, and if the cluster is gone for good, kubectl spoke force-remove %s", o.Name, o.Name),
	})
}

// refuseBlockedRemoval refuses, before anything changes, a removal the hub
// would wait on forever (FindRemovalBlockers).
func refuseBlockedRemoval(ctx context.Context, hub *HubClient, s *fleetconfig.Spoke) ([]string, error) {
	if err := hub.refuseUnusableCredential(ctx, s, time.Now()); err != nil {
		return nil, err
	}
	works, err := hub.blockingWorks(ctx, s.Name)
	if err != nil {
		return nil, err
	}
	b, err := hub.removalBlockers(ctx, s, works)
	if err != nil {
		return nil, exitcode.RefusedErrorf("%w; nothing was changed: cannot tell whether the placement works would leave", err)
	}
	return nil, b.Refusal(s.Name)
}

// removalBlockers reads what FindRemovalBlockers needs beyond the works:
// with forceClusterDrain and placement works, the placements and the
// ManagedCluster's taints.
func (h *HubClient) removalBlockers(ctx context.Context, s *fleetconfig.Spoke, works []ocm.ManifestWork) (RemovalBlockers, error) {
	var placements []ocm.Placement
	var taints []ocm.Taint
	if s.Spec.CleanupConfig.ForceClusterDrain && slices.ContainsFunc(works, func(w ocm.ManifestWork) bool { return w.IsPlacementWork() }) {
		var err error
		if placements, err = h.Placements(ctx); err != nil {
			return RemovalBlockers{}, err
		}
		mc, err := h.ManagedCluster(ctx, s.Name)
		if err != nil {
			return RemovalBlockers{}, err
		}
		if mc != nil {
			taints = mc.Spec.Taints
		}
	}
	return FindRemovalBlockers(s, works, placements, taints, time.Now()), nil
}

// Subjects is the Spoke removed, for -o name.
func (r RemoveReport) Subjects() []string { return []string{subject(r.Metadata.Name, false)} }
