package spoke

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/kubeconfig"
)

// RotateOptions are the options of `kubectl spoke rotate-kubeconfig`.
type RotateOptions struct {
	Name           string
	KubeconfigFile string
	Secret         string
	MinLifetime    time.Duration
	DryRun         cli.DryRun
	Output         *cli.Output

	f *cli.Factory
	genericiooptions.IOStreams
}

// RotateReport is what rotate-kubeconfig prints.
type RotateReport struct {
	api.ReportMeta `json:",inline"`
	DryRun         bool   `json:"dryRun,omitempty"`
	Secret         string `json:"secret"`
	SecretUID      string `json:"secretUID,omitempty"`
	SameClusterBy  string `json:"sameClusterBy"`
	OldCredential  string `json:"oldCredential"`
	OldExpires     string `json:"oldExpires"`
	NewCredential  string `json:"newCredential"`
	NewExpires     string `json:"newExpires"`
	Result         string `json:"result"`
}

func (r *RotateReport) table() cli.Table {
	return cli.Table{
		Columns: []cli.Column{{Name: "SECRET"}, {Name: "OLD EXPIRES"}, {Name: "NEW EXPIRES"}, {Name: "SAME CLUSTER BY"}, {Name: "RESULT"}},
		Rows:    [][]string{{r.Secret, r.OldExpires, r.NewExpires, r.SameClusterBy, r.Result}},
	}
}

// NewCmdRotateKubeconfig builds `kubectl spoke rotate-kubeconfig`.
func NewCmdRotateKubeconfig(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &RotateOptions{MinLifetime: kubeconfig.DefaultMinLifetime, Output: cli.NewOutput("json", "yaml"), f: f, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "rotate-kubeconfig NAME --spoke-kubeconfig FILE",
		Short: "Replace the stored kubeconfig of a spoke with new credentials for the same cluster",
		Long: templates.LongDesc(`
			Replace the kubeconfig the hub keeps for a spoke.

			The new kubeconfig must pass the same checks as for add (long-lived
			credential, reachable) and reach the same cluster: the UID of its
			kube-system namespace must match the one read with the old
			credentials (when those no longer work: the same server URL and CA).
			Otherwise the command exits 3 and nothing changes.

			The secret is replaced in place (the same object, guarded by its
			resourceVersion); with --secret the kubeconfig goes into that secret
			and the Spoke is pointed at it. Prints the old and new expiry.`),
		Example: templates.Examples(`
			# New client certificate for spoke-1
			kubectl spoke rotate-kubeconfig spoke-1 --spoke-kubeconfig spoke-1-2027.kubeconfig

			# Into a new secret, and point the Spoke at it
			kubectl spoke rotate-kubeconfig spoke-1 --spoke-kubeconfig spoke-1-2027.kubeconfig --secret spoke-1-kubeconfig-2027`),
		Args:              cli.ExactArgs(1, "NAME"),
		ValidArgsFunction: cli.ResourceNames(f, spokeResourceName),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			var err error
			if o.DryRun, err = cli.GetDryRun(cmd); err != nil {
				return err
			}
			if o.MinLifetime < 0 {
				return cli.UsageErrorf("--min-credential-lifetime must not be negative")
			}
			if err := o.Output.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.KubeconfigFile, "spoke-kubeconfig", "", "The new kubeconfig file of the spoke cluster.")
	cmd.Flags().StringVar(&o.Secret, "secret", "", "Put the kubeconfig into this secret and point the Spoke at it, instead of replacing the current one.")
	cmd.Flags().DurationVar(&o.MinLifetime, "min-credential-lifetime", o.MinLifetime, "Refuse credentials that expire sooner than this.")
	_ = cmd.MarkFlagRequired("spoke-kubeconfig")
	_ = cmd.MarkFlagFilename("spoke-kubeconfig")
	cli.AddDryRunFlag(cmd)
	o.Output.AddFlags(cmd)
	return cmd
}

// Run checks the new kubeconfig against the old one and replaces it.
func (o *RotateOptions) Run(ctx context.Context) error {
	hub, err := NewHub(ctx, o.f)
	if err != nil {
		return err
	}
	s, err := hub.ExistingSpoke(ctx, o.Name)
	if err != nil {
		return err
	}
	if err := refuseComputePool(s); err != nil {
		return err
	}
	ref := s.Spec.Kubeconfig.SecretReference
	if ref == nil {
		return cli.Refusedf("spoke %s uses in-cluster credentials, there is no kubeconfig to rotate; nothing was changed", o.Name)
	}
	key := ref.KubeconfigKey
	if key == "" {
		key = fleetconfig.DefaultKubeconfigKey
	}
	kc, err := kubeconfig.Load(o.KubeconfigFile)
	if err != nil {
		return cli.Refusedf("%w; nothing was changed", err)
	}
	now := time.Now()
	newCred, err := kc.Credential(now, o.MinLifetime)
	if err != nil {
		return cli.Refusedf("%s: %w; nothing was changed", o.KubeconfigFile, err)
	}
	newID, err := kc.Reach(ctx)
	if err != nil {
		return cli.Refusedf("%s: %w; nothing was changed", o.KubeconfigFile, err)
	}
	old, sec, err := hub.StoredKubeconfig(ctx, s)
	if err != nil {
		return cli.Refusedf("%w, so there is nothing to compare the new kubeconfig with; nothing was changed", err)
	}
	oldCred, _ := old.Credential(now, 0)
	same, by := reachOrOffline(ctx, old).SameAs(newID)
	if !same {
		return cli.Refusedf("%s reaches a different cluster than spoke %s (different %s); nothing was changed", o.KubeconfigFile, o.Name, by)
	}
	data, err := kc.Bytes()
	if err != nil {
		return err
	}
	r := &RotateReport{
		ReportMeta: api.NewNamespacedReportMeta("SpokeKubeconfigRotation", hub.Namespace, o.Name),
		DryRun:     o.DryRun != cli.DryRunNone, Secret: ref.Name, SecretUID: string(sec.UID), SameClusterBy: by,
		OldCredential: oldCred.Kind, OldExpires: oldCred.ExpiryString(), NewCredential: newCred.Kind, NewExpires: newCred.ExpiryString(),
	}
	switch {
	case o.DryRun == cli.DryRunClient:
		r.Result = "would be replaced"
	case o.Secret != "" && o.Secret != ref.Name:
		if err := o.repoint(ctx, hub, s, data); err != nil {
			return err
		}
		r.Secret, r.SecretUID, r.Result = o.Secret, "", "written; Spoke points at it"
	default:
		sec.Data[key] = data
		// Update carries the resourceVersion read above: a concurrent change fails it.
		updated, err := hub.Kube.CoreV1().Secrets(hub.Namespace).Update(cli.HideBodies(ctx), sec, metav1.UpdateOptions{FieldManager: FieldManager, DryRun: cli.DryRunOption(o.DryRun)})
		if err != nil {
			return fmt.Errorf("replacing the kubeconfig in secret %s/%s: %w; nothing was changed: run this again", hub.Namespace, ref.Name, err)
		}
		r.SecretUID, r.Result = string(updated.UID), "replaced in place"
	}
	return o.Output.Print(o.Out, r, r.table)
}

// repoint writes the kubeconfig into the --secret secret and points the
// Spoke at it with a JSON patch guarded by the Spoke's resourceVersion.
func (o *RotateOptions) repoint(ctx context.Context, hub *Hub, s *fleetconfig.Spoke, data []byte) error {
	sec := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Secret, Namespace: hub.Namespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{fleetconfig.DefaultKubeconfigKey: data},
	}
	body, err := json.Marshal(sec)
	if err != nil {
		return err
	}
	force := true
	if _, err := hub.Kube.CoreV1().Secrets(hub.Namespace).Patch(cli.HideBodies(ctx), o.Secret, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: FieldManager, Force: &force, DryRun: cli.DryRunOption(o.DryRun)}); err != nil {
		return fmt.Errorf("writing secret %s/%s: %w; nothing was changed", hub.Namespace, o.Secret, err)
	}
	patch, _ := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": s.ResourceVersion},
		{"op": "replace", "path": "/spec/kubeconfig/secretReference", "value": fleetconfig.SecretReference{Name: o.Secret, KubeconfigKey: fleetconfig.DefaultKubeconfigKey}},
	})
	if _, err := hub.Dynamic.Resource(fleetconfig.SpokeResource).Namespace(hub.Namespace).Patch(ctx, o.Name, types.JSONPatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager, DryRun: cli.DryRunOption(o.DryRun)}); err != nil {
		return fmt.Errorf("pointing Spoke %s at secret %s: %w; the secret was written, the Spoke still uses the old one: run this again", o.Name, o.Secret, err)
	}
	return nil
}
