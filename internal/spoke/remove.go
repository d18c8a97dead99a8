package spoke

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/values"
)

// RemoveOptions are the options of `kubectl spoke remove`.
type RemoveOptions struct {
	Name        string
	ValuesFile  string
	ReleaseFile string
	Wait        bool
	Timeout     time.Duration
	DryRun      cli.DryRun
	Output      *cli.Output

	f *cli.Factory
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
}

func (r *RemoveReport) table() cli.Table {
	t := stepsTable(r.Steps)
	for _, l := range r.Leftovers {
		t.Rows = append(t.Rows, []string{"left on the spoke", l})
	}
	return t
}

// NewCmdRemove builds `kubectl spoke remove`.
func NewCmdRemove(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &RemoveOptions{Timeout: 5 * time.Minute, Output: cli.NewOutput(), f: f, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Unregister a spoke the graceful way, after checking nothing blocks it",
		Long: templates.LongDesc(`
			Remove a spoke from the fleet: the hub unjoins the cluster, removes the
			klusterlet from it and deletes the ManagedCluster and its namespace.

			Refused (exit 3, nothing changed) while ManifestWorks in the cluster's
			namespace would keep the hub waiting forever: works no placement or
			add-on owns (listed with the command to delete them), and placement
			works unless cleanupConfig.forceClusterDrain is on (run kubectl
			fleetdrain cluster first) or whose placements tolerate the
			workload-cleanup taint the hub then adds.

			With --values or --helmrelease the spoke's entry leaves the file too;
			without, a Helm-rendered spoke gets a warning: the next helm upgrade
			would register it again. With --wait it waits until the Spoke, the
			ManagedCluster and the cluster namespace are gone.`),
		Example: templates.Examples(`
			# Remove spoke-2 and its values entry, and wait until it is gone
			kubectl spoke remove spoke-2 --values values.yaml --wait

			# Only check what would happen
			kubectl spoke remove spoke-2 --dry-run=client`),
		Args:              cli.ExactArgs(1, "NAME"),
		ValidArgsFunction: cli.ResourceNames(f, spokeResourceName),
		RunE:              cli.RunE(o, o.Complete),
	}
	fl := cmd.Flags()
	fl.StringVar(&o.ValuesFile, "values", "", "Helm values file to remove the spoke's fleetConfig.spokes entry from.")
	fl.StringVar(&o.ReleaseFile, "helmrelease", "", "Flux HelmRelease manifest to remove the spoke's entry from.")
	fl.BoolVar(&o.Wait, "wait", false, "Wait until the Spoke, its ManagedCluster and the cluster namespace are gone.")
	fl.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long --wait waits (0: no limit).")
	_ = cmd.MarkFlagFilename("values", "yaml", "yml")
	_ = cmd.MarkFlagFilename("helmrelease", "yaml", "yml")
	cli.AddDryRunFlag(cmd)
	o.Output.AddFlags(cmd)
	return cmd
}

// Complete reads the arguments and the dry-run strategy.
func (o *RemoveOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Name = args[0]
	var err error
	o.DryRun, err = cli.GetDryRun(cmd)
	return err
}

// Validate rejects bad input before any request.
func (o *RemoveOptions) Validate() error {
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

// Run checks, deletes, edits the file and waits.
func (o *RemoveOptions) Run(ctx context.Context) error {
	hub, err := NewHub(ctx, o.f)
	if err != nil {
		return err
	}
	r := &RemoveReport{ReportMeta: api.NewNamespacedReportMeta("SpokeRemove", hub.Namespace, o.Name), DryRun: cli.DryRunName(o.DryRun)}
	s, err := hub.Spoke(ctx, o.Name)
	if err != nil {
		return err
	}
	if s != nil {
		if err := refuseComputePool(s); err != nil {
			return err
		}
		if err := refuseBlockedRemoval(ctx, hub, s); err != nil {
			return err
		}
	} else if err := hub.RefuseOutOfBand(ctx, o.Name); err != nil {
		return err
	}
	edit, err := planValuesRemoval(o.ValuesFile, o.ReleaseFile, o.Name)
	if err != nil {
		return err
	}
	var needs []cli.Access
	if s != nil && s.DeletionTimestamp == nil {
		needs = hub.spokeAccess("delete")
	}
	if o.Wait {
		needs = append(needs, hub.waitGoneAccess()...)
	}
	if err := hub.preflight(ctx, o.DryRun, needs); err != nil {
		return err
	}
	verb := func(s string) string {
		if o.DryRun != cli.DryRunNone {
			return "would be " + s
		}
		return s
	}
	switch {
	case s == nil:
		r.Steps = append(r.Steps, Step{"spoke " + hub.Namespace + "/" + o.Name, "already deleted"})
	case s.DeletionTimestamp != nil:
		r.Steps = append(r.Steps, Step{"spoke " + hub.Namespace + "/" + o.Name, "already being deleted (" + deletingState(s) + ")"})
	default:
		if o.DryRun != cli.DryRunClient {
			uid := s.UID
			err := hub.Dynamic.Resource(fleetconfig.SpokeResource).Namespace(hub.Namespace).Delete(ctx, o.Name,
				metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, DryRun: cli.DryRunOption(o.DryRun)})
			if err != nil {
				return fmt.Errorf("deleting Spoke %s/%s: %w; %s: run the same command again", hub.Namespace, o.Name, err, notRemoved(edit))
			}
		}
		r.Steps = append(r.Steps, Step{"spoke " + hub.Namespace + "/" + o.Name, verb("deleted")})
	}
	if edit != nil {
		step, err := edit.apply(o.DryRun)
		if err != nil {
			return fmt.Errorf("%w; the Spoke was deleted: remove the entry by hand", err)
		}
		r.Steps = append(r.Steps, step)
	} else if s != nil {
		if release := HelmRelease(s); release != "" {
			w := helmWarning(o.Name, release)
			r.Warnings = append(r.Warnings, w)
			fmt.Fprintln(o.ErrOut, w)
		}
	}
	if o.Wait && o.DryRun == cli.DryRunNone {
		if err := hub.WaitGone(ctx, o.Name, cli.NewDeadline(o.Timeout), cli.NewProgress(o.ErrOut)); err != nil {
			_ = o.Output.Print(o.Out, r, r.table)
			return fmt.Errorf("%w; the Spoke is marked for deletion: see kubectl spoke status %s, and if the cluster is gone for good, kubectl spoke force-remove %s", err, o.Name, o.Name)
		}
		r.Steps = append(r.Steps, Step{"spoke, ManagedCluster and namespace " + o.Name, "gone"})
	}
	return o.Output.Print(o.Out, r, r.table)
}

// notRemoved says what a failed delete left undone besides the Spoke.
func notRemoved(edit *valuesRemoval) string {
	if edit != nil && edit.changed {
		return "the values entry was not removed"
	}
	return "nothing else was changed"
}

// valuesRemoval is a planned edit of a values file.
type valuesRemoval struct {
	file    *values.File
	edited  []byte
	changed bool
}

// planValuesRemoval reads the file and computes the edit; nil without a file.
func planValuesRemoval(valuesFile, releaseFile, name string) (*valuesRemoval, error) {
	path, kind := valuesFile, values.HelmValues
	if releaseFile != "" {
		path, kind = releaseFile, values.HelmRelease
	}
	if path == "" {
		return nil, nil
	}
	f, err := values.Read(path, kind)
	if err != nil {
		return nil, cli.Refusedf("%w; nothing was changed", err)
	}
	edited, changed, err := values.Remove(f.Data, kind, name)
	if err != nil {
		return nil, cli.Refusedf("%s: %w; nothing was changed", path, err)
	}
	return &valuesRemoval{file: f, edited: edited, changed: changed}, nil
}

func (v *valuesRemoval) apply(dryRun cli.DryRun) (Step, error) {
	what := "values " + v.file.Path
	if !v.changed {
		return Step{what, "no entry there"}, nil
	}
	if dryRun != cli.DryRunNone {
		return Step{what, "entry would be removed"}, nil
	}
	if err := v.file.Write(v.edited); err != nil {
		return Step{}, err
	}
	return Step{what, "entry removed"}, nil
}

// refuseBlockedRemoval refuses, before anything changes, a removal the hub
// would wait on forever (FindRemovalBlockers).
func refuseBlockedRemoval(ctx context.Context, hub *Hub, s *fleetconfig.Spoke) error {
	works, err := hub.ManifestWorks(ctx, s.Name)
	if err != nil {
		return err
	}
	var placements []ocm.Placement
	var taints []ocm.Taint
	if s.Spec.CleanupConfig.ForceClusterDrain && slices.ContainsFunc(works, func(w ocm.ManifestWork) bool { return w.IsPlacementWork() }) {
		if placements, err = hub.Placements(ctx); err != nil {
			return cli.Refusedf("%w; nothing was changed: cannot tell whether the placement works would leave", err)
		}
		mc, err := hub.ManagedCluster(ctx, s.Name)
		if err != nil {
			return err
		}
		if mc != nil {
			taints = mc.Spec.Taints
		}
	}
	return FindRemovalBlockers(s, works, placements, taints, time.Now()).Refusal(s.Name)
}
