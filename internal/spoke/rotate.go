package spoke

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/helmrelease"
	"github.com/spokekit/spokekit/internal/kubeconfig"
	"github.com/spokekit/spokekit/internal/spoke/hubclient"
	"github.com/spokekit/spokekit/internal/values"
)

// RotateOptions are the options of `kubectl spoke rotate-kubeconfig`.
type RotateOptions struct {
	// writeTarget's file, given with Secret, gets the spoke's entry pointed
	// at the new secret too.
	writeTarget
	Kubeconfig spokeKubeconfig
	Secret     string
	// Apply applies the edited --helmrelease file to the hub; Wait waits
	// (at most Timeout) for it to be Ready.
	Apply   bool
	Wait    bool
	Timeout time.Duration

	genericiooptions.IOStreams
}

// RotateReport is what rotate-kubeconfig prints.
type RotateReport struct {
	api.ReportMeta `json:",inline"`
	DryRun         string `json:"dryRun,omitempty"`
	Secret         string `json:"secret"`
	SecretUID      string `json:"secretUID,omitempty"`
	SameClusterBy  string `json:"sameClusterBy"`
	OldCredential  string `json:"oldCredential"`
	OldExpires     string `json:"oldExpires"`
	NewCredential  string `json:"newCredential"`
	NewExpires     string `json:"newExpires"`
	Result         string `json:"result"`
	// Values is what happened to the entry in --values or --helmrelease.
	Values   string   `json:"values,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Release is the upgrade of the hub's Helm release (--release), and
	// releaseStep what it did, in words, for the table.
	Release     *releaseUpgrade `json:"release,omitempty"`
	releaseStep string
	// HelmRelease is what happened to the HelmRelease on the hub
	// (--helmrelease --apply).
	HelmRelease string `json:"helmRelease,omitempty"`
}

func (r *RotateReport) table() cli.Table {
	t := cli.Table{
		Columns: []cli.Column{{Name: "SECRET"}, {Name: "OLD EXPIRES"}, {Name: "NEW EXPIRES"}, {Name: "SAME CLUSTER BY"}, {Name: "RESULT"}},
		Rows:    [][]string{{r.Secret, r.OldExpires, r.NewExpires, r.SameClusterBy, r.Result}},
	}
	if r.Values != "" {
		t.Columns = append(t.Columns, cli.Column{Name: "VALUES"})
		t.Rows[0] = append(t.Rows[0], r.Values)
	}
	if r.releaseStep != "" {
		t.Columns = append(t.Columns, cli.Column{Name: "RELEASE"})
		t.Rows[0] = append(t.Rows[0], r.releaseStep)
	}
	if r.HelmRelease != "" {
		t.Columns = append(t.Columns, cli.Column{Name: "HELMRELEASE"})
		t.Rows[0] = append(t.Rows[0], r.HelmRelease)
	}
	return t
}

// NewCmdRotateKubeconfig builds `kubectl spoke rotate-kubeconfig`.
func NewCmdRotateKubeconfig(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &RotateOptions{Kubeconfig: spokeKubeconfig{MinLifetime: kubeconfig.DefaultMinLifetime}, writeTarget: newWriteTarget(f), Timeout: 5 * time.Minute, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "rotate-kubeconfig NAME --spoke-kubeconfig FILE",
		Short: "Replace the stored kubeconfig of a spoke with new credentials for the same cluster",
		Long: cli.LongDesc(`
			Replace the kubeconfig the hub keeps for a spoke.

			The new kubeconfig must pass the same checks as for add (long-lived
			credential, reachable) and reach the same cluster: the UID of its
			kube-system namespace must match the one read with the old
			credentials (when those no longer work: the same server URL and CA).
			Otherwise the command exits 3 and nothing changes.

			The secret is replaced in place (the same object, guarded by its
			resourceVersion). With --secret the kubeconfig goes into that secret
			instead and the Spoke is pointed at it (a JSON patch that fails if the
			Spoke was replaced or pointed elsewhere since it was read). The --secret secret is created; one that
			exists already is only used when it holds a kubeconfig of the same
			cluster and no other Spoke uses it (then updated, guarded by its
			resourceVersion), else the command exits 3 and nothing changes.

			With --secret and --release NAME (the seed's path) the hub's Helm
			release is upgraded, from the chart its record holds, with only the
			spoke's fleetConfig.spokes entry pointed at the new secret, so the
			job the upgrade runs keeps the Spoke on it; refused before anything
			is written (exit 3) for a release that is pending or failed, whose
			chart renders no fleetConfig.spokes, or that has no entry for the
			spoke.

			With --secret, --values (or --helmrelease) points the spoke's
			fleetConfig.spokes entry in that file at the new secret too, changing
			only that value and keeping every comment and byte of the rest; a
			file without an entry for the spoke is refused (exit 3) before
			anything is written. Without a file, a spoke a Helm release renders
			gets a warning: the next helm upgrade would point it back at the
			secret its values name. With --helmrelease and --apply (a hub whose
			release Flux manages) the edited HelmRelease is server-side applied
			to the hub under the command's own field manager, so Flux upgrades
			the release with the new secret now; refused (exit 3, nothing
			written) when there is no such HelmRelease on the hub or the live
			one differs from the file outside spec.values. --wait then waits
			(at most --timeout) for it to be Ready. Prints the old and new
			expiry.`),
		Example: templates.Examples(`
			# New client certificate for spoke-1
			kubectl spoke rotate-kubeconfig spoke-1 --spoke-kubeconfig spoke-1-2027.kubeconfig

			# Into a new secret; point the Spoke and its entry in the hub's release at it
			kubectl spoke rotate-kubeconfig spoke-1 --spoke-kubeconfig spoke-1-2027.kubeconfig --secret spoke-1-kubeconfig-2027 --release mural

			# Into a new secret; point the Spoke and its values entry at it
			kubectl spoke rotate-kubeconfig spoke-1 --spoke-kubeconfig spoke-1-2027.kubeconfig --secret spoke-1-kubeconfig-2027 --values values.yaml

			# Flux: point the HelmRelease's entry at it and apply it to the hub
			kubectl spoke rotate-kubeconfig spoke-1 --spoke-kubeconfig spoke-1-2027.kubeconfig --secret spoke-1-kubeconfig-2027 --helmrelease mural.yaml --apply --wait`),
		Args:              cli.ExactArgs(1, "NAME"),
		ValidArgsFunction: cli.ResourceNames(f, spokeResourceName),
		RunE:              cli.RunE(o, o.Complete),
	}
	o.Kubeconfig.addFlags(cmd, "The new kubeconfig file of the spoke cluster.")
	cmd.Flags().StringVar(&o.Secret, "secret", "", "Put the kubeconfig into this secret and point the Spoke at it, instead of replacing the current one.")
	o.addFlags(cmd, "With --secret: Helm values file whose fleetConfig.spokes entry for the spoke is pointed at the new secret.",
		"With --secret: Flux HelmRelease manifest whose spec.values.fleetConfig.spokes entry for the spoke is pointed at the new secret.")
	addFluxApplyFlag(cmd, &o.Apply)
	cmd.Flags().BoolVar(&o.Wait, "wait", false, "With --helmrelease --apply: wait until the HelmRelease is Ready.")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "How long --wait waits (0: no limit).")
	return cmd
}

// Validate rejects bad input before any request.
func (o *RotateOptions) Validate() error {
	if err := o.validate(); err != nil {
		return err
	}
	if o.Secret != "" {
		if err := cli.ValidateNames(cli.SecretName, o.Secret); err != nil {
			return err
		}
	}
	if (o.ValuesFile != "" || o.ReleaseFile != "" || o.Release != "") && o.Secret == "" {
		return exitcode.UsageErrorf("--values, --helmrelease and --release go with --secret: a rotation in place keeps the secret the entry names")
	}
	if err := validateFluxApply(o.Apply, o.ReleaseFile); err != nil {
		return err
	}
	if o.Wait && !o.Apply {
		return exitcode.UsageErrorf("--wait waits for the HelmRelease --apply applies: give --helmrelease and --apply")
	}
	if err := cli.ValidateTimeout(o.Timeout); err != nil {
		return err
	}
	// The local files last: a usage error is reported before a file's.
	if err := o.Kubeconfig.read(time.Now()); err != nil {
		return err
	}
	return o.readFile()
}

// rotateFacts is what rotate-kubeconfig read and checked before planning.
type rotateFacts struct {
	Namespace string
	Spoke     *fleetconfig.Spoke
	// Current is the secret the Spoke uses now, Target the --secret secret
	// when it exists and is another (nil otherwise).
	Current    *corev1.Secret
	Target     *corev1.Secret
	Kubeconfig []byte
	File       *values.File
	// Credential and ClusterUID are the new kubeconfig's, for the record.
	Credential kubeconfig.Credential
	ClusterUID string
	// Release is the --release release as read (nil: none given).
	Release       *helmrelease.Release
	releaseClient *helmrelease.Client
	// FluxLive is the live HelmRelease --helmrelease --apply applies over
	// (nil: no such apply).
	FluxLive *unstructured.Unstructured
}

// repointAction is what rotate-kubeconfig does to the values entry.
type repointAction string

const (
	repointNoFile  repointAction = "no file"
	repointEntry   repointAction = "repoint"
	repointPresent repointAction = "present"
)

// rotatePlan is what rotate-kubeconfig will write: a value built by
// planRotate, applied by apply.
type rotatePlan struct {
	Secret     hubclient.SecretWrite `json:"-"`
	SecretName string                `json:"secret"`
	// Patch points the Spoke at the new secret and records it (see
	// repointPatch); none for a rotation in place, which only records
	// (RecordPatch, none when the record is there already).
	Patch       []api.PatchOp `json:"patch,omitempty"`
	RecordPatch []api.PatchOp `json:"recordPatch,omitempty"`
	Values      repointAction `json:"values"`
	fileEdit    `json:"-"`
	ListPath    string `json:"listPath,omitempty"`
	Warning     string `json:"warning,omitempty"`
	// Release is the upgrade of --release that re-points the entry.
	Release *releaseUpgrade `json:"release,omitempty"`
	// Flux is the apply of the --helmrelease file that re-points it.
	Flux *fluxApply `json:"flux,omitempty"`
}

// planRotate decides every write from the facts; it reads and writes nothing.
func planRotate(o *RotateOptions, f rotateFacts) (*rotatePlan, error) {
	ref := f.Spoke.Spec.Kubeconfig.SecretReference
	key := ref.KubeconfigKey
	if key == "" {
		key = fleetconfig.DefaultKubeconfigKey
	}
	p := &rotatePlan{Secret: hubclient.SecretWrite{Namespace: f.Namespace, Name: ref.Name, Key: key, Data: f.Kubeconfig, Existing: f.Current}, SecretName: ref.Name, Values: repointNoFile}
	rec := Record{Secret: ref.Name, Credential: f.Credential, ClusterUID: f.ClusterUID}
	if !recorded(f.Spoke, rec) {
		p.RecordPatch = recordPatch(f.Spoke, rec)
	}
	if o.Secret != "" && o.Secret != ref.Name {
		p.Secret = hubclient.SecretWrite{Namespace: f.Namespace, Name: o.Secret, Key: fleetconfig.DefaultKubeconfigKey, Data: f.Kubeconfig, Existing: f.Target}
		p.SecretName = o.Secret
		rec.Secret = o.Secret
		p.Patch, p.RecordPatch = repointPatch(f.Spoke, o.Secret, rec), nil
		// Under the seed's job model Spokes carry no Helm marks, and the
		// release's job still re-applies its entry, so warn either way.
		if f.File == nil && f.Release == nil {
			p.Warning = helmRepointWarning(o.Name, HelmRelease(f.Spoke), ref.Name, o.Secret)
		}
	}
	if file := f.File; file != nil {
		edited, changed, err := values.SetSecret(file.Data, file.Kind, o.Name, o.Secret)
		if errors.Is(err, values.ErrNoEntry) {
			return nil, exitcode.RefusedErrorf("%s has %w; nothing was changed: give the file that holds the spoke's entry, or leave --values/--helmrelease out", file.Path, err)
		}
		if err != nil {
			return nil, exitcode.RefusedErrorf("%s: %w; nothing was changed", file.Path, err)
		}
		p.File, p.ListPath, p.Values = file, file.Kind.ListPath(), repointPresent
		if changed {
			p.Edited, p.Values = edited, repointEntry
		}
	}
	if f.FluxLive != nil {
		var err error
		if p.Flux, err = planFluxFile(f.File, p.Edited, f.FluxLive); err != nil {
			return nil, err
		}
	}
	if f.Release != nil {
		var err error
		p.Release, err = planReleaseUpgrade(f.releaseClient, f.Release, func(doc []byte, kind values.Kind) ([]byte, bool, error) {
			return values.SetSecret(doc, kind, o.Name, o.Secret)
		})
		if errors.Is(err, values.ErrNoEntry) {
			return nil, exitcode.RefusedErrorf("Helm release %s has %w; nothing was changed: name the release that renders the spoke, or leave --release out", f.Release.Name, err)
		}
		if err != nil {
			return nil, err
		}
	}
	return p, nil
}

// repointPatch points the Spoke at secret, and records rec on it, in a JSON
// patch that first tests its UID and the reference it had when read: a
// Spoke made again under the name, or pointed elsewhere in between, is not
// changed. Not the resourceVersion: the FleetConfig controller updates a
// Spoke's status all the time, and a patch guarded by it loses that race.
func repointPatch(s *fleetconfig.Spoke, secret string, rec Record) []api.PatchOp {
	ref := s.Spec.Kubeconfig.SecretReference
	var key any = api.Absent
	if ref.KubeconfigKey != "" {
		key = ref.KubeconfigKey
	}
	return append([]api.PatchOp{
		{Op: "test", Path: "/metadata/uid", Value: s.UID},
		{Op: "test", Path: "/spec/kubeconfig/secretReference/name", Value: ref.Name},
		{Op: "test", Path: "/spec/kubeconfig/secretReference/kubeconfigKey", Value: key},
		{Op: "replace", Path: "/spec/kubeconfig/secretReference", Value: fleetconfig.SecretReference{Name: secret, KubeconfigKey: fleetconfig.DefaultKubeconfigKey}},
	}, recordOps(s, rec)...)
}

// fill writes into the report what the plan did, or under a dry run
// would do.
func (p *rotatePlan) fill(r *RotateReport, dryRun cli.DryRun) {
	switch {
	case dryRun == cli.DryRunClient:
		r.Result = "would be replaced"
	case p.Patch != nil:
		r.Secret, r.SecretUID, r.Result = p.SecretName, "", "written; Spoke points at it"
	default:
		r.Result = "replaced in place"
	}
	switch {
	case p.Values == repointPresent:
		r.Values = "entry already names " + p.SecretName
	case p.Values == repointEntry && dryRun != cli.DryRunNone:
		r.Values = "entry would name " + p.SecretName
	case p.Values == repointEntry:
		r.Values = "entry now names " + p.SecretName
	}
	if p.Warning != "" {
		r.Warnings = append(r.Warnings, p.Warning)
	}
	if r.Release = p.Release; p.Release != nil {
		r.releaseStep = p.Release.step(r.Metadata.Namespace, dryRun).Result
	}
	if p.Flux != nil {
		r.HelmRelease = p.Flux.step(dryRun).Result
	}
}

// Run checks the new kubeconfig against the old one, then writes.
func (o *RotateOptions) Run(ctx context.Context) error {
	hub, err := NewHubClient(ctx, o.f)
	if err != nil {
		return err
	}
	facts, r, err := o.read(ctx, hub)
	if err != nil {
		return err
	}
	plan, err := planRotate(o, *facts)
	if err != nil {
		return err
	}
	// In place, the Secret's name came from the Spoke.
	grant := &secretGrantFor{Spoke: o.Name}
	if plan.Patch == nil {
		grant.NamedBy = facts.Spoke
	}
	if err := hub.preflight(ctx, o.DryRun, grant, append(plan.access(hub), plan.Flux.access(o.Wait)...)); err != nil {
		return err
	}
	if err := o.apply(ctx, hub, plan); err != nil {
		return err
	}
	plan.fill(r, o.DryRun)
	if plan.Flux != nil && o.Wait && o.DryRun == cli.DryRunNone {
		step, err := plan.Flux.waitReadyStep(ctx, hub, cli.NewDeadline(o.Timeout), cli.NewProgress(o.ErrOut), "the secret is written, the Spoke and the HelmRelease point at it")
		if err != nil {
			_ = o.Output.Print(o.Out, r, r.table)
			return err
		}
		r.HelmRelease = step.Result
	}
	if plan.Warning != "" {
		fmt.Fprintln(o.ErrOut, plan.Warning)
	}
	if err := o.Output.Print(o.Out, r, r.table); err != nil {
		return err
	}
	plan.Release.printDiff(o.Output, o.Out, o.DryRun)
	return nil
}

// read runs every check that asks a cluster or the file system and gathers
// the facts planRotate decides on, with the report of the old and new
// credentials; it writes nothing.
func (o *RotateOptions) read(ctx context.Context, hub *HubClient) (*rotateFacts, *RotateReport, error) {
	s, err := hub.ExistingSpoke(ctx, o.Name)
	if err != nil {
		return nil, nil, err
	}
	if err := refuseComputePool(s); err != nil {
		return nil, nil, err
	}
	ref := s.Spec.Kubeconfig.SecretReference
	if ref == nil {
		return nil, nil, exitcode.RefusedErrorf("spoke %s uses in-cluster credentials, there is no kubeconfig to rotate; nothing was changed", o.Name)
	}
	kc, newCred := o.Kubeconfig.kc, o.Kubeconfig.credential
	newID, err := kc.Reach(ctx)
	if err != nil {
		return nil, nil, o.Kubeconfig.refused(err)
	}
	old, sec, err := hub.StoredKubeconfig(ctx, s)
	if errors.Is(err, errNoSecret) {
		return nil, nil, noSecretToRotate(s)
	}
	if err != nil {
		return nil, nil, exitcode.RefusedErrorf("%w, so there is nothing to compare the new kubeconfig with; nothing was changed", err)
	}
	oldCred, _ := old.Credential(time.Now(), 0)
	same, by := reachOrOffline(ctx, old).SameAs(newID)
	if !same {
		return nil, nil, exitcode.RefusedErrorf("%s reaches a different cluster than spoke %s (different %s); nothing was changed", o.Kubeconfig.File, o.Name, by)
	}
	f := &rotateFacts{Namespace: hub.Namespace, Spoke: s, Current: sec, Credential: newCred, ClusterUID: newID.UID}
	if o.Secret != "" && o.Secret != ref.Name {
		if f.Target, err = o.checkTarget(ctx, hub, newID); err != nil {
			return nil, nil, err
		}
	} else if err := hub.refuseSecretInUse(ctx, ref.Name, o.Name, "nothing was changed: point spoke "+o.Name+" at a Secret of its own with --secret "+secretName(o.Name)+"-SUFFIX"); err != nil {
		// In place too: the Spoke may have been pointed at a Secret that
		// another spoke or the Hub uses.
		return nil, nil, err
	}
	// Under the context name the Spoke reads (spec.kubeconfig.context).
	if f.Kubeconfig, err = kc.BytesAs(s.Spec.Kubeconfig.Context); err != nil {
		return nil, nil, err
	}
	f.File = o.values
	if f.releaseClient, f.Release, err = o.readRelease(hub.Namespace); err != nil {
		return nil, nil, err
	}
	if o.Apply {
		if f.FluxLive, err = hub.readFluxFile(ctx, f.File); err != nil {
			return nil, nil, err
		}
	}
	r := &RotateReport{
		ReportMeta: api.NewNamespacedReportMeta("SpokeKubeconfigRotation", hub.Namespace, o.Name),
		DryRun:     cli.DryRunName(o.DryRun), Secret: ref.Name, SecretUID: string(sec.UID), SameClusterBy: by,
		OldCredential: oldCred.Kind, OldExpires: oldCred.ExpiryString(), NewCredential: newCred.Kind, NewExpires: newCred.ExpiryString(),
	}
	return f, r, nil
}

// noSecretToRotate is the refusal for a Spoke whose secret does not exist.
// Purged after the pivot, the hub no longer uses a stored kubeconfig: there
// is nothing to rotate, and a new one would be deleted again. Missing
// otherwise, there is nothing to prove the new kubeconfig's cluster with;
// add proves it another way.
func noSecretToRotate(s *fleetconfig.Spoke) error {
	ref := s.Spec.Kubeconfig.SecretReference.Name
	if c := missingSecret(s); c.Purged {
		return exitcode.RefusedErrorf("spoke %s's kubeconfig secret %s was purged once the agent on the spoke took it over (cleanupConfig.purgeKubeconfigSecret): the hub uses no stored kubeconfig for it any more, so there is nothing to rotate; nothing was changed. To keep one anyway: kubectl spoke set %s cleanupConfig.purgeKubeconfigSecret=false, then kubectl spoke add %s --spoke-kubeconfig FILE (it proves the cluster is the same before storing it)",
			s.Name, ref, s.Name, s.Name)
	}
	return exitcode.RefusedErrorf("spoke %s's kubeconfig secret %s does not exist, so there is nothing to compare the new kubeconfig with; nothing was changed: store it with kubectl spoke add %s --spoke-kubeconfig FILE, which proves the cluster is the same another way (the kube-system UID recorded on the Spoke)",
		s.Name, ref, s.Name)
}

// access is what applying the plan needs on the hub.
func (p *rotatePlan) access(hub *HubClient) []authz.Permission {
	verb := "update"
	if p.Secret.Existing == nil {
		verb = "create"
	}
	out := []authz.Permission{hub.secretAccess(verb, p.Secret.Name)}
	if p.Patch != nil || p.RecordPatch != nil {
		out = append(out, hub.spokeAccess("patch")...)
	}
	return out
}

// apply writes the secret, points the Spoke at it when it is another, and
// edits the values file. With --dry-run=client it sends nothing; with
// server the writes are server dry runs; under both the file is left alone.
func (o *RotateOptions) apply(ctx context.Context, hub *HubClient, p *rotatePlan) error {
	if o.DryRun == cli.DryRunClient {
		return nil
	}
	if err := hub.WriteSecret(ctx, p.Secret, o.DryRun); err != nil {
		return err
	}
	if p.Patch != nil {
		if err := hub.PatchSpoke(ctx, hub.Namespace, o.Name, p.Patch, o.DryRun); err != nil {
			return fmt.Errorf("pointing Spoke %s at secret %s: %w; the secret was written, the Spoke still uses the old one: run this again", o.Name, p.SecretName, err)
		}
	}
	if p.RecordPatch != nil {
		if err := hub.PatchSpoke(ctx, hub.Namespace, o.Name, p.RecordPatch, o.DryRun); err != nil {
			return fmt.Errorf("recording the new credential on Spoke %s: %w; the secret was written: run this again", o.Name, err)
		}
	}
	if err := p.write(o.DryRun); err != nil {
		return fmt.Errorf("%w; the secret %s was written and the Spoke uses it: run this again, or point the entry at it by hand", err, p.SecretName)
	}
	if err := p.Release.apply(ctx, o.DryRun, 0, cli.NewProgress(o.ErrOut)); err != nil {
		return fmt.Errorf("%w; the secret %s was written and the Spoke uses it, but the release's entry still names the old one: run this again", err, p.SecretName)
	}
	if err := p.Flux.apply(ctx, hub, o.DryRun, cli.NewProgress(o.ErrOut)); err != nil {
		return fmt.Errorf("%w; the secret %s was written and the Spoke and the file use it, but the HelmRelease on the hub still names the old one: run this again", err, p.SecretName)
	}
	return nil
}

// checkTarget refuses a --secret that exists and is not the spoke's own,
// unless it holds a kubeconfig of the same cluster and no other Spoke uses
// it: anything else may be another spoke's credentials, or no kubeconfig at
// all. It returns the secret as read (nil when there is none).
func (o *RotateOptions) checkTarget(ctx context.Context, hub *HubClient, id kubeconfig.Identity) (*corev1.Secret, error) {
	next := "nothing was changed: pick a new name for --secret"
	// Whether or not it exists: a purged secret is still named by its Spoke.
	if err := hub.refuseSecretInUse(ctx, o.Secret, o.Name, next); err != nil {
		return nil, err
	}
	sec, err := hub.kubeconfigSecret(ctx, secretGrantFor{Spoke: o.Name}, o.Secret)
	if err != nil || sec == nil {
		return nil, err
	}
	what := fmt.Sprintf("secret %s/%s exists and is not spoke %s's", hub.Namespace, o.Secret, o.Name)
	kc, err := kubeconfig.FromSecret(sec, fleetconfig.DefaultKubeconfigKey)
	if err != nil {
		return nil, exitcode.RefusedErrorf("%s, and it holds no kubeconfig this command can read (%w); %s", what, err, next)
	}
	if same, by := reachOrOffline(ctx, kc).SameAs(id); !same {
		return nil, exitcode.RefusedErrorf("%s, and its kubeconfig reaches another cluster (different %s); %s", what, by, next)
	}
	return sec, nil
}

// Subjects is the Spoke whose credential was rotated, for -o name.
func (r RotateReport) Subjects() []string { return []string{subject(r.Metadata.Name, false)} }
