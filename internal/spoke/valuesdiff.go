package spoke

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/helmrelease"
	"github.com/spokekit/spokekit/internal/spoke/hubclient"
	"github.com/spokekit/spokekit/internal/values"
)

// ValuesDiffOptions are the options of `kubectl spoke values-diff`.
type ValuesDiffOptions struct {
	// ValuesFile is a Helm values file, ReleaseFile a Flux HelmRelease
	// manifest; exactly one is given.
	ValuesFile  string
	ReleaseFile string
	// Release is the hub's Helm release whose values to compare instead.
	Release string
	Output  *cli.Output

	f    *cli.Factory
	file *values.File
	genericiooptions.IOStreams
}

// NewCmdValuesDiff builds `kubectl spoke values-diff`.
func NewCmdValuesDiff(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ValuesDiffOptions{Output: cli.NewOutput(), f: f, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "values-diff --values FILE | --helmrelease FILE | --release NAME",
		Short: "Compare the spokes of a values file with the Spokes on the hub",
		Long: cli.LongDesc(`
			Compare fleetConfig.spokes in a Helm values file (or
			spec.values.fleetConfig.spokes in a Flux HelmRelease manifest) with
			the Spokes of the release namespace, and say what the next helm
			upgrade would do:

			* NotRegistered: an entry with no Spoke; the upgrade registers it;
			* NotInValues: a Spoke with no entry. The upgrade leaves it
			  registered: the release's job applies the Spokes of the values
			  after every upgrade and deletes none, and Helm neither adopts nor
			  deletes Spokes, whatever release marks one carries. Remove it with
			  kubectl spoke remove, or add its entry back. Spokes of a Compute
			  Pool are never in the values and are not listed;
			* DeletedButInValues: a Spoke being deleted whose entry is still
			  there: the upgrade registers the cluster again;
			* FieldsDiffer: the entry sets a field the Spoke holds otherwise (what
			  the chart would render against the live spec; the API server's
			  defaults for fields the entry leaves out are no drift). A field the
			  FleetConfig webhook does not let change is marked: the upgrade
			  fails on it;
			* MissingOCIRegistry: an entry without ociRegistry, which every
			  spoke entry needs.

			It prints the step that brings the Spokes in step with the file (helm
			upgrade, or the Flux reconcile) and changes nothing.

			Exit codes, as kubectl diff's: 0 when the file and the Spokes are in
			step, 1 when they differ. A comparison that could not be made (the
			file is missing or does not parse, the hub cannot be reached or its
			Spokes read) is never 1: it exits 3 with the reason, and 2 for a
			usage error, so a script can take 1 to mean drift.`),
		Example: templates.Examples(`
			# Is the fleet what the values say?
			kubectl spoke values-diff --values values.yaml

			# The values the hub's Helm release runs now
			kubectl spoke values-diff --release mural

			# The same for a Flux-managed release, as JSON
			kubectl spoke values-diff --helmrelease clusters/hub/mural.yaml -o json

			# In a script: 0 in step, 1 drift, anything else could not compare
			kubectl spoke values-diff --values values.yaml -o name || test $? -eq 1`),
		Args: cli.NoArgs,
		RunE: cli.RunE(o, o.Complete),
	}
	cmd.Flags().StringVar(&o.ValuesFile, "values", "", "Helm values file whose fleetConfig.spokes to compare.")
	cmd.Flags().StringVar(&o.ReleaseFile, "helmrelease", "", "Flux HelmRelease manifest whose spec.values.fleetConfig.spokes to compare.")
	cmd.Flags().StringVar(&o.Release, "release", "", "The hub's Helm release whose fleetConfig.spokes to compare (the latest revision's values, or the chart's default spokes when they set none).")
	_ = cmd.MarkFlagFilename("values", "yaml", "yml")
	_ = cmd.MarkFlagFilename("helmrelease", "yaml", "yml")
	o.Output.AddFlags(cmd)
	return cmd
}

// Complete has nothing to read beyond the flags.
func (*ValuesDiffOptions) Complete(*cobra.Command, []string) error { return nil }

// Validate checks the flags, then reads the file: a file that is missing or
// does not parse is refused before any request.
func (o *ValuesDiffOptions) Validate() error {
	if err := o.Output.Validate(); err != nil {
		return err
	}
	if err := o.f.ValidateNamespace(); err != nil {
		return err
	}
	given := 0
	for _, v := range []string{o.ValuesFile, o.ReleaseFile, o.Release} {
		if v != "" {
			given++
		}
	}
	if given != 1 {
		return exitcode.UsageErrorf("give what to compare: --values FILE, --helmrelease FILE or --release NAME (one of them)")
	}
	if o.Release != "" {
		return nil
	}
	path, kind := o.ValuesFile, values.HelmValues
	if o.ReleaseFile != "" {
		path, kind = o.ReleaseFile, values.HelmRelease
	}
	f, err := values.Read(path, kind)
	if err != nil {
		return cannotCompare(err)
	}
	o.file = f
	return nil
}

// Run reads the entries and the Spokes, prints the differences and exits
// 1 when there are any.
func (o *ValuesDiffOptions) Run(ctx context.Context) error {
	hub, err := NewHubClient(ctx, o.f)
	if err != nil {
		return cannotCompare(err)
	}
	if o.Release != "" {
		if o.file, err = releaseValues(o.f, hub.Namespace, o.Release); err != nil {
			return cannotCompare(err)
		}
	}
	entries, err := values.Entries(o.file.Data, o.file.Kind)
	if err != nil {
		return cannotCompare(fmt.Errorf("%s: %w", o.file.Path, err))
	}
	spokes, err := hubclient.List[LiveSpoke](ctx, hub.Client, fleetconfig.SpokeResource, hub.Namespace, "")
	if err != nil {
		return cannotCompare(fmt.Errorf("listing Spokes in %s: %w", hub.Namespace, err))
	}
	r := DiffValues(ValuesDiffInput{Path: o.file.Path, Kind: o.file.Kind, Namespace: hub.Namespace, Entries: entries, Spokes: spokes})
	if len(r.Items) > 0 {
		r.Next = nextStep(o.file, hub.Namespace, spokes)
		if o.Release != "" {
			r.Next = fmt.Sprintf("kubectl spoke add NAME --release %s, or kubectl spoke remove NAME --release %s, for each spoke that differs", o.Release, o.Release)
		}
	}
	if len(r.Items) > 0 || !o.Output.IsTable() {
		if err := o.Output.Print(o.Out, r, r.table); err != nil {
			return err
		}
	}
	if o.Output.IsTable() {
		if len(r.ComputePool) > 0 {
			fmt.Fprintf(o.ErrOut, "Not compared: %d Spoke(s) of Compute Pools, which are never in the values.\n", len(r.ComputePool))
		}
		if len(r.Items) == 0 {
			fmt.Fprintf(o.ErrOut, "In step: the %d entries of %s and the Spokes in %s agree.\n", len(entries), o.file.Path, hub.Namespace)
		} else {
			fmt.Fprintf(o.ErrOut, "Next: %s\n", r.Next)
		}
	}
	return r.differ()
}

// releaseValues is the spokes section of the latest revision of a Helm
// release, as a values file to compare.
func releaseValues(getter *cli.Factory, namespace, name string) (*values.File, error) {
	c, err := helmrelease.Open(getter, namespace)
	if err != nil {
		return nil, err
	}
	r, err := c.Read(name)
	if err != nil {
		return nil, err
	}
	doc, err := r.Values()
	if err != nil {
		return nil, err
	}
	return &values.File{Path: fmt.Sprintf("Helm release %s/%s revision %d", namespace, name, r.Revision), Kind: values.HelmValues, Data: doc}, nil
}

// nextStep is the command that renders the file's entries: helm upgrade
// of the release (named by a Spoke it rendered), or Flux's reconcile.
func nextStep(f *values.File, namespace string, spokes []LiveSpoke) string {
	if f.Kind == values.HelmRelease {
		name, ns := values.ReleaseName(f.Data)
		if name == "" {
			name = "NAME"
		}
		if ns == "" {
			ns = namespace
		}
		return fmt.Sprintf("kubectl apply -f %s (or commit it to the Flux source), then flux reconcile helmrelease %s -n %s", f.Path, name, ns)
	}
	release := "RELEASE"
	for i := range spokes {
		if r := spokes[i].Metadata.Annotations[fleetconfig.HelmReleaseNameAnnotation]; r != "" {
			release = r
			break
		}
	}
	return fmt.Sprintf("helm upgrade %s CHART -n %s -f %s (with the chart and the other values files of the release)", release, namespace, f.Path)
}

// cannotCompare is a comparison that could not be made: exit 3, never 1,
// which means drift. A hub that cannot be reached keeps its words but not
// its exit 1.
func cannotCompare(err error) error {
	var unreachable *cli.UnreachableError
	if errors.As(err, &unreachable) {
		err = fmt.Errorf("cannot reach the API server at %s: %s; check the context (kubectl config current-context) and that the cluster is up", unreachable.Host, err.Error())
	}
	if exitcode.Of(err) == exitcode.Usage {
		return err
	}
	return exitcode.RefusedError(fmt.Errorf("cannot compare: %w", err))
}
