package spoke

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
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
	Timeout         time.Duration
	DryRun          cli.DryRun
	Output          *cli.Output

	f *cli.Factory
	genericiooptions.IOStreams
}

// NewCmdForceRemove builds `kubectl spoke force-remove`.
func NewCmdForceRemove(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ForceRemoveOptions{Timeout: 5 * time.Minute, Output: cli.NewOutput("json", "yaml"), f: f, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "force-remove NAME",
		Short: "Remove a spoke that cannot be reached any more, without its cooperation",
		Long: templates.LongDesc(`
			Remove a spoke whose cluster is gone or unreachable: the hub cleans up
			its side (ManifestWorks, ManagedCluster, namespace) without waiting for
			the cluster to unjoin. Whatever was on the cluster stays there; the
			command prints what that may be and how to remove it.

			Refused (exit 3) for a spoke whose ManagedCluster is available and
			whose API server answers: remove it with kubectl spoke remove, or pass
			--even-if-reachable. Asks for confirmation unless --yes.`),
		Example: templates.Examples(`
			# The cluster was destroyed; clean up the hub
			kubectl spoke force-remove spoke-3 --yes`),
		Args:              cli.ExactArgs(1, "NAME"),
		ValidArgsFunction: cli.ResourceNames(f, spokeResourceName),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			var err error
			if o.DryRun, err = cli.GetDryRun(cmd); err != nil {
				return err
			}
			if o.Timeout < 0 {
				return cli.UsageErrorf("--timeout must not be negative")
			}
			if err := o.Output.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation.")
	cmd.Flags().BoolVar(&o.EvenIfReachable, "even-if-reachable", false, "Force-remove even a spoke that is available and answers.")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "How long to wait for the hub to finish (0: no limit).")
	cli.AddDryRunFlag(cmd)
	o.Output.AddFlags(cmd)
	return cmd
}

// Run checks that the spoke is unreachable, confirms, annotates, deletes and waits.
func (o *ForceRemoveOptions) Run(ctx context.Context) error {
	hub, err := NewHub(ctx, o.f)
	if err != nil {
		return err
	}
	r := &RemoveReport{ReportMeta: api.NewNamespacedReportMeta("SpokeForceRemove", hub.Namespace, o.Name), DryRun: o.DryRun != cli.DryRunNone}
	s, err := hub.Spoke(ctx, o.Name)
	if err != nil {
		return err
	}
	if s == nil {
		r.Steps = append(r.Steps, Step{"spoke " + hub.Namespace + "/" + o.Name, "already deleted"})
		return o.Output.Print(o.Out, r, r.table)
	}
	if err := refuseComputePool(s); err != nil {
		return err
	}
	if !o.EvenIfReachable {
		reason, err := hub.reachable(ctx, s)
		if err != nil {
			return err
		}
		if reason != "" {
			return cli.Refusedf("spoke %s is reachable (%s); nothing was changed: remove it gracefully with kubectl spoke remove %s, or pass --even-if-reachable", o.Name, reason, o.Name)
		}
	}
	if o.DryRun == cli.DryRunClient {
		r.Steps = append(r.Steps, Step{"annotation " + fleetconfig.ForceDeleteAnnotation, "would be set"}, Step{"spoke " + hub.Namespace + "/" + o.Name, "would be deleted"})
		return o.Output.Print(o.Out, r, r.table)
	}
	if err := cli.Confirm(o.IOStreams, fmt.Sprintf("Force-remove spoke %s, leaving whatever is on its cluster?", o.Name), o.Yes || o.DryRun == cli.DryRunServer); err != nil {
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
	if o.DryRun == cli.DryRunServer {
		return o.Output.Print(o.Out, r, r.table)
	}
	if err := hub.WaitGone(ctx, o.Name, newDeadline(o.Timeout), cli.NewProgress(o.ErrOut)); err != nil {
		_ = o.Output.Print(o.Out, r, r.table)
		return fmt.Errorf("%w; run the same command again to keep waiting", err)
	}
	r.Steps = append(r.Steps, Step{"spoke, ManagedCluster and namespace " + o.Name, "gone"})
	r.Leftovers = Leftovers(s)
	return o.Output.Print(o.Out, r, r.table)
}

// reachable says why a spoke counts as reachable ("" when it does not): its
// ManagedCluster is Available and its API server answers. A stored
// kubeconfig the loader refuses is an error: it is not used to find out.
func (h *Hub) reachable(ctx context.Context, s *fleetconfig.Spoke) (string, error) {
	mc, err := h.ManagedCluster(ctx, s.Name)
	if err != nil || mc == nil || conditionStatus(mc.Status.Conditions, ocm.ManagedClusterConditionAvailable) != string(metav1.ConditionTrue) {
		return "", nil
	}
	kc, _, err := h.StoredKubeconfig(ctx, s)
	if cli.IsRefused(err) {
		return "", cli.Refusedf("%w; nothing was changed", err)
	}
	if err != nil {
		return "", nil
	}
	if _, err := kc.Reach(ctx); err != nil {
		return "", nil
	}
	return "its ManagedCluster is Available and its API server " + kc.Server + " answers", nil
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
