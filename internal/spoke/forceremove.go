package spoke

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// ForceRemoveOptions are the options of `kubectl spoke force-remove`.
type ForceRemoveOptions struct {
	removalOptions
	Yes             bool
	EvenIfReachable bool
}

// NewCmdForceRemove builds `kubectl spoke force-remove`.
func NewCmdForceRemove(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ForceRemoveOptions{removalOptions: newRemovalOptions(f, streams)}
	cmd := &cobra.Command{
		Use:   "force-remove NAME",
		Short: "Remove a spoke that cannot be reached any more, without its cooperation",
		Long: cli.LongDesc(`
			Remove a spoke whose cluster is gone or unreachable: the Spoke gets the
			annotation fleetconfig.open-cluster-management.io/force-delete=true
			and is deleted, and the hub cleans up its side (ManifestWorks,
			ManagedCluster, namespace) without waiting for the cluster to unjoin.
			The command waits until that is done (at most --timeout). Whatever
			was on the cluster stays there; the command prints what that may be
			and the commands that remove it there, under --dry-run and when the
			wait runs out too.

			It goes ahead only when the hub cannot reach the spoke: the hub
			reports its ManagedCluster's Available condition False or Unknown.
			That view alone decides: a dial from this machine that fails says
			nothing about the hub's own path to the spoke, so it never makes a
			reachable spoke unreachable. Refused (exit 3) for a spoke the hub
			reports available (remove it with kubectl spoke remove, or pass
			--even-if-reachable), and when that cannot be found out: no
			ManagedCluster, no Available condition yet, or it cannot be read
			(403, 503, ...). The confirmation (skipped with --yes) shows the
			condition, its reason and since when; the check runs again after it,
			so a spoke that came back meanwhile is not removed. A spoke whose
			hub only lost contact (Unknown) gets the reminder that a
			disconnected spoke recovers by itself once connectivity returns.

			The stored kubeconfig is not needed: in addon mode it may have been
			purged once the agent took over. Whatever stays on the cluster is
			removed there with the cluster's own admin kubeconfig.

			With --release NAME the hub's Helm release is upgraded after the
			delete with only the spoke's fleetConfig.spokes entry taken out, as
			remove does it. With --values (or --helmrelease) the entry
			is removed from that file too, as remove does; with --helmrelease
			and --apply the edited HelmRelease is applied to the hub after the
			delete, as remove applies it (refused, exit 3 and nothing written,
			when the live one differs from the file outside spec.values), and
			the wait waits for it to be Ready first. A spoke a Helm release
			renders gets a warning, since the next helm upgrade would register it
			again: without a file, from the release named on the Spoke; with a
			file that has no entry for it, because the release's values must
			then live elsewhere.`),
		Example: templates.Examples(`
			# The cluster was destroyed; clean up the hub
			kubectl spoke force-remove spoke-3 --yes

			# The same, and its entry out of the hub's release (an upgrade with only that changed)
			kubectl spoke force-remove spoke-3 --yes --release mural

			# The same, and its entry out of the values file
			kubectl spoke force-remove spoke-3 --yes --values values.yaml`),
		Args:              cli.ExactArgs(1, "NAME"),
		ValidArgsFunction: cli.ResourceNames(f, spokeResourceName),
		RunE:              cli.RunE(o, o.Complete),
	}
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation.")
	cmd.Flags().BoolVar(&o.EvenIfReachable, "even-if-reachable", false, "Force-remove even a spoke that is available and answers.")
	o.addFlags(cmd, "How long to wait for the hub to finish (0: no limit).")
	return cmd
}

// Run checks that the hub cannot reach the spoke, confirms showing why,
// checks again, then carries out the removal.
func (o *ForceRemoveOptions) Run(ctx context.Context) error {
	return o.run(ctx, removal{
		Kind:  "SpokeForceRemove",
		Check: o.refuseReachable,
		Force: true,
		Wait:  true,
		Confirm: func(ctx context.Context, evidence []string) error {
			q := fmt.Sprintf("Force-remove spoke %s, leaving whatever is on its cluster? (%s)", o.Name, strings.Join(evidence, "; "))
			return cli.Confirm(ctx, o.IOStreams, q, o.Yes || o.DryRun == cli.DryRunServer)
		},
		AfterTimeout: "run the same command again to keep waiting",
	})
}

// refuseReachable refuses a spoke the hub does not show unreachable,
// unless --even-if-reachable; it returns the evidence.
func (o *ForceRemoveOptions) refuseReachable(ctx context.Context, hub *HubClient, s *fleetconfig.Spoke) ([]string, error) {
	var r Reachability
	r.ManagedCluster, r.Err = hub.ManagedCluster(ctx, s.Name)
	unreachable, evidence, err := r.Verdict()
	switch {
	case o.EvenIfReachable && err == nil:
		return []string{evidence + "; --even-if-reachable given"}, nil
	case o.EvenIfReachable:
		return []string{fmt.Sprintf("the hub's view could not be read (%v); --even-if-reachable given", err)}, nil
	case err != nil:
		return nil, exitcode.RefusedErrorf("cannot tell whether the hub can reach spoke %s: %w; nothing was changed: fix that and run this again, or pass --even-if-reachable", o.Name, err)
	case !unreachable:
		return nil, exitcode.RefusedErrorf("spoke %s is reachable: %s; nothing was changed: remove it gracefully with kubectl spoke remove %s, or pass --even-if-reachable", o.Name, evidence, o.Name)
	}
	out := []string{evidence}
	if hint := disconnectedHint(r.ManagedCluster); hint != "" {
		out = append(out, hint)
	}
	return out, nil
}

// Reachability is the hub's view of whether it can reach a spoke: its
// ManagedCluster, kept up to date by the lease the spoke's agent renews.
// Only that view decides: the operator's machine failing to dial the
// spoke's API server says nothing about the hub's path to it (another
// network, a firewall, a stale kubeconfig), and a reachable spoke must
// never be force-removed behind its agent's back.
type Reachability struct {
	// ManagedCluster is nil when the hub has none.
	ManagedCluster *ocm.ManagedCluster
	// Err is the failure to read it.
	Err error
}

// Verdict decides whether the hub cannot reach the spoke: its
// ManagedCluster's Available condition is False or Unknown. The evidence
// says so, with the condition's reason, message and time. Anything short
// of that view (no ManagedCluster, no condition yet, a read error) is an
// error: the check could not check.
func (r Reachability) Verdict() (unreachable bool, evidence string, err error) {
	if r.Err != nil {
		return false, "", r.Err
	}
	if r.ManagedCluster == nil {
		return false, "", errors.New("the hub has no ManagedCluster for it, so no view of whether it can reach the cluster (a spoke that never joined needs no force: kubectl spoke remove)")
	}
	c := availableCondition(r.ManagedCluster)
	if c == nil {
		return false, "", fmt.Errorf("the hub has not judged whether it can reach the cluster yet (its ManagedCluster has no %s condition)", ocm.ManagedClusterConditionAvailable)
	}
	evidence = fmt.Sprintf("the hub reports its ManagedCluster's Available condition %s since %s", c.Status, c.LastTransitionTime.UTC().Format(time.RFC3339))
	if c.Reason != "" || c.Message != "" {
		evidence += fmt.Sprintf(" (%s: %s)", c.Reason, c.Message)
	}
	return c.Status == metav1.ConditionFalse || c.Status == metav1.ConditionUnknown, evidence, nil
}

func availableCondition(mc *ocm.ManagedCluster) *metav1.Condition {
	for i := range mc.Status.Conditions {
		if mc.Status.Conditions[i].Type == ocm.ManagedClusterConditionAvailable {
			return &mc.Status.Conditions[i]
		}
	}
	return nil
}

// disconnectedHint is the product's word on a spoke whose hub lost
// contact (Available Unknown): it comes back by itself ("" otherwise).
func disconnectedHint(mc *ocm.ManagedCluster) string {
	if mc == nil {
		return ""
	}
	if c := availableCondition(mc); c == nil || c.Status != metav1.ConditionUnknown {
		return ""
	}
	return "a spoke that is only disconnected recovers by itself: once connectivity returns its agents reconnect to the hub, pick up pending changes and report again, without re-registering; force-remove only a spoke lost for good"
}

// Leftovers lists what a force-removed spoke may leave on its cluster, with
// the commands to remove it there.
func Leftovers(s *fleetconfig.Spoke) []string {
	out := []string{
		"the klusterlet: kubectl --kubeconfig SPOKE.kubeconfig delete klusterlet klusterlet",
		"the agent namespaces: kubectl --kubeconfig SPOKE.kubeconfig delete namespace open-cluster-management-agent open-cluster-management-agent-addon open-cluster-management",
		"workloads that ManifestWorks applied there (AppliedManifestWorks): kubectl --kubeconfig SPOKE.kubeconfig get appliedmanifestworks",
	}
	if ref := s.Spec.Kubeconfig.SecretReference; ref != nil && !s.Spec.CleanupConfig.PurgeKubeconfigSecret {
		out = append(out, fmt.Sprintf("on the hub, the kubeconfig secret: kubectl delete secret -n %s %s", s.Namespace, ref.Name))
	}
	return out
}
