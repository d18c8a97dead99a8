package spoke

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	yaml "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
	"github.com/spokekit/spokekit/internal/spoke/hubclient"
)

// AddOptions are the options of `kubectl spoke add`.
type AddOptions struct {
	writeTarget
	Kubeconfig spokeKubeconfig
	CopyFrom   string
	HubName    string
	Apply      bool
	Wait       bool
	Overwrite  bool
	Timeout    time.Duration
	// OCIRegistry is the new entry's ociRegistry as YAML ("": copied).
	OCIRegistry string
	ociRegistry map[string]any
	// Cleanup is the new spoke's cleanupConfig, written in full.
	Cleanup fleetconfig.CleanupConfig

	hub *HubClient
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
	// Release is the upgrade of the hub's Helm release (--release).
	Release *releaseUpgrade `json:"release,omitempty"`
	Next    string          `json:"next,omitempty"`
}

// NewCmdAdd builds `kubectl spoke add`.
func NewCmdAdd(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &AddOptions{Timeout: 5 * time.Minute, Kubeconfig: spokeKubeconfig{MinLifetime: kubeconfig.DefaultMinLifetime}, Cleanup: fleetconfig.ChartCleanupDefaults, writeTarget: newWriteTarget(f), IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "add NAME --spoke-kubeconfig FILE",
		Short: "Register a cluster as a spoke: check its kubeconfig, store it, add it to the values, join it",
		Long: cli.LongDesc(`
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
			--helmrelease), copying ociRegistry, hubRef and the klusterlet's
			settings of an existing entry (--copy-from, by default the first
			that is not hub-as-spoke; of hub-as-spoke, the hub's own cluster,
			only ociRegistry and hubRef, never its klusterlet settings), never
			its kubeconfig, add-ons or purges, and keeping every comment and
			byte of the rest of the file. An entry without ociRegistry is
			refused (every spoke entry needs one): give it with --oci-registry.
			The entry's cleanupConfig is written in full, with the chart's
			documented defaults (purgeKlusterletOperator and forceClusterDrain
			on, the two others off) unless the --purge-* and
			--force-cluster-drain flags say otherwise.

			In FleetConfig's addon mode (the chart's default, shown on the hub
			by the fleetconfig-controller-agent ClusterManagementAddOn) the
			entry and the Spoke list addOns: [{configName:
			fleetconfig-controller-agent}]; in unified mode they do not. When
			the mode cannot be read, add refuses (exit 3). With --apply it
			creates the Spoke as the chart would, klusterlet.featureGates
			rendered from the file's fleetConfig.spokeFeatureGates (the chart's
			default without one), so the join starts now; with --wait it
			follows the join until the cluster is available.

			With --helmrelease and --apply (a hub whose release Flux manages),
			it creates no Spoke: it server-side applies the edited HelmRelease
			to the hub under its own field manager, so Flux upgrades the
			release now and the release's job applies the Spoke. It refuses
			(exit 3, nothing written) when there is no such HelmRelease on the
			hub, or when the live one differs from the file outside
			spec.values. With --wait it waits for the HelmRelease to be Ready
			at the applied generation, then for the join. Commit the file
			where Flux reads it: Flux applies it from Git again.

			For a Spoke that exists already, the new kubeconfig is stored only
			when its cluster is shown to be the Spoke's: by the stored
			kubeconfig, or when that secret is gone (purged in addon mode) by
			the kube-system namespace UID recorded on the Spoke when a
			kubeconfig was stored; otherwise add exits 3 and writes nothing. It
			never writes a secret the Hub or another Spoke names. A cluster
			whose kube-system UID another Spoke records is refused (exit 3),
			naming that Spoke: the hub has it already under another name.

			A cluster whose klusterlet is still registered with another hub (its
			bootstrap kubeconfig, secret
			open-cluster-management-agent/bootstrap-hub-kubeconfig, names a hub
			server that is neither this hub's address, the Hub's spec.apiServer,
			nor signed by this hub's CA) is refused (exit 3), naming that hub:
			remove it there first.

			Running it again with the same arguments changes nothing.`),
		Example: templates.Examples(`
			# Check everything and show what would be written
			kubectl spoke add spoke-2 --spoke-kubeconfig spoke-2.kubeconfig --values values.yaml --dry-run=client

			# Store the kubeconfig and add the values entry; helm upgrade does the rest
			kubectl spoke add spoke-2 --spoke-kubeconfig spoke-2.kubeconfig --values values.yaml

			# The seed's path: upgrade the hub's release with the new entry, and wait for the join
			kubectl spoke add spoke-2 --spoke-kubeconfig spoke-2.kubeconfig --release mural --wait

			# Flux: edit the HelmRelease manifest, and join right away
			kubectl spoke add spoke-2 --spoke-kubeconfig spoke-2.kubeconfig --helmrelease clusters/hub/mural.yaml --apply --wait`),
		Args:              cli.ExactArgs(1, "NAME"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              cli.RunE(o, o.Complete),
	}
	fl := cmd.Flags()
	o.Kubeconfig.addFlags(cmd, "Kubeconfig file of the cluster to register (its current context is used).")
	fl.StringVar(&o.CopyFrom, "copy-from", "", "Entry of fleetConfig.spokes to copy ociRegistry, hubRef and the klusterlet's settings from (of hub-as-spoke only ociRegistry and hubRef); default the first that is not hub-as-spoke.")
	fl.StringVar(&o.OCIRegistry, "oci-registry", "", "The new entry's ociRegistry, as a YAML mapping (e.g. '{endpoint: oci://registry.example.com/mural}'), instead of the copied one.")
	fl.StringVar(&o.HubName, "hub", "", "Hub resource the spoke joins, when the namespace has several.")
	fl.BoolVar(&o.Apply, "apply", false, "For a hub without a Helm-managed release: also create the Spoke now, as the chart would render it (with Helm's ownership marks only when the release's chart renders Spokes itself). With --helmrelease: server-side apply the edited HelmRelease to the hub instead, refused when the live one differs from the file outside spec.values.")
	fl.BoolVar(&o.Wait, "wait", false, "With --release or --apply: wait until the spoke has joined and is available (with --helmrelease --apply, first until the HelmRelease is Ready).")
	fl.BoolVar(&o.Overwrite, "overwrite", false, "Replace an existing NAME-kubeconfig secret that reaches a different cluster.")
	fl.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long --wait waits (0: no limit).")
	fl.BoolVar(&o.Cleanup.PurgeKlusterletOperator, "purge-klusterlet-operator", o.Cleanup.PurgeKlusterletOperator, "cleanupConfig: on removal, remove the Klusterlet operator and the OCM namespaces from the spoke.")
	fl.BoolVar(&o.Cleanup.PurgeKubeconfigSecret, "purge-kubeconfig-secret", o.Cleanup.PurgeKubeconfigSecret, "cleanupConfig: delete NAME-kubeconfig once the agent manages the spoke (rotate-kubeconfig then has nothing to rotate).")
	fl.BoolVar(&o.Cleanup.PurgeAgentNamespace, "purge-agent-namespace", o.Cleanup.PurgeAgentNamespace, "cleanupConfig: on removal, remove the agent namespace from the spoke.")
	fl.BoolVar(&o.Cleanup.ForceClusterDrain, "force-cluster-drain", o.Cleanup.ForceClusterDrain, "cleanupConfig: on removal, move placement-managed workloads off the spoke first.")
	o.addFlags(cmd, "Helm values file whose fleetConfig.spokes gets the new entry.", "Flux HelmRelease manifest whose spec.values.fleetConfig.spokes gets the new entry.")
	return cmd
}

// Validate rejects bad input before any request.
func (o *AddOptions) Validate() error {
	if err := o.validate(); err != nil {
		return err
	}
	if o.CopyFrom != "" && o.ValuesFile == "" && o.ReleaseFile == "" && o.Release == "" {
		return exitcode.UsageErrorf("--copy-from needs --values, --helmrelease or --release")
	}
	if o.Apply && o.Release != "" {
		return exitcode.UsageErrorf("--release upgrades the hub's release, whose job applies the Spoke; --apply is for a hub without a Helm-managed release: give one of them")
	}
	if err := o.parseOCIRegistry(); err != nil {
		return err
	}
	if o.Name == fleetconfig.HubAsSpokeName {
		return exitcode.RefusedErrorf("%s is the name FleetConfig gives the hub's own cluster (registered in-cluster, without a kubeconfig); nothing was changed: pick another name", o.Name)
	}
	if o.Wait && !o.Apply && o.Release == "" {
		return exitcode.UsageErrorf("--wait needs --release or --apply; without them the Spoke appears with the next helm upgrade (then run kubectl spoke status %s)", o.Name)
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

// parseOCIRegistry reads --oci-registry: YAML, a mapping.
func (o *AddOptions) parseOCIRegistry() error {
	if o.OCIRegistry == "" {
		return nil
	}
	if o.ValuesFile == "" && o.ReleaseFile == "" && o.Release == "" {
		return exitcode.UsageErrorf("--oci-registry needs --values, --helmrelease or --release: it goes into the new entry")
	}
	if err := yaml.Unmarshal([]byte(o.OCIRegistry), &o.ociRegistry); err != nil || len(o.ociRegistry) == 0 {
		return exitcode.UsageErrorf("--oci-registry is the entry's ociRegistry as a YAML mapping, e.g. '{endpoint: oci://registry.example.com/mural}'")
	}
	return nil
}

// Run checks everything, then writes.
func (o *AddOptions) Run(ctx context.Context) error {
	hub, err := NewHubClient(ctx, o.f)
	if err != nil {
		return err
	}
	o.hub = hub
	facts, err := o.read(ctx)
	if err != nil {
		return err
	}
	plan, err := planAdd(o, *facts)
	if err != nil {
		return err
	}
	if err := hub.preflight(ctx, o.DryRun, &secretGrantFor{Spoke: o.Name}, plan.access(o.Wait, hub)); err != nil {
		return err
	}
	report := &AddReport{ReportMeta: api.NewNamespacedReportMeta("SpokeAdd", hub.Namespace, o.Name), Credential: plan.Credential, Release: plan.Release}
	report.DryRun = cli.DryRunName(o.DryRun)
	p := cli.NewProgress(o.ErrOut)
	if err := o.apply(ctx, plan, p); err != nil {
		return err
	}
	report.Steps = plan.steps(hub.Namespace, o.Name, o.DryRun)
	if o.DryRun != cli.DryRunNone {
		report.Spoke = plan.Spoke
		// Only what add writes: the metadata of a secret already there
		// (its last-applied-configuration annotation holds the old
		// kubeconfig, in the clear) is not shown.
		report.Secret = hubclient.SecretWrite{Namespace: plan.Secret.Namespace, Name: plan.Secret.Name, Key: plan.Secret.Key, Data: facts.Redacted}.Object()
	}
	if o.Wait && o.DryRun == cli.DryRunNone {
		d := cli.NewDeadline(o.Timeout)
		if plan.Flux != nil {
			step, err := plan.Flux.waitReadyStep(ctx, hub, d, p, "the secret, the file and the HelmRelease are in place")
			if err != nil {
				_ = o.print(report)
				return err
			}
			report.Steps = append(report.Steps, step)
		}
		if err := hub.WaitJoined(ctx, o.Name, d, p); err != nil {
			_ = o.print(report)
			return fmt.Errorf("%w; the secret, values entry and Spoke (or the release's revision that applies it) are in place: run `kubectl spoke status %s` to see why, or the same add again to keep waiting", err, o.Name)
		}
		report.Steps = append(report.Steps, Step{"join", "joined and available"})
		if plan.RecordAction == recordNoSpokeYet {
			if err := o.recordJoined(ctx, plan, report); err != nil {
				return err
			}
		}
	}
	report.Next = o.next(facts.Hub)
	return o.print(report)
}

// print writes the report; after the table, the next step is a hint on
// stderr, as in every plugin (with -o it is the report's next field).
func (o *AddOptions) print(r *AddReport) error {
	if err := o.Output.Print(o.Out, r, func() cli.Table { return stepsTable(r.Steps) }); err != nil {
		return err
	}
	r.Release.printDiff(o.Output, o.Out, o.DryRun)
	if o.Output.IsTable() && r.Next != "" {
		fmt.Fprintln(o.ErrOut, "Next: "+r.Next)
	}
	return nil
}

func (o *AddOptions) next(hub *fleetconfig.Hub) string {
	if o.DryRun != cli.DryRunNone {
		return "run again without --dry-run to make these changes"
	}
	file, _ := o.file()
	release := hub.Annotations[fleetconfig.HelmReleaseNameAnnotation]
	switch {
	case o.Release != "" && o.Wait:
		return ""
	case o.Release != "":
		return "the release's job applies the Spoke after the upgrade: kubectl spoke status " + o.Name
	case o.ReleaseFile != "" && o.Apply:
		return "commit " + o.ReleaseFile + " where Flux reads it: its next reconcile applies the file from Git again, and without the entry would unregister the spoke"
	case o.ReleaseFile != "":
		return "apply " + o.ReleaseFile + " to the hub (or commit it where Flux reads it): Flux's upgrade registers the spoke; then: kubectl spoke status " + o.Name
	case o.Apply && file != "":
		return "commit " + file + " and run " + helmUpgrade(release, hub.Namespace, file) + ", so the release keeps the spoke's entry"
	case file != "":
		return "run " + helmUpgrade(release, hub.Namespace, file) + ": the upgrade registers the spoke; then: kubectl spoke status " + o.Name
	case o.Apply:
		return entryStep(o.Name, release, hub.Namespace, "add") + ", or the next helm upgrade will not know the spoke"
	}
	return entryStep(o.Name, release, hub.Namespace, "add") + ", or run this again with --apply"
}

// read runs every check that asks a cluster or the file system, and
// gathers the facts planAdd decides on; it writes nothing.
func (o *AddOptions) read(ctx context.Context) (*addFacts, error) {
	f := &addFacts{Namespace: o.hub.Namespace, Credential: o.Kubeconfig.credential, File: o.values}
	kc := o.Kubeconfig.kc
	var err error
	if f.Hub, err = o.findHub(ctx); err != nil {
		return nil, err
	}
	if f.Mode, err = o.hub.readFleetMode(ctx); err != nil {
		return nil, err
	}
	if f.releaseClient, f.Release, err = o.readRelease(o.hub.Namespace); err != nil {
		return nil, err
	}
	switch {
	case o.Apply && o.ReleaseFile != "":
		if f.FluxLive, err = o.hub.readFluxFile(ctx, f.File); err != nil {
			return nil, err
		}
	case o.Apply:
		if f.HelmOwned, err = o.hub.helmOwnsSpokes(ctx, f.Hub); err != nil {
			return nil, err
		}
	}
	id, err := kc.Reach(ctx)
	if err != nil {
		return nil, o.Kubeconfig.refused(err)
	}
	missing, err := kc.MissingPermissions(ctx, kubeconfig.JoinPermissions)
	if err != nil {
		return nil, o.Kubeconfig.refused(err)
	}
	if len(missing) > 0 {
		return nil, exitcode.RefusedErrorf("%s: user %q may not do what the join needs on %s: %s; nothing was changed: grant them (see the platform's spoke RBAC guide) or use another identity",
			o.Kubeconfig.File, kc.User, kc.Server, strings.Join(missing, ", "))
	}
	if err := o.refuseOtherHub(ctx, f.Hub); err != nil {
		return nil, err
	}
	f.ClusterUID = id.UID
	if f.Spoke, err = o.checkName(ctx, id); err != nil {
		return nil, err
	}
	if err := o.hub.refuseKnownCluster(ctx, o.Name, id); err != nil {
		return nil, err
	}
	if f.Kubeconfig, err = kc.Bytes(); err != nil {
		return nil, exitcode.RefusedErrorf("encoding the minified kubeconfig: %w; nothing was changed", err)
	}
	if f.Redacted, err = kc.Redacted(); err != nil {
		return nil, err
	}
	if f.Secret, err = o.hub.kubeconfigSecret(ctx, secretGrantFor{Spoke: o.Name}, secretName(o.Name)); err != nil {
		return nil, err
	}
	s := f.Secret
	if s != nil && bytes.Equal(s.Data[fleetconfig.DefaultKubeconfigKey], f.Kubeconfig) {
		return f, nil
	}
	// The secret will be written: never one another component uses, even
	// when it does not exist (a purged secret is still named).
	if err := o.hub.refuseSecretInUse(ctx, secretName(o.Name), o.Name, "nothing was changed: pick another name"); err != nil {
		return nil, err
	}
	if s != nil && !o.Overwrite {
		old, err := kubeconfig.FromSecret(s, fleetconfig.DefaultKubeconfigKey)
		if err != nil {
			f.SecretHolds.Unreadable = err
		} else if same, by := reachOrOffline(ctx, old).SameAs(id); !same {
			f.SecretHolds.OtherCluster = by
		}
	}
	return f, nil
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
		return nil, exitcode.RefusedErrorf("there is no Hub %q in namespace %s; nothing was changed: pick the fleet's namespace with -n", o.HubName, o.hub.Namespace)
	case len(names) == 0:
		return nil, exitcode.RefusedErrorf("there is no fleet Hub in namespace %s; nothing was changed: pick the fleet's release namespace with -n", o.hub.Namespace)
	}
	return nil, exitcode.RefusedErrorf("namespace %s has several Hubs (%s); nothing was changed: pick one with --hub", o.hub.Namespace, strings.Join(names, ", "))
}

// checkName refuses a name another cluster uses, and returns the Spoke of
// that name (nil: none). The same cluster under the same name is a re-run.
func (o *AddOptions) checkName(ctx context.Context, id kubeconfig.Identity) (*fleetconfig.Spoke, error) {
	s, err := o.hub.Spoke(ctx, o.Name)
	if err != nil {
		return nil, err
	}
	if s == nil {
		mc, err := o.hub.ManagedCluster(ctx, o.Name)
		if err != nil {
			return nil, err
		}
		if mc != nil {
			return nil, exitcode.RefusedErrorf("a ManagedCluster %s already exists without a Spoke (joined some other way); nothing was changed: pick another name, or unjoin that cluster first", o.Name)
		}
		return nil, nil
	}
	if err := refuseComputePool(s); err != nil {
		return nil, err
	}
	if s.DeletionTimestamp != nil {
		return nil, exitcode.RefusedErrorf("spoke %s is being deleted; nothing was changed: wait for it to go (kubectl spoke status %s), then add it again", o.Name, o.Name)
	}
	ref := s.Spec.Kubeconfig.SecretReference
	if ref == nil || ref.Name != secretName(o.Name) {
		return nil, exitcode.RefusedErrorf("spoke %s already exists and takes its kubeconfig from elsewhere; nothing was changed: pick another name, or use kubectl spoke rotate-kubeconfig %s", o.Name, o.Name)
	}
	// Whatever the secret holds, or whether it exists at all, the new
	// credential goes under this Spoke only when its cluster is shown to
	// be the Spoke's (--overwrite is about the secret, not the Spoke).
	if _, err := o.hub.proveSameCluster(ctx, s, o.Kubeconfig.kc, id); err != nil {
		return nil, err
	}
	return s, nil
}

// apply makes the plan's writes: the secret, the values file, the Spoke.
// With --dry-run=client it sends nothing; with server every write is a
// server dry run; under both the file is left alone.
func (o *AddOptions) apply(ctx context.Context, plan *addPlan, p *cli.Progress) error {
	if o.DryRun != cli.DryRunClient && plan.SecretAction != secretUnchanged {
		p.Update("writing secret %s/%s", plan.Secret.Namespace, plan.Secret.Name)
		if err := o.hub.WriteSecret(ctx, plan.Secret, o.DryRun); err != nil {
			return err
		}
	}
	if err := plan.write(o.DryRun); err != nil {
		return fmt.Errorf("%w; the secret %s is in place: fix that and run the same command again", err, plan.Secret.Name)
	}
	// After the secret: the job the upgrade runs applies a Spoke that names it.
	if err := plan.Release.apply(ctx, o.DryRun, o.Timeout, p); err != nil {
		return fmt.Errorf("%w; the secret %s and the values file are in place: run the same command again", err, plan.Secret.Name)
	}
	if err := plan.Flux.apply(ctx, o.hub, o.DryRun, p); err != nil {
		return fmt.Errorf("%w; the secret %s and the file are in place", err, plan.Secret.Name)
	}
	if plan.SpokeAction == spokeCreate && o.DryRun != cli.DryRunClient {
		p.Update("creating Spoke %s", o.Name)
		if err := o.hub.CreateSpoke(ctx, plan.Spoke, o.DryRun); err != nil {
			return fmt.Errorf("%w; the secret and values entry are in place: run the same command again", err)
		}
	}
	if plan.RecordPatch != nil && o.DryRun != cli.DryRunClient {
		p.Update("recording the secret on Spoke %s", o.Name)
		if err := o.hub.PatchSpoke(ctx, o.hub.Namespace, o.Name, plan.RecordPatch, o.DryRun); err != nil {
			return fmt.Errorf("recording what was written on Spoke %s: %w; the secret and values entry are in place: run the same command again", o.Name, err)
		}
	}
	return nil
}

// recordJoined records on the Spoke the release's job applied what add
// wrote, once the wait saw it join: the record the Spoke could not carry
// before it existed (see Record).
func (o *AddOptions) recordJoined(ctx context.Context, plan *addPlan, report *AddReport) error {
	s, err := o.hub.Spoke(ctx, o.Name)
	if err == nil && s == nil {
		err = fmt.Errorf("spoke %s is gone", o.Name)
	}
	if err == nil && !recorded(s, plan.Record) {
		err = o.hub.PatchSpoke(ctx, o.hub.Namespace, o.Name, recordPatch(s, plan.Record), cli.DryRunNone)
	}
	if err != nil {
		return fmt.Errorf("recording what was written on Spoke %s: %w; the spoke joined: run the same add again to record it", o.Name, err)
	}
	what := "record on spoke " + o.hub.Namespace + "/" + o.Name
	for i := range report.Steps {
		if report.Steps[i].What == what {
			report.Steps[i].Result = "written once the Spoke joined (secret, credential, kube-system UID)"
		}
	}
	return nil
}

// Subjects is the Spoke added, for -o name.
func (r AddReport) Subjects() []string { return []string{subject(r.Metadata.Name, false)} }
