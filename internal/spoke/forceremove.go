package spoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
)

// ForceRemoveOptions are the options of `kubectl spoke force-remove`.
type ForceRemoveOptions struct {
	Name            string
	Yes             bool
	EvenIfReachable bool
	// ValuesFile and ReleaseFile, when given, lose the spoke's entry.
	ValuesFile  string
	ReleaseFile string
	Timeout     time.Duration
	DryRun      cli.DryRun
	Output      *cli.Output

	f *cli.Factory
	genericiooptions.IOStreams
}

// NewCmdForceRemove builds `kubectl spoke force-remove`.
func NewCmdForceRemove(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ForceRemoveOptions{Timeout: 5 * time.Minute, Output: cli.NewOutput(), f: f, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "force-remove NAME",
		Short: "Remove a spoke that cannot be reached any more, without its cooperation",
		Long: templates.LongDesc(`
			Remove a spoke whose cluster is gone or unreachable: the hub cleans up
			its side (ManifestWorks, ManagedCluster, namespace) without waiting for
			the cluster to unjoin. Whatever was on the cluster stays there; the
			command prints what that may be and how to remove it.

			It goes ahead only when the spoke is shown to be unreachable: the hub
			reports its ManagedCluster's Available condition False or Unknown, or
			its API server does not answer at all (connection failed or timed
			out). Refused (exit 3) for a spoke that answers (remove it with
			kubectl spoke remove, or pass --even-if-reachable), and when that
			cannot be found out: the ManagedCluster or the kubeconfig secret
			cannot be read (403, 503, ...) or the API server answers with an
			error. Asks for confirmation unless --yes.

			With --values (or --helmrelease) the spoke's fleetConfig.spokes entry
			is removed from that file too, as remove does; without, a spoke that
			Helm renders gets a warning: the next helm upgrade would register it
			again.`),
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
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "How long to wait for the hub to finish (0: no limit).")
	cmd.Flags().StringVar(&o.ValuesFile, "values", "", "Helm values file to remove the spoke's fleetConfig.spokes entry from.")
	cmd.Flags().StringVar(&o.ReleaseFile, "helmrelease", "", "Flux HelmRelease manifest to remove the spoke's entry from.")
	_ = cmd.MarkFlagFilename("values", "yaml", "yml")
	_ = cmd.MarkFlagFilename("helmrelease", "yaml", "yml")
	cli.AddDryRunFlag(cmd)
	o.Output.AddFlags(cmd)
	return cmd
}

// Complete reads the arguments and the dry-run strategy.
func (o *ForceRemoveOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Name = args[0]
	var err error
	o.DryRun, err = cli.GetDryRun(cmd)
	return err
}

// Validate rejects bad input before any request.
func (o *ForceRemoveOptions) Validate() error {
	if err := cli.ValidateNames(cli.ClusterName, o.Name); err != nil {
		return err
	}
	if err := o.f.ValidateNamespace(); err != nil {
		return err
	}
	if o.ValuesFile != "" && o.ReleaseFile != "" {
		return cli.UsageErrorf("--values and --helmrelease are two ways to say where the entry is: give one")
	}
	if o.Timeout < 0 {
		return cli.UsageErrorf("--timeout must not be negative")
	}
	return o.Output.Validate()
}

// Run checks that the spoke is unreachable, confirms, annotates, deletes and waits.
func (o *ForceRemoveOptions) Run(ctx context.Context) error {
	hub, err := NewHub(ctx, o.f)
	if err != nil {
		return err
	}
	r := &RemoveReport{ReportMeta: api.NewNamespacedReportMeta("SpokeForceRemove", hub.Namespace, o.Name), DryRun: cli.DryRunName(o.DryRun)}
	s, err := hub.Spoke(ctx, o.Name)
	if err != nil {
		return err
	}
	if s == nil {
		if err := hub.RefuseOutOfBand(ctx, o.Name); err != nil {
			return err
		}
		r.Steps = append(r.Steps, Step{"spoke " + hub.Namespace + "/" + o.Name, "already deleted"})
		return o.Output.Print(o.Out, r, r.table)
	}
	if err := refuseComputePool(s); err != nil {
		return err
	}
	if !o.EvenIfReachable {
		unreachable, reason, err := hub.reachability(ctx, s).Verdict()
		if err != nil {
			return cli.Refusedf("cannot tell whether spoke %s is unreachable: %w; nothing was changed: fix that and run this again, or pass --even-if-reachable", o.Name, err)
		}
		if !unreachable {
			return cli.Refusedf("spoke %s is reachable (%s); nothing was changed: remove it gracefully with kubectl spoke remove %s, or pass --even-if-reachable", o.Name, reason, o.Name)
		}
	}
	edit, err := planValuesRemoval(o.ValuesFile, o.ReleaseFile, o.Name)
	if err != nil {
		return err
	}
	if err := hub.preflight(ctx, o.DryRun, hub.spokeAccess("patch", "delete"), hub.waitGoneAccess()); err != nil {
		return err
	}
	if o.DryRun == cli.DryRunClient {
		r.Steps = append(r.Steps, Step{"annotation " + fleetconfig.ForceDeleteAnnotation, "would be set"}, Step{"spoke " + hub.Namespace + "/" + o.Name, "would be deleted"})
		if err := o.editValues(r, edit, s); err != nil {
			return err
		}
		return o.Output.Print(o.Out, r, r.table)
	}
	if err := cli.Confirm(ctx, o.IOStreams, fmt.Sprintf("Force-remove spoke %s, leaving whatever is on its cluster?", o.Name), o.Yes || o.DryRun == cli.DryRunServer); err != nil {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{fleetconfig.ForceDeleteAnnotation: "true"}}})
	spokes := hub.Dynamic.Resource(fleetconfig.SpokeResource).Namespace(hub.Namespace)
	if _, err := spokes.Patch(ctx, o.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager, DryRun: cli.DryRunOption(o.DryRun)}); err != nil {
		return fmt.Errorf("annotating Spoke %s/%s: %w; nothing was changed", hub.Namespace, o.Name, err)
	}
	r.Steps = append(r.Steps, Step{"annotation " + fleetconfig.ForceDeleteAnnotation, "set"})
	if s.DeletionTimestamp == nil {
		uid := s.UID
		if err := spokes.Delete(ctx, o.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, DryRun: cli.DryRunOption(o.DryRun)}); err != nil {
			return fmt.Errorf("deleting Spoke %s/%s: %w; it is annotated for force-delete: run this again", hub.Namespace, o.Name, err)
		}
	}
	r.Steps = append(r.Steps, Step{"spoke " + hub.Namespace + "/" + o.Name, "deleted"})
	if err := o.editValues(r, edit, s); err != nil {
		return fmt.Errorf("%w; the Spoke was deleted: remove the entry by hand", err)
	}
	if o.DryRun == cli.DryRunServer {
		return o.Output.Print(o.Out, r, r.table)
	}
	if err := hub.WaitGone(ctx, o.Name, cli.NewDeadline(o.Timeout), cli.NewProgress(o.ErrOut)); err != nil {
		_ = o.Output.Print(o.Out, r, r.table)
		return fmt.Errorf("%w; run the same command again to keep waiting", err)
	}
	r.Steps = append(r.Steps, Step{"spoke, ManagedCluster and namespace " + o.Name, "gone"})
	r.Leftovers = Leftovers(s)
	return o.Output.Print(o.Out, r, r.table)
}

// editValues removes the spoke's values entry when a file was given (only
// says so under a dry run), and otherwise warns when Helm renders the spoke.
func (o *ForceRemoveOptions) editValues(r *RemoveReport, edit *valuesRemoval, s *fleetconfig.Spoke) error {
	if edit != nil {
		step, err := edit.apply(o.DryRun)
		if err != nil {
			return err
		}
		r.Steps = append(r.Steps, step)
		return nil
	}
	if release := HelmRelease(s); release != "" {
		w := helmWarning(o.Name, release)
		r.Warnings = append(r.Warnings, w)
		fmt.Fprintln(o.ErrOut, w)
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
