package spoke

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
)

// ListOptions are the options of list and get.
type ListOptions struct {
	spokeSelection
	Output *cli.Output

	f   *cli.Factory
	hub *HubClient
	genericiooptions.IOStreams
}

func newListOptions(f *cli.Factory, streams genericiooptions.IOStreams) *ListOptions {
	return &ListOptions{spokeSelection: spokeSelection{ChunkSize: cli.DefaultChunkSize}, Output: cli.NewOutput(), f: f, IOStreams: streams}
}

// NewCmdList builds `kubectl spoke list`.
func NewCmdList(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := newListOptions(f, streams)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the spokes with their phase and whether they joined and are available",
		Long: cli.LongDesc(`
			List every spoke of the fleet: the Spoke's PHASE joined with its
			ManagedCluster's JOINED and AVAILABLE conditions.

			Clusters joined out of band (clusteradm join, without a Spoke) follow
			the Spokes with PHASE OutOfBand, and outOfBand: true in -o json|yaml
			(brushIgnore: true when they carry brush-ignore=true). They show in
			the namespace of the fleet's Hub, where a ManagedCluster counts as out
			of band when no Spoke of that namespace has its name, and with -A,
			where no Spoke of any namespace has it. -l selects Spokes by their
			labels and so leaves them out.

			It reads Spokes and ManagedClusters with one paginated list each,
			however many spokes there are.`),
		Example: templates.Examples(`
			# List the spokes of the fleet
			kubectl spoke list

			# With hub, kubeconfig secret, taints and cleanup settings
			kubectl spoke list -o wide

			# The spokes of every namespace, and those labelled env=prod
			kubectl spoke list -A
			kubectl spoke list -l env=prod

			# Clusters joined out of band, which kubectl spoke does not manage
			kubectl spoke list -o json | jq -r '.items[] | select(.outOfBand) | .metadata.name'

			# Names of the spokes that are not available
			kubectl spoke list -o json | jq -r '.items[] | select(.available != "True") | .metadata.name'`),
		Args: cli.NoArgs,
		RunE: cli.RunE(o, o.Complete),
	}
	o.addFlags(cmd)
	return cmd
}

// NewCmdGet builds `kubectl spoke get`.
func NewCmdGet(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := newListOptions(f, streams)
	cmd := &cobra.Command{
		Use:   "get [NAME...]",
		Short: "Show named spokes (or all) with their phase, join and availability",
		Long: cli.LongDesc(`
			Show spokes like list does, only the ones named. A name that is not
			a spoke is an error after the others are printed.`),
		Example: templates.Examples(`
			# One spoke
			kubectl spoke get spoke-1

			# Two spokes as YAML
			kubectl spoke get spoke-1 spoke-2 -o yaml`),
		ValidArgsFunction: cli.ResourceNames(f, spokeResourceName),
		RunE:              cli.RunE(o, o.Complete),
	}
	o.addFlags(cmd)
	return cmd
}

func (o *ListOptions) addFlags(cmd *cobra.Command) {
	o.Output.AddFlags(cmd)
	o.Output.AddNoHeadersFlag(cmd)
	o.spokeSelection.addFlags(cmd, "Only the spokes whose labels match this selector (e.g. -l env=prod,team!=ml).")
}

// Complete reads the arguments.
func (o *ListOptions) Complete(_ *cobra.Command, args []string) error {
	o.complete(args)
	return nil
}

// Validate rejects bad flags before any request.
func (o *ListOptions) Validate() error {
	if err := o.validate(o.f); err != nil {
		return err
	}
	return o.Output.Validate()
}

// Run lists Spokes and ManagedClusters once each, both at once (on a large
// fleet the two lists are most of the command's time), and prints the
// joined rows.
func (o *ListOptions) Run(ctx context.Context) error {
	hub, err := NewHubClient(ctx, o.f)
	if err != nil {
		return err
	}
	hub.ChunkSize = o.ChunkSize
	o.hub = hub
	ns := o.hub.Namespace
	if o.AllNamespaces {
		ns = ""
	}
	// Both lists finish, so that the Spokes' error (a missing CRD, say) is
	// the one reported, whichever fails first.
	var spokes []fleetconfig.Spoke
	var clusters []ocm.ManagedCluster
	var spokesErr, clustersErr, fleetErr error
	var wg sync.WaitGroup
	wg.Go(func() { spokes, spokesErr = o.hub.listedSpokes(ctx, ns, o.Selector) })
	wg.Go(func() { clusters, clustersErr = o.hub.listedClusters(ctx) })
	// Clusters joined out of band are shown with the whole fleet's Spokes:
	// with -A, or in the namespace of the fleet's Hub, where the Spokes
	// live. -l selects Spokes by their labels, which such a cluster lacks.
	withOutOfBand := o.AllNamespaces && o.Selector == ""
	if !o.AllNamespaces && o.Selector == "" {
		wg.Go(func() { withOutOfBand, fleetErr = o.hub.HoldsHub(ctx, ns) })
	}
	wg.Wait()
	if err := cmp.Or(spokesErr, clustersErr); err != nil {
		return err
	}
	if fleetErr != nil {
		fmt.Fprintf(o.ErrOut, "Warning: clusters joined out of band are not shown: %v\n", fleetErr)
	}
	rows := BuildRows(spokes, clusters)
	if withOutOfBand {
		rows = append(rows, OutOfBandRows(spokes, clusters)...)
	}
	rows, selErr := selectRows(rows, o.Names)
	list := SpokeList{APIVersion: api.ReportGroupVersion.String(), Kind: "SpokeList", Items: rows, allNamespaces: o.AllNamespaces}
	if len(rows) == 0 && len(o.Names) == 0 && o.Output.IsTable() {
		where := "in namespace " + o.hub.Namespace
		if o.AllNamespaces {
			where = "in any namespace"
		}
		if o.Selector != "" {
			where += " matching " + o.Selector
		}
		fmt.Fprintf(o.ErrOut, "No spokes found %s.\n", where)
		return nil
	}
	if len(rows) > 0 || !o.Output.IsTable() {
		now := time.Now()
		if err := o.Output.Print(o.Out, list, func() cli.Table { return list.Table(now) }); err != nil {
			return err
		}
	}
	return selErr
}
