package spoke

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/kubeconfig"
	"github.com/spokekit/spokekit/internal/values"
)

// AddOptions are the options of `kubectl spoke add`.
type AddOptions struct {
	Name           string
	KubeconfigFile string
	ValuesFile     string
	ReleaseFile    string
	CopyFrom       string
	HubName        string
	Apply          bool
	Wait           bool
	Overwrite      bool
	Timeout        time.Duration
	MinLifetime    time.Duration
	DryRun         cli.DryRun
	Output         *cli.Output

	f   *cli.Factory
	hub *Hub
	genericiooptions.IOStreams
}

// AddReport is what add prints: each step and what it did.
type AddReport struct {
	api.ReportMeta `json:",inline"`
	DryRun         string                `json:"dryRun,omitempty"`
	Credential     kubeconfig.Credential `json:"credential"`
	Steps          []Step                `json:"steps"`
	// Spoke and Secret are what add writes (the secret's data redacted).
	Spoke  *fleetconfig.Spoke `json:"spoke,omitempty"`
	Secret *corev1.Secret     `json:"secret,omitempty"`
	Next   string             `json:"next,omitempty"`
}

// Step is one thing a command did, or would do.
type Step struct {
	What   string `json:"what"`
	Result string `json:"result"`
}

func stepsTable(steps []Step) cli.Table {
	t := cli.Table{Columns: []cli.Column{{Name: "STEP"}, {Name: "RESULT"}}}
	for _, s := range steps {
		t.Rows = append(t.Rows, []string{s.What, s.Result})
	}
	return t
}

// NewCmdAdd builds `kubectl spoke add`.
func NewCmdAdd(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &AddOptions{Timeout: 5 * time.Minute, MinLifetime: kubeconfig.DefaultMinLifetime, Output: cli.NewOutput("json", "yaml"), f: f, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "add NAME --spoke-kubeconfig FILE",
		Short: "Register a cluster as a spoke: check its kubeconfig, store it, add it to the values, join it",
		Long: templates.LongDesc(`
			Register a cluster with the fleet hub as the spoke NAME.

			Every check runs before anything is written: NAME is a valid cluster
			name that no other cluster uses; the fleet's Hub exists; the kubeconfig
			names a context, carries a long-lived credential (no exec plugin or
			auth-provider, no token or client certificate that expires within
			--min-credential-lifetime), reaches the cluster's API server and may
			do what the join needs there. If a check fails, the command exits 3
			and neither the hub nor the values file has changed.

			Then it stores the kubeconfig, minified to its one context, in the
			secret NAME-kubeconfig of the release namespace; appends NAME to
			fleetConfig.spokes in --values (or spec.values.fleetConfig.spokes in
			--helmrelease), copying the shared settings of an existing entry and
			keeping every comment and byte of the rest of the file; with --apply
			it creates the Spoke as the chart would, so the join starts now; with
			--wait it follows the join until the cluster is available.

			Running it again with the same arguments changes nothing.`),
		Example: templates.Examples(`
			# Check everything and show what would be written
			kubectl spoke add spoke-2 --spoke-kubeconfig spoke-2.kubeconfig --values values.yaml --dry-run=client

			# Store the kubeconfig and add the values entry; helm upgrade does the rest
			kubectl spoke add spoke-2 --spoke-kubeconfig spoke-2.kubeconfig --values values.yaml

			# Flux: edit the HelmRelease manifest, and join right away
			kubectl spoke add spoke-2 --spoke-kubeconfig spoke-2.kubeconfig --helmrelease clusters/hub/mural.yaml --apply --wait`),
		Args:              cli.ExactArgs(1, "NAME"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(cmd, args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.KubeconfigFile, "spoke-kubeconfig", "", "Kubeconfig file of the cluster to register (its current context is used).")
	fl.StringVar(&o.ValuesFile, "values", "", "Helm values file whose fleetConfig.spokes gets the new entry.")
	fl.StringVar(&o.ReleaseFile, "helmrelease", "", "Flux HelmRelease manifest whose spec.values.fleetConfig.spokes gets the new entry.")
	fl.StringVar(&o.CopyFrom, "copy-from", "", "Entry of fleetConfig.spokes to copy the shared settings (ociRegistry, ...) from; default the first.")
	fl.StringVar(&o.HubName, "hub", "", "Hub resource the spoke joins, when the namespace has several.")
	fl.BoolVar(&o.Apply, "apply", false, "Also create the Spoke on the hub now, as the chart would render it.")
	fl.BoolVar(&o.Wait, "wait", false, "With --apply: wait until the spoke has joined and is available.")
	fl.BoolVar(&o.Overwrite, "overwrite", false, "Replace an existing NAME-kubeconfig secret that reaches a different cluster.")
	fl.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long --wait waits (0: no limit).")
	fl.DurationVar(&o.MinLifetime, "min-credential-lifetime", o.MinLifetime, "Refuse credentials that expire sooner than this.")
	_ = cmd.MarkFlagRequired("spoke-kubeconfig")
	_ = cmd.MarkFlagFilename("spoke-kubeconfig")
	_ = cmd.MarkFlagFilename("values", "yaml", "yml")
	_ = cmd.MarkFlagFilename("helmrelease", "yaml", "yml")
	cli.AddDryRunFlag(cmd)
	o.Output.AddFlags(cmd)
	return cmd
}

// Complete reads the arguments and the dry-run strategy.
func (o *AddOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Name = args[0]
	var err error
	o.DryRun, err = cli.GetDryRun(cmd)
	return err
}

// Validate rejects bad input before any request.
func (o *AddOptions) Validate() error {
	if err := cli.ValidateNames(cli.ClusterName, o.Name); err != nil {
		return err
	}
	if err := o.f.ValidateNamespace(); err != nil {
		return err
	}
	if o.ValuesFile != "" && o.ReleaseFile != "" {
		return cli.UsageErrorf("--values and --helmrelease are two ways to say where the entry goes: give one")
	}
	if o.CopyFrom != "" && o.ValuesFile == "" && o.ReleaseFile == "" {
		return cli.UsageErrorf("--copy-from needs --values or --helmrelease")
	}
	if o.Wait && !o.Apply {
		return cli.UsageErrorf("--wait needs --apply; without it the Spoke appears with the next helm upgrade (then run kubectl spoke status %s)", o.Name)
	}
	if o.Timeout < 0 || o.MinLifetime < 0 {
		return cli.UsageErrorf("--timeout and --min-credential-lifetime must not be negative")
	}
	return o.Output.Validate()
}

func (o *AddOptions) valuesFile() (string, values.Kind) {
	if o.ReleaseFile != "" {
		return o.ReleaseFile, values.HelmRelease
	}
	return o.ValuesFile, values.HelmValues
}

// addPlan is what add found and will write.
type addPlan struct {
	kc         *kubeconfig.Kubeconfig
	credential kubeconfig.Credential
	hub        *fleetconfig.Hub
	secret     *corev1.Secret
	// existingSecret is the secret as read, when there is one: the update
	// carries its resourceVersion.
	existingSecret *corev1.Secret
	secretStep     string
	file           *values.File
	edited         []byte
	valuesStep     string
	spoke          *fleetconfig.Spoke
	spokeStep      string
}

// Run checks everything, then writes.
func (o *AddOptions) Run(ctx context.Context) error {
	hub, err := NewHub(ctx, o.f)
	if err != nil {
		return err
	}
	o.hub = hub
	plan, err := o.preflight(ctx)
	if err != nil {
		return err
	}
	if err := hub.preflight(ctx, o.DryRun, plan.access(o.Apply, o.Wait, hub)); err != nil {
		return err
	}
	report := &AddReport{ReportMeta: api.NewNamespacedReportMeta("SpokeAdd", hub.Namespace, o.Name), Credential: plan.credential}
	if o.DryRun != cli.DryRunNone {
		report.DryRun = map[cli.DryRun]string{cli.DryRunClient: "client", cli.DryRunServer: "server"}[o.DryRun]
	}
	p := cli.NewProgress(o.ErrOut)
	if err := o.write(ctx, plan, report, p); err != nil {
		return err
	}
	if o.Apply && o.Wait && o.DryRun == cli.DryRunNone {
		if err := hub.WaitJoined(ctx, o.Name, newDeadline(o.Timeout), p); err != nil {
			_ = o.print(report)
			return fmt.Errorf("%w; the secret, values entry and Spoke are in place: run `kubectl spoke status %s` to see why, or the same add again to keep waiting", err, o.Name)
		}
		report.Steps = append(report.Steps, Step{"join", "joined and available"})
	}
	report.Next = o.next(plan)
	return o.print(report)
}

func (o *AddOptions) print(r *AddReport) error {
	return o.Output.Print(o.Out, r, func() cli.Table {
		t := stepsTable(r.Steps)
		if r.Next != "" {
			t.Rows = append(t.Rows, []string{"next", r.Next})
		}
		return t
	})
}

func (o *AddOptions) next(plan *addPlan) string {
	if o.DryRun != cli.DryRunNone {
		return "run again without --dry-run to make these changes"
	}
	file, _ := o.valuesFile()
	switch {
	case o.Apply && file != "":
		return "commit " + file + " so the next helm upgrade keeps the spoke"
	case o.Apply:
		return "add the spoke to the release's fleetConfig.spokes values, or the next helm upgrade will not know it"
	case o.ReleaseFile != "":
		return "apply " + o.ReleaseFile + " to the hub (or commit it for Flux), then: kubectl spoke status " + o.Name
	case file != "":
		return "helm upgrade the release with " + file + ", then: kubectl spoke status " + o.Name
	}
	return "add the spoke to fleetConfig.spokes and helm upgrade, or run again with --apply"
}

// preflight runs every check and builds the plan; it writes nothing.
func (o *AddOptions) preflight(ctx context.Context) (*addPlan, error) {
	plan := &addPlan{}
	kc, err := kubeconfig.Load(o.KubeconfigFile)
	if err != nil {
		return nil, cli.Refusedf("%w; nothing was changed", err)
	}
	plan.kc = kc
	if plan.credential, err = kc.Credential(time.Now(), o.MinLifetime); err != nil {
		return nil, cli.Refusedf("%s: %w; nothing was changed", o.KubeconfigFile, err)
	}
	if plan.hub, err = o.findHub(ctx); err != nil {
		return nil, err
	}
	id, err := kc.Reach(ctx)
	if err != nil {
		return nil, cli.Refusedf("%s: %w; nothing was changed", o.KubeconfigFile, err)
	}
	missing, err := kc.MissingPermissions(ctx, kubeconfig.JoinPermissions)
	if err != nil {
		return nil, cli.Refusedf("%s: %w; nothing was changed", o.KubeconfigFile, err)
	}
	if len(missing) > 0 {
		return nil, cli.Refusedf("%s: user %q may not do what the join needs on %s: %s; nothing was changed: grant them (see the platform's spoke RBAC guide) or use another identity",
			o.KubeconfigFile, kc.User, kc.Server, strings.Join(missing, ", "))
	}
	if err := o.checkName(ctx, id); err != nil {
		return nil, err
	}
	if err := o.planSecret(ctx, plan, id); err != nil {
		return nil, err
	}
	var entry map[string]any
	if file, kind := o.valuesFile(); file != "" {
		if plan.file, err = values.Read(file, kind); err != nil {
			return nil, cli.Refusedf("%w; nothing was changed", err)
		}
		edited, changed, err := values.Add(plan.file.Data, kind, values.Entry{Name: o.Name, SecretName: secretName(o.Name), CopyFrom: o.CopyFrom})
		if err != nil {
			return nil, cli.Refusedf("%s: %w; nothing was changed", file, err)
		}
		plan.edited = edited
		plan.valuesStep = "entry added to " + kind.ListPath()
		if !changed {
			plan.valuesStep = "entry already in " + kind.ListPath()
		}
		if entry, err = values.EntryValues(edited, kind, o.Name); err != nil {
			return nil, cli.Refusedf("%s: %w; nothing was changed", file, err)
		}
	}
	if plan.spoke, err = RenderSpoke(o.Name, plan.hub, secretName(o.Name), entry); err != nil {
		return nil, cli.Refusedf("%w; nothing was changed", err)
	}
	return plan, nil
}

func secretName(spoke string) string { return spoke + "-kubeconfig" }

// access is what writing the plan needs on the hub.
func (p *addPlan) access(apply, wait bool, hub *Hub) []cli.Access {
	var out []cli.Access
	switch p.secretStep {
	case "created": // server-side apply creates: both verbs are checked
		out = append(out, access("create", secretResource, hub.Namespace), access("patch", secretResource, hub.Namespace))
	case "updated":
		out = append(out, access("patch", secretResource, hub.Namespace))
	}
	if apply {
		// The Spoke may not exist yet: server-side apply would create it.
		out = append(out, hub.spokeAccess("create", "patch")...)
	}
	if apply && wait {
		out = append(out, hub.waitJoinedAccess()...)
	}
	return out
}

func (o *AddOptions) findHub(ctx context.Context) (*fleetconfig.Hub, error) {
	hubs, err := o.hub.Hubs(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for i := range hubs {
		if o.HubName == "" || hubs[i].Name == o.HubName {
			names = append(names, hubs[i].Name)
		}
	}
	switch {
	case len(names) == 1:
		for i := range hubs {
			if hubs[i].Name == names[0] {
				return &hubs[i], nil
			}
		}
	case o.HubName != "":
		return nil, cli.Refusedf("there is no Hub %q in namespace %s; nothing was changed: pick the fleet's namespace with -n", o.HubName, o.hub.Namespace)
	case len(names) == 0:
		return nil, cli.Refusedf("there is no fleet Hub in namespace %s; nothing was changed: pick the fleet's release namespace with -n", o.hub.Namespace)
	}
	return nil, cli.Refusedf("namespace %s has several Hubs (%s); nothing was changed: pick one with --hub", o.hub.Namespace, strings.Join(names, ", "))
}

// checkName refuses a name another cluster uses. The same cluster under the
// same name is a re-run.
func (o *AddOptions) checkName(ctx context.Context, id kubeconfig.Identity) error {
	s, err := o.hub.Spoke(ctx, o.Name)
	if err != nil {
		return err
	}
	if s == nil {
		mc, err := o.hub.ManagedCluster(ctx, o.Name)
		if err != nil {
			return err
		}
		if mc != nil {
			return cli.Refusedf("a ManagedCluster %s already exists without a Spoke (joined some other way); nothing was changed: pick another name, or unjoin that cluster first", o.Name)
		}
		return nil
	}
	if err := refuseComputePool(s); err != nil {
		return err
	}
	if s.DeletionTimestamp != nil {
		return cli.Refusedf("spoke %s is being deleted; nothing was changed: wait for it to go (kubectl spoke status %s), then add it again", o.Name, o.Name)
	}
	ref := s.Spec.Kubeconfig.SecretReference
	if ref == nil || ref.Name != secretName(o.Name) {
		return cli.Refusedf("spoke %s already exists and takes its kubeconfig from elsewhere; nothing was changed: pick another name, or use kubectl spoke rotate-kubeconfig %s", o.Name, o.Name)
	}
	kc, _, err := o.hub.StoredKubeconfig(ctx, s)
	switch {
	case err == nil:
		if same, by := reachOrOffline(ctx, kc).SameAs(id); !same {
			return cli.Refusedf("spoke %s already exists for another cluster (different %s); nothing was changed: pick another name", o.Name, by)
		}
	case cli.IsRefused(err) && !o.Overwrite:
		return cli.Refusedf("%w; nothing was changed: pass --overwrite to replace it", err)
	}
	return nil
}

// reachOrOffline is the identity of the cluster a kubeconfig reaches: asked
// of the cluster when it answers, else from its URL and CA.
func reachOrOffline(ctx context.Context, kc *kubeconfig.Kubeconfig) kubeconfig.Identity {
	id, err := kc.Reach(ctx)
	if err != nil {
		return kc.OfflineIdentity()
	}
	return id
}

func (o *AddOptions) planSecret(ctx context.Context, plan *addPlan, id kubeconfig.Identity) error {
	data, err := plan.kc.Bytes()
	if err != nil {
		return cli.Refusedf("encoding the minified kubeconfig: %w; nothing was changed", err)
	}
	plan.secret = &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: secretName(o.Name), Namespace: o.hub.Namespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{fleetconfig.DefaultKubeconfigKey: data},
	}
	existing, err := o.hub.Secret(ctx, plan.secret.Name)
	if err != nil {
		return err
	}
	plan.existingSecret = existing
	switch {
	case existing == nil:
		plan.secretStep = "created"
	case bytes.Equal(existing.Data[fleetconfig.DefaultKubeconfigKey], data):
		plan.secretStep = "unchanged"
	case o.Overwrite:
		plan.secretStep = "replaced (--overwrite)"
	default:
		old, err := kubeconfig.FromSecret(existing, fleetconfig.DefaultKubeconfigKey)
		if err != nil {
			return cli.Refusedf("secret %s/%s exists and does not hold a kubeconfig this command can read (%w), so it may be someone else's; nothing was changed: pass --overwrite to replace it", o.hub.Namespace, plan.secret.Name, err)
		}
		if same, by := reachOrOffline(ctx, old).SameAs(id); !same {
			return cli.Refusedf("secret %s/%s holds a kubeconfig of another cluster (different %s); nothing was changed: pass --overwrite to replace it", o.hub.Namespace, plan.secret.Name, by)
		}
		plan.secretStep = "updated"
	}
	return nil
}

// write applies the plan: secret, values file, Spoke. With --dry-run=client
// it only reports; with server every write is a server dry run and the file
// is left alone.
func (o *AddOptions) write(ctx context.Context, plan *addPlan, r *AddReport, p *cli.Progress) error {
	would := func(s string) string {
		if o.DryRun != cli.DryRunNone {
			return "would be " + s
		}
		return s
	}
	secretWhat := "secret " + o.hub.Namespace + "/" + plan.secret.Name
	if o.DryRun != cli.DryRunClient && plan.secretStep != "unchanged" {
		p.Update("writing %s", secretWhat)
		if err := o.writeSecret(ctx, plan); err != nil {
			return err
		}
	}
	r.Steps = append(r.Steps, Step{secretWhat, would(plan.secretStep) + " (" + plan.credential.Kind + ", expires " + plan.credential.ExpiryString() + ")"})
	if plan.file != nil {
		if !strings.HasPrefix(plan.valuesStep, "entry already") && o.DryRun == cli.DryRunNone {
			if err := plan.file.Write(plan.edited); err != nil {
				return fmt.Errorf("%w; the secret %s is in place: fix that and run the same command again", err, plan.secret.Name)
			}
		}
		step := plan.valuesStep
		if o.DryRun != cli.DryRunNone && !strings.HasPrefix(step, "entry already") {
			step = "would add the entry to " + strings.TrimPrefix(step, "entry added to ")
		}
		r.Steps = append(r.Steps, Step{"values " + plan.file.Path, step})
	}
	if o.Apply {
		existing, err := o.hub.Spoke(ctx, o.Name)
		if err != nil {
			return err
		}
		result := would("created")
		if existing != nil {
			// checkName showed it is this cluster's: a re-run.
			result = "already there"
		} else if o.DryRun != cli.DryRunClient {
			p.Update("creating Spoke %s", o.Name)
			if err := o.hub.createSpoke(ctx, plan.spoke, o.DryRun); err != nil {
				return fmt.Errorf("%w; the secret and values entry are in place: run the same command again", err)
			}
		}
		r.Steps = append(r.Steps, Step{"spoke " + o.hub.Namespace + "/" + o.Name, result})
	}
	if o.DryRun != cli.DryRunNone {
		r.Spoke = plan.spoke
		red, err := plan.kc.Redacted()
		if err != nil {
			return err
		}
		shown := plan.secret.DeepCopy()
		shown.Data = map[string][]byte{fleetconfig.DefaultKubeconfigKey: red}
		r.Secret = shown
	}
	return nil
}

// writeSecret creates the secret, or updates the one read in preflight
// with its resourceVersion: a secret created or changed by someone else in
// between makes the write fail instead of being overwritten.
func (o *AddOptions) writeSecret(ctx context.Context, plan *addPlan) error {
	secrets := o.hub.Kube.CoreV1().Secrets(plan.secret.Namespace)
	opts := metav1.CreateOptions{FieldManager: FieldManager, DryRun: cli.DryRunOption(o.DryRun)}
	var err error
	if plan.existingSecret == nil {
		_, err = secrets.Create(cli.HideBodies(ctx), plan.secret, opts)
	} else {
		s := plan.existingSecret.DeepCopy()
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[fleetconfig.DefaultKubeconfigKey] = plan.secret.Data[fleetconfig.DefaultKubeconfigKey]
		_, err = secrets.Update(cli.HideBodies(ctx), s, metav1.UpdateOptions{FieldManager: FieldManager, DryRun: opts.DryRun})
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("secret %s/%s was created or changed by someone else while this command ran; nothing was changed: run the same command again", plan.secret.Namespace, plan.secret.Name)
	}
	if err != nil {
		return fmt.Errorf("writing secret %s/%s: %w; nothing else was changed", plan.secret.Namespace, plan.secret.Name, err)
	}
	return nil
}
