package spoke

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
			and the Spoke is pointed at it. The --secret secret is created; one
			that exists already is only used when it holds a kubeconfig of the
			same cluster and no other Spoke uses it (then updated, guarded by its
			resourceVersion), else the command exits 3 and nothing changes.
			Prints the old and new expiry.`),
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
			if err := o.Validate(); err != nil {
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

// Validate rejects bad input before any request.
func (o *RotateOptions) Validate() error {
	if err := cli.ValidateNames(cli.ClusterName, o.Name); err != nil {
		return err
	}
	if o.Secret != "" {
		if err := cli.ValidateNames(cli.SecretName, o.Secret); err != nil {
			return err
		}
	}
	if err := o.f.ValidateNamespace(); err != nil {
		return err
	}
	if o.MinLifetime < 0 {
		return cli.UsageErrorf("--min-credential-lifetime must not be negative")
	}
	return o.Output.Validate()
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
	repoint := o.Secret != "" && o.Secret != ref.Name
	var target *corev1.Secret
	if repoint {
		if target, err = o.checkTarget(ctx, hub, newID); err != nil {
			return err
		}
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
	needs := []cli.Access{access("update", secretResource, hub.Namespace)}
	if o.Secret != "" && o.Secret != ref.Name {
		// Server-side apply of a secret that may not exist yet: create and patch.
		needs = append(hub.spokeAccess("patch"), access("create", secretResource, hub.Namespace), access("patch", secretResource, hub.Namespace))
	}
	if err := hub.preflight(ctx, o.DryRun, needs); err != nil {
		return err
	}
	switch {
	case o.DryRun == cli.DryRunClient:
		r.Result = "would be replaced"
	case repoint:
		if err := o.repoint(ctx, hub, s, target, data); err != nil {
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

// checkTarget refuses a --secret that exists and is not the spoke's own,
// unless it holds a kubeconfig of the same cluster and no other Spoke uses
// it: anything else may be another spoke's credentials, or no kubeconfig at
// all. It returns the secret as read (nil when there is none).
func (o *RotateOptions) checkTarget(ctx context.Context, hub *Hub, id kubeconfig.Identity) (*corev1.Secret, error) {
	sec, err := hub.Secret(ctx, o.Secret)
	if err != nil || sec == nil {
		return nil, err
	}
	what := fmt.Sprintf("secret %s/%s exists and is not spoke %s's", hub.Namespace, o.Secret, o.Name)
	next := "nothing was changed: pick a new name for --secret"
	kc, err := kubeconfig.FromSecret(sec, fleetconfig.DefaultKubeconfigKey)
	if err != nil {
		return nil, cli.Refusedf("%s, and it holds no kubeconfig this command can read (%w); %s", what, err, next)
	}
	if same, by := reachOrOffline(ctx, kc).SameAs(id); !same {
		return nil, cli.Refusedf("%s, and its kubeconfig reaches another cluster (different %s); %s", what, by, next)
	}
	spokes, err := hub.Spokes(ctx)
	if err != nil {
		return nil, cli.Refusedf("%s, and whether another spoke uses it cannot be checked: %w; %s", what, err, next)
	}
	for _, other := range spokes {
		if ref := other.Spec.Kubeconfig.SecretReference; other.Name != o.Name && ref != nil && ref.Name == o.Secret {
			return nil, cli.Refusedf("%s: spoke %s uses it; %s", what, other.Name, next)
		}
	}
	return sec, nil
}

// repoint writes the kubeconfig into the --secret secret (created, or the
// existing one updated with the resourceVersion checkTarget read) and points
// the Spoke at it with a JSON patch guarded by the Spoke's resourceVersion.
func (o *RotateOptions) repoint(ctx context.Context, hub *Hub, s *fleetconfig.Spoke, existing *corev1.Secret, data []byte) error {
	secrets := hub.Kube.CoreV1().Secrets(hub.Namespace)
	var err error
	if existing == nil {
		_, err = secrets.Create(cli.HideBodies(ctx), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: o.Secret, Namespace: hub.Namespace},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{fleetconfig.DefaultKubeconfigKey: data},
		}, metav1.CreateOptions{FieldManager: FieldManager, DryRun: cli.DryRunOption(o.DryRun)})
	} else {
		sec := existing.DeepCopy()
		sec.Data[fleetconfig.DefaultKubeconfigKey] = data
		_, err = secrets.Update(cli.HideBodies(ctx), sec, metav1.UpdateOptions{FieldManager: FieldManager, DryRun: cli.DryRunOption(o.DryRun)})
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		return fmt.Errorf("secret %s/%s was created or changed by someone else while this command ran; nothing was changed: run this again", hub.Namespace, o.Secret)
	}
	if err != nil {
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
