package spoke

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
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
		Long: templates.LongDesc(`
			Remove a spoke whose cluster is gone or unreachable: the Spoke gets the
			annotation fleetconfig.open-cluster-management.io/force-delete=true
			and is deleted, and the hub cleans up its side (ManifestWorks,
			ManagedCluster, namespace) without waiting for the cluster to unjoin.
			The command waits until that is done (at most --timeout). Whatever
			was on the cluster stays there; the command prints what that may be
			and how to remove it.

			It goes ahead only when the spoke is shown to be unreachable: the hub
			reports its ManagedCluster's Available condition False or Unknown, or
			its API server does not answer at all (connection failed or timed
			out). Refused (exit 3) for a spoke that answers (remove it with
			kubectl spoke remove, or pass --even-if-reachable), and when that
			cannot be found out: the ManagedCluster or the kubeconfig secret
			cannot be read (403, 503, ...) or the API server answers with an
			error. Asks for confirmation unless --yes.

			With --values (or --helmrelease) the spoke's fleetConfig.spokes entry
			is removed from that file too, as remove does. A spoke a Helm release
			renders gets a warning, since the next helm upgrade would register it
			again: without a file, from the release named on the Spoke; with a
			file that has no entry for it, because the release's values must
			then live elsewhere.`),
		Example: templates.Examples(`
			# The cluster was destroyed; clean up the hub
			kubectl spoke force-remove spoke-3 --yes

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

// Run checks that the spoke is unreachable, confirms, then carries out the
// removal.
func (o *ForceRemoveOptions) Run(ctx context.Context) error {
	return o.run(ctx, removal{
		Kind:  "SpokeForceRemove",
		Check: o.refuseReachable,
		Force: true,
		Wait:  true,
		Confirm: func(ctx context.Context) error {
			return cli.Confirm(ctx, o.IOStreams, fmt.Sprintf("Force-remove spoke %s, leaving whatever is on its cluster?", o.Name), o.Yes || o.DryRun == cli.DryRunServer)
		},
		AfterTimeout: "run the same command again to keep waiting",
	})
}

// refuseReachable refuses a spoke not shown to be unreachable, unless
// --even-if-reachable.
func (o *ForceRemoveOptions) refuseReachable(ctx context.Context, hub *Hub, s *fleetconfig.Spoke) error {
	if o.EvenIfReachable {
		return nil
	}
	unreachable, reason, err := hub.reachability(ctx, s).Verdict()
	if err != nil {
		return cli.Refusedf("cannot tell whether spoke %s is unreachable: %w; nothing was changed: fix that and run this again, or pass --even-if-reachable", o.Name, err)
	}
	if !unreachable {
		return cli.Refusedf("spoke %s is reachable (%s); nothing was changed: remove it gracefully with kubectl spoke remove %s, or pass --even-if-reachable", o.Name, reason, o.Name)
	}
	return nil
}

// Reachability is what force-remove found out about whether a spoke can
// be reached: the hub's view (its ManagedCluster) and, when the hub still
// calls it available, whether its API server answers.
type Reachability struct {
	// ManagedCluster is nil when the hub has none.
	ManagedCluster    *ocm.ManagedCluster
	ManagedClusterErr error
	// KubeconfigErr is the failure to read the stored kubeconfig.
	KubeconfigErr error
	APIServer     string
	// APIServerErr is nil when the API server answered.
	APIServerErr error
}

// reachability reads what Verdict decides on; it asks the spoke's API server
// only when the hub does not already show the spoke unavailable.
func (h *Hub) reachability(ctx context.Context, s *fleetconfig.Spoke) Reachability {
	var r Reachability
	r.ManagedCluster, r.ManagedClusterErr = h.ManagedCluster(ctx, s.Name)
	if r.ManagedClusterErr != nil || hubSeesUnavailable(r.ManagedCluster) != "" {
		return r
	}
	kc, _, err := h.StoredKubeconfig(ctx, s)
	if err != nil {
		r.KubeconfigErr = err
		return r
	}
	r.APIServer = kc.Server
	_, r.APIServerErr = kc.Reach(ctx)
	return r
}

// hubSeesUnavailable is the ManagedCluster's Available status when it is
// False or Unknown: the hub lost the spoke.
func hubSeesUnavailable(mc *ocm.ManagedCluster) string {
	if mc == nil {
		return ""
	}
	// A cluster without the condition yet has not been judged: no evidence.
	for _, c := range mc.Status.Conditions {
		if c.Type == ocm.ManagedClusterConditionAvailable && (c.Status == metav1.ConditionFalse || c.Status == metav1.ConditionUnknown) {
			return string(c.Status)
		}
	}
	return ""
}

// Verdict decides whether a spoke is unreachable. Only positive evidence
// counts: the hub reports it not available, or its API server does not
// answer at all (no connection, or a timeout). Any other failure to find out
// (403, 503, an unreadable secret, a server that answers with an error) is
// an error: the check could not check.
func (r Reachability) Verdict() (unreachable bool, reason string, err error) {
	if r.ManagedClusterErr != nil {
		return false, "", r.ManagedClusterErr
	}
	if st := hubSeesUnavailable(r.ManagedCluster); st != "" {
		return true, "the hub reports its ManagedCluster's Available is " + st, nil
	}
	if r.KubeconfigErr != nil {
		return false, "", fmt.Errorf("the hub still reports it available, and its API server cannot be asked: %w", r.KubeconfigErr)
	}
	hubView := "the hub reports its ManagedCluster available"
	if r.ManagedCluster == nil {
		hubView = "the hub has no ManagedCluster for it"
	}
	switch {
	case r.APIServerErr == nil:
		return false, hubView + " and its API server " + r.APIServer + " answers", nil
	case noAnswer(r.APIServerErr):
		return true, "its API server " + r.APIServer + " does not answer: " + r.APIServerErr.Error(), nil
	}
	return false, "", fmt.Errorf("%s, and its API server %s answered with an error, which does not show it is gone: %w", hubView, r.APIServer, r.APIServerErr)
}

// noAnswer says whether err means nothing answered: the connection failed
// or timed out. An HTTP or TLS answer, even an error, means something is there.
func noAnswer(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return false
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns) && dns.IsNotFound
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
