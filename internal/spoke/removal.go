package spoke

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/helmrelease"
	"github.com/spokekit/spokekit/internal/values"
)

// removalOptions are what remove and force-remove share: the spoke, the file
// that may hold its entry, the wait's limit and how to print.
type removalOptions struct {
	writeTarget
	Timeout time.Duration
	// Apply applies the edited --helmrelease file to the hub.
	Apply bool

	genericiooptions.IOStreams
}

// RemoveReport is what remove and force-remove print.
type RemoveReport struct {
	api.ReportMeta `json:",inline"`
	DryRun         string   `json:"dryRun,omitempty"`
	Steps          []Step   `json:"steps"`
	Warnings       []string `json:"warnings,omitempty"`
	// Leftovers are what may remain on the spoke cluster, with the commands
	// to remove it.
	Leftovers []string `json:"leftovers,omitempty"`
	// Next is the step left to the user.
	Next string `json:"next,omitempty"`
	// Release is the upgrade of the hub's Helm release (--release).
	Release *releaseUpgrade `json:"release,omitempty"`
}

func (r *RemoveReport) table() cli.Table {
	t := stepsTable(r.Steps)
	for _, l := range r.Leftovers {
		t.Rows = append(t.Rows, []string{"may be left on the spoke", l})
	}
	return t
}

func newRemovalOptions(f *cli.Factory, streams genericiooptions.IOStreams) removalOptions {
	return removalOptions{Timeout: 5 * time.Minute, writeTarget: newWriteTarget(f), IOStreams: streams}
}

// addFlags registers the flags both commands have; timeout says what
// --timeout bounds.
func (o *removalOptions) addFlags(cmd *cobra.Command, timeout string) {
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, timeout)
	o.writeTarget.addFlags(cmd, "Helm values file to remove the spoke's fleetConfig.spokes entry from.",
		"Flux HelmRelease manifest to remove the spoke's spec.values.fleetConfig.spokes entry from.")
	addFluxApplyFlag(cmd, &o.Apply)
}

// Validate rejects bad input before any request.
func (o *removalOptions) Validate() error {
	if err := o.validate(); err != nil {
		return err
	}
	if err := cli.ValidateTimeout(o.Timeout); err != nil {
		return err
	}
	if err := validateFluxApply(o.Apply, o.ReleaseFile); err != nil {
		return err
	}
	return o.readFile()
}

// spoke reads the Spoke to remove (nil when there is none) and refuses one
// a Compute Pool manages or a cluster joined out of band.
func (o *removalOptions) spoke(ctx context.Context, hub *HubClient) (*fleetconfig.Spoke, error) {
	s, err := hub.Spoke(ctx, o.Name)
	if err != nil {
		return nil, err
	}
	if s == nil {
		// No Spoke: gone, or a cluster that joined without one (refused).
		return nil, hub.RefuseOutOfBand(ctx, o.Name)
	}
	if err := refuseComputePool(s); err != nil {
		return nil, err
	}
	return s, nil
}

// deletion is what a removal does to the Spoke.
type deletion string

const (
	deletionGone       deletion = "already deleted"
	deletionInProgress deletion = "already being deleted"
	deletionDelete     deletion = "delete"
)

// annotationAction is what force-remove does with the force-delete annotation.
type annotationAction string

const (
	annotationNone    annotationAction = "none"
	annotationSet     annotationAction = "set"
	annotationPresent annotationAction = "present"
)

// entryRemoval is what a removal does to the values file.
type entryRemoval string

const (
	entryRemovalNoFile  entryRemoval = "no file"
	entryRemovalRemove  entryRemoval = "remove"
	entryRemovalNoEntry entryRemoval = "no entry"
)

// removalInput is what a removal plan is built from: what was read, and
// which command asks.
type removalInput struct {
	Namespace string
	Name      string
	// Spoke is nil when there is none.
	Spoke *fleetconfig.Spoke
	// File is nil when no file was given.
	File *values.File
	// Release is the --release release as read (nil: none given).
	Release       *helmrelease.Release
	releaseClient *helmrelease.Client
	// FluxLive is the live HelmRelease --helmrelease --apply applies over
	// (nil: no such apply).
	FluxLive *unstructured.Unstructured
	// HubRelease is the Helm release named on the fleet's Hub, read only
	// for the next step of a values-file removal of a Spoke without Helm's
	// marks (the seed's job model): "" when not read or none.
	HubRelease string
	// Force is force-remove: the Spoke is annotated for force-delete first,
	// and what may be left on the cluster is listed.
	Force bool
	Wait  bool
}

// removalPlan is what remove and force-remove will do: a value built by
// planRemoval, applied by applyRemoval and shown by steps.
type removalPlan struct {
	Namespace     string   `json:"namespace"`
	Name          string   `json:"name"`
	Deletion      deletion `json:"deletion"`
	DeletingState string   `json:"deletingState,omitempty"`
	// UID guards the delete: a Spoke made again under the name is not deleted.
	UID         types.UID        `json:"uid,omitempty"`
	ForceDelete annotationAction `json:"forceDelete"`
	// Patch sets the annotation (see forceDeletePatch).
	Patch    []api.PatchOp `json:"patch,omitempty"`
	Values   entryRemoval  `json:"values"`
	fileEdit `json:"-"`
	Warning  string `json:"warning,omitempty"`
	// HubAsSpoke says what removing hub-as-spoke does (empty for others).
	HubAsSpoke string   `json:"hubAsSpoke,omitempty"`
	Wait       bool     `json:"wait"`
	Leftovers  []string `json:"leftovers,omitempty"`
	ValuesPath string   `json:"valuesPath,omitempty"`
	// Release is the Helm release named on the Spoke ("" when none).
	Release string `json:"release,omitempty"`
	// HubRelease is the one named on the fleet's Hub, which the next step
	// names when the Spoke names none, as add's does.
	HubRelease string `json:"hubRelease,omitempty"`
	// Upgrade is the upgrade of --release that drops the entry.
	Upgrade *releaseUpgrade `json:"upgrade,omitempty"`
	// Flux is the apply of the --helmrelease file without the entry (nil:
	// none).
	Flux *fluxApply `json:"flux,omitempty"`
}

// planRemoval decides every write of a removal from what was read; it reads
// and writes nothing.
func planRemoval(in removalInput) (*removalPlan, error) {
	// force-remove waits for the cleanup its delete starts: none when the
	// Spoke is gone already. remove --wait also waits out a removal that an
	// earlier run started.
	p := &removalPlan{
		Namespace: in.Namespace, Name: in.Name, Deletion: deletionGone, ForceDelete: annotationNone, Values: entryRemovalNoFile,
		Wait: in.Wait && (in.Spoke != nil || !in.Force),
	}
	s := in.Spoke
	switch {
	case s == nil:
	case s.DeletionTimestamp != nil:
		p.Deletion, p.DeletingState = deletionInProgress, deletingState(s)
	default:
		p.Deletion, p.UID = deletionDelete, s.UID
	}
	if s != nil && in.Force {
		p.ForceDelete, p.Patch = annotationSet, forceDeletePatch(s)
		if s.Annotations[fleetconfig.ForceDeleteAnnotation] == "true" {
			p.ForceDelete, p.Patch = annotationPresent, nil
		}
		p.Leftovers = Leftovers(s)
	}
	if f := in.File; f != nil {
		edited, changed, err := values.Remove(f.Data, f.Kind, in.Name)
		if err != nil {
			return nil, exitcode.RefusedErrorf("%s: %w; nothing was changed", f.Path, err)
		}
		p.File, p.ValuesPath, p.Values = f, f.Path, entryRemovalNoEntry
		if changed {
			p.Edited, p.Values = edited, entryRemovalRemove
		}
	}
	if in.FluxLive != nil {
		var err error
		if p.Flux, err = planFluxFile(in.File, p.Edited, in.FluxLive); err != nil {
			return nil, err
		}
	}
	if in.Release != nil {
		var err error
		p.Upgrade, err = planReleaseUpgrade(in.releaseClient, in.Release, func(doc []byte, kind values.Kind) ([]byte, bool, error) {
			return values.Remove(doc, kind, in.Name)
		})
		if err != nil {
			return nil, err
		}
	}
	p.Release, p.HubRelease = helmRelease(s), in.HubRelease
	switch release := p.Release; {
	case p.Upgrade != nil:
		// The release's values are the ones that matter, and lose the entry.
	case p.Values == entryRemovalNoFile:
		p.Warning = helmWarning(in.Name, release, in.Namespace)
	case p.Values == entryRemovalNoEntry && release != "":
		p.Warning = helmElsewhereWarning(in.Name, release, in.File)
	}
	if s != nil && s.IsHubAsSpoke() && p.Deletion == deletionDelete {
		p.HubAsSpoke = hubAsSpokeRemoval(s.Name)
	}
	return p, nil
}

// hubAsSpokeRemoval names what deleting the hub's own Spoke does.
func hubAsSpokeRemoval(name string) string {
	return fmt.Sprintf("spoke %s is the hub's own cluster: deleting it unjoins the hub from its own fleet (the klusterlet and its agents leave the hub cluster, and what placements put there through OCM goes); the hub itself keeps running", name)
}

// helmRelease is the Helm release that renders s ("" when none, or no s).
func helmRelease(s *fleetconfig.Spoke) string {
	if s == nil {
		return ""
	}
	return HelmRelease(s)
}

// forceDeletePatch adds the force-delete annotation in a JSON patch that
// first tests the Spoke's UID (the Spoke that was checked, not one made
// again under its name) and that what it adds is still absent: a racing
// writer's annotations are never overwritten, the patch fails instead. Not
// the resourceVersion: the FleetConfig controller updates a Spoke's status
// all the time, and a patch guarded by it loses that race.
func forceDeletePatch(s *fleetconfig.Spoke) []api.PatchOp {
	ops := []api.PatchOp{{Op: "test", Path: "/metadata/uid", Value: s.UID}}
	if len(s.Annotations) == 0 {
		return append(ops,
			api.PatchOp{Op: "test", Path: "/metadata/annotations", Value: api.Absent},
			api.PatchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{fleetconfig.ForceDeleteAnnotation: "true"}})
	}
	path := api.AnnotationPath(fleetconfig.ForceDeleteAnnotation)
	return append(ops, api.PatchOp{Op: "test", Path: path, Value: api.Absent}, api.PatchOp{Op: "add", Path: path, Value: "true"})
}

// access is what applying the plan needs on the hub.
func (p *removalPlan) access(h *HubClient) []authz.Permission {
	var verbs []string
	if p.ForceDelete == annotationSet {
		verbs = append(verbs, "patch")
	}
	if p.Deletion == deletionDelete {
		verbs = append(verbs, "delete")
	}
	var out []authz.Permission
	if len(verbs) > 0 {
		out = h.spokeAccess(verbs...)
	}
	if p.Wait {
		out = append(out, h.waitGoneAccess()...)
	}
	return append(out, p.Flux.access(p.Wait)...)
}

// applyRemoval makes the plan's writes: the annotation, the delete, the
// values file. With --dry-run=client it sends nothing; with server the
// writes are server dry runs; under both the file is left alone.
func (h *HubClient) applyRemoval(ctx context.Context, p *removalPlan, dryRun cli.DryRun) error {
	if dryRun == cli.DryRunClient {
		return nil
	}
	if p.ForceDelete == annotationSet {
		if err := h.PatchSpoke(ctx, p.Namespace, p.Name, p.Patch, dryRun); err != nil {
			return fmt.Errorf("annotating Spoke %s/%s for force-delete (refused when it was replaced or its annotations changed since it was read): %w; nothing was changed: run the same command again", p.Namespace, p.Name, err)
		}
	}
	if p.Deletion == deletionDelete {
		if err := h.DeleteSpoke(ctx, p.Namespace, p.Name, p.UID, dryRun); err != nil {
			return fmt.Errorf("deleting Spoke %s/%s: %w; %s: run the same command again", p.Namespace, p.Name, err, p.undone())
		}
	}
	if err := p.write(dryRun); err != nil {
		return fmt.Errorf("%w; the Spoke was deleted: remove the entry by hand", err)
	}
	return nil
}

// undone says what a failed delete did and left undone besides the Spoke.
func (p *removalPlan) undone() string {
	var out []string
	if p.ForceDelete != annotationNone {
		out = append(out, "it is annotated for force-delete")
	}
	if p.Values == entryRemovalRemove {
		out = append(out, "the values entry was not removed")
	}
	if len(out) == 0 {
		return "nothing else was changed"
	}
	return strings.Join(out, ", and ")
}

// steps is what the plan did, or under a dry run would do.
func (p *removalPlan) steps(dryRun cli.DryRun) []Step {
	would := func(s string) string {
		if dryRun != cli.DryRunNone {
			return "would be " + s
		}
		return s
	}
	var out []Step
	switch p.ForceDelete {
	case annotationSet:
		out = append(out, Step{"annotation " + fleetconfig.ForceDeleteAnnotation, would("set")})
	case annotationPresent:
		out = append(out, Step{"annotation " + fleetconfig.ForceDeleteAnnotation, "already set"})
	}
	spoke := "spoke " + p.Namespace + "/" + p.Name
	switch p.Deletion {
	case deletionGone:
		out = append(out, Step{spoke, "already deleted"})
	case deletionInProgress:
		out = append(out, Step{spoke, "already being deleted (" + p.DeletingState + ")"})
	case deletionDelete:
		out = append(out, Step{spoke, would("deleted")})
	}
	switch p.Values {
	case entryRemovalNoEntry:
		out = append(out, Step{"values " + p.ValuesPath, "no entry there"})
	case entryRemovalRemove:
		result := "entry removed"
		if dryRun != cli.DryRunNone {
			result = "entry would be removed"
		}
		out = append(out, Step{"values " + p.ValuesPath, result})
	}
	if p.Upgrade != nil {
		out = append(out, p.Upgrade.step(p.Namespace, dryRun))
	}
	if p.Flux != nil {
		out = append(out, p.Flux.step(dryRun))
	}
	return out
}

// next is the step the removal leaves to the user ("" when none): an entry
// removed from a file reaches the release only with an upgrade, and the
// product requires it, since every upgrade applies the Spokes of the values
// again.
func (p *removalPlan) next(dryRun cli.DryRun) string {
	switch {
	case p.Values != entryRemovalRemove:
		return ""
	case dryRun != cli.DryRunNone:
		return "run again without --dry-run to make these changes"
	case p.Upgrade != nil:
		return "commit " + p.ValuesPath + ", so that the file in git matches the release"
	case p.Flux != nil:
		return "commit " + p.ValuesPath + " where Flux reads it: its next reconcile applies the file from Git again, and with the entry would register the spoke again"
	case p.File.Kind == values.HelmRelease:
		return "apply " + p.ValuesPath + " to the hub (or commit it where Flux reads it), so that Flux upgrades the release without the entry; until then the next upgrade registers the spoke again"
	}
	release := p.Release
	if release == "" {
		release = p.HubRelease
	}
	return "commit " + p.ValuesPath + " and run " + helmUpgrade(release, p.Namespace, p.ValuesPath) + ", so that the release's values lose the entry too; until then the next upgrade registers the spoke again"
}

// registeredAgainWarning is what a new ManagedCluster of the same name
// after the delete means: the klusterlet on the spoke still runs, holds a
// bootstrap credential and asks to join again.
func registeredAgainWarning(name string) string {
	return fmt.Sprintf("Warning: the klusterlet on spoke %[1]s still runs and registered again: ManagedCluster %[1]s is its new request, not accepted. "+
		"Remove the klusterlet from the spoke cluster (below), then kubectl delete managedcluster %[1]s", name)
}

// removal is what tells remove and force-remove apart.
type removal struct {
	// Kind is the report's kind.
	Kind string
	// Check refuses the removal of an existing Spoke, before anything
	// changes; what it found is shown in the confirmation.
	Check func(ctx context.Context, hub *HubClient, s *fleetconfig.Spoke) (evidence []string, err error)
	// Force annotates the Spoke for force-delete first.
	Force bool
	Wait  bool
	// Confirm, when set, asks before the first write to an existing Spoke,
	// showing the evidence; Check then runs again, since the answer may
	// come long after the first check.
	Confirm func(ctx context.Context, evidence []string) error
	// AfterTimeout is what to do when the wait runs out.
	AfterTimeout string
}

// run reads and checks, plans, applies, warns, waits and prints.
func (o *removalOptions) run(ctx context.Context, how removal) error {
	hub, err := NewHubClient(ctx, o.f)
	if err != nil {
		return err
	}
	s, err := o.spoke(ctx, hub)
	if err != nil {
		return err
	}
	rc, rel, err := o.readRelease(hub.Namespace)
	if err != nil {
		return err
	}
	var fluxLive *unstructured.Unstructured
	if o.Apply {
		if fluxLive, err = hub.readFluxFile(ctx, o.values); err != nil {
			return err
		}
	}
	var evidence []string
	if s != nil {
		if evidence, err = how.Check(ctx, hub, s); err != nil {
			return err
		}
	}
	var hubRelease string
	if o.values != nil && o.values.Kind == values.HelmValues && rel == nil && helmRelease(s) == "" {
		hubRelease = hub.fleetRelease(ctx, s)
	}
	plan, err := planRemoval(removalInput{
		Namespace: hub.Namespace, Name: o.Name, Spoke: s, File: o.values, Release: rel, releaseClient: rc, FluxLive: fluxLive,
		HubRelease: hubRelease, Force: how.Force, Wait: how.Wait,
	})
	if err != nil {
		return err
	}
	if err := hub.preflight(ctx, o.DryRun, nil, plan.access(hub)); err != nil {
		return err
	}
	var warnings []string
	if plan.HubAsSpoke != "" {
		// Said before anything happens, and part of the question.
		warnings = append(warnings, "Warning: "+plan.HubAsSpoke)
		evidence = append(evidence, plan.HubAsSpoke)
		fmt.Fprintln(o.ErrOut, warnings[0])
	}
	if how.Confirm != nil && s != nil && o.DryRun != cli.DryRunClient {
		if err := how.Confirm(ctx, evidence); err != nil {
			return err
		}
		if _, err := how.Check(ctx, hub, s); err != nil {
			return fmt.Errorf("checked again after the confirmation: %w", err)
		}
	}
	var registered types.UID
	if plan.Wait && o.DryRun == cli.DryRunNone {
		mc, err := hub.ManagedCluster(ctx, o.Name)
		if err != nil {
			return err
		}
		if mc != nil {
			registered = mc.UID
		}
	}
	if err := hub.applyRemoval(ctx, plan, o.DryRun); err != nil {
		return err
	}
	// After the delete, as the seed orders it: the job the upgrade runs
	// applies only the entries left.
	progress := cli.NewProgress(o.ErrOut)
	if err := plan.Upgrade.apply(ctx, o.DryRun, o.Timeout, progress); err != nil {
		return fmt.Errorf("%w; the Spoke is deleted, but the release still lists it: run the same command again, or its next upgrade registers the spoke again", err)
	}
	if err := plan.Flux.apply(ctx, hub, o.DryRun, progress); err != nil {
		return fmt.Errorf("%w; the Spoke is deleted and the entry left the file, but the HelmRelease on the hub still lists it: run the same command again, or Flux's next upgrade registers the spoke again", err)
	}
	// What may stay on the cluster is said before the wait, so a dry run
	// and a wait that runs out say it too.
	r := &RemoveReport{
		ReportMeta: api.NewNamespacedReportMeta(how.Kind, hub.Namespace, o.Name), DryRun: cli.DryRunName(o.DryRun), Steps: plan.steps(o.DryRun),
		Leftovers: plan.Leftovers, Next: plan.next(o.DryRun), Release: plan.Upgrade,
	}
	r.Warnings = warnings
	if plan.Warning != "" {
		r.Warnings = append(r.Warnings, plan.Warning)
		fmt.Fprintln(o.ErrOut, plan.Warning)
	}
	if plan.Wait && o.DryRun == cli.DryRunNone {
		d := cli.NewDeadline(o.Timeout)
		if plan.Flux != nil {
			step, err := plan.Flux.waitReadyStep(ctx, hub, d, progress, "the Spoke is deleted and the HelmRelease applied without the entry")
			if err != nil {
				_ = o.print(r)
				return err
			}
			r.Steps = append(r.Steps, step)
		}
		again, err := hub.WaitGone(ctx, o.Name, registered, d, progress)
		if err != nil {
			_ = o.print(r)
			return fmt.Errorf("%w; %s", err, how.AfterTimeout)
		}
		r.Steps = append(r.Steps, Step{"spoke, ManagedCluster and namespace " + o.Name, "gone"})
		if again {
			w := registeredAgainWarning(o.Name)
			r.Warnings = append(r.Warnings, w)
			fmt.Fprintln(o.ErrOut, w)
		}
	}
	return o.print(r)
}

// print writes the report; after the table, the next step is a hint on
// stderr, as add gives it (with -o it is the report's next field).
func (o *removalOptions) print(r *RemoveReport) error {
	if err := o.Output.Print(o.Out, r, r.table); err != nil {
		return err
	}
	r.Release.printDiff(o.Output, o.Out, o.DryRun)
	if o.Output.IsTable() && r.Next != "" {
		fmt.Fprintln(o.ErrOut, "Next: "+r.Next)
	}
	return nil
}
