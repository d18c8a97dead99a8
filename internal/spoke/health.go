package spoke

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
	"github.com/spokekit/spokekit/internal/spoke/health"
	"github.com/spokekit/spokekit/internal/spoke/hubclient"
	"github.com/spokekit/spokekit/internal/spoke/probe"
)

// HealthOptions are the options of `kubectl spoke health`.
type HealthOptions struct {
	spokeSelection
	// Deep reaches each spoke through its stored kubeconfig.
	Deep          bool
	MaxConcurrent int
	SpokeTimeout  time.Duration
	Output        *cli.Output

	f *cli.Factory
	genericiooptions.IOStreams
}

// NewCmdHealth builds `kubectl spoke health`.
func NewCmdHealth(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &HealthOptions{spokeSelection: spokeSelection{ChunkSize: cli.DefaultChunkSize}, MaxConcurrent: 16, SpokeTimeout: kubeconfig.ReachTimeout, Output: cli.NewOutput(), f: f, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "health [NAME...]",
		Short: "One table of every spoke's health; exit 1 when any spoke is unhealthy",
		Long: cli.LongDesc(`
			Judge every spoke of the fleet, clusters joined out of band included
			(as list shows them), from what the hub knows: whether the
			ManagedCluster joined and is available (and why not), when its
			registration agent last renewed its lease (managed-cluster-lease in
			the cluster namespace), the add-ons whose ManagedClusterAddOn is not
			Available, the Kubernetes version the agent reports, fleetdrain's
			drain taint, and when the stored kubeconfig's credential expires.

			The hub view reads each kind with one paginated list, however many
			spokes there are, and no Secret: a stored credential's kind and
			expiry are what kubectl spoke recorded on the Spoke when it wrote
			the Secret (a Spoke it wrote none for shows "unknown", which is
			not a problem; a record that is not well formed is). A purged
			Secret (addon mode, after the agent took over) shows "purged", a
			hub-as-spoke "none".

			--deep also reaches each spoke through its stored kubeconfig (read
			one Secret at a time, with the Role that grants it; loaded as
			untrusted: no programs, no local files), --max-concurrent at a time,
			each within --spoke-timeout, so a spoke that hangs never holds the
			others: Ready and total nodes, kube-system pods not ready, pending
			CSRs (reported, never approved) and the API server certificate's
			expiry. OCM's agent reports no node counts to the hub, so NODES needs
			--deep.

			A spoke is unhealthy when it has not joined, is not available, its
			phase is not Running, an add-on is not available, its stored
			credential is missing, refused, invalid or expires within 30 days, or
			(with --deep) it cannot be reached, has NotReady nodes, kube-system
			pods not ready, pending CSRs, or an API server certificate that
			expires within 30 days. A drained spoke is reported, not unhealthy.
			The command exits 1 when any spoke is unhealthy (after printing
			them all), so CI and alerting can run it; -o wide shows each
			spoke's problems. With --deep, a spoke it could not check (no
			readable stored kubeconfig: Secret not granted, purged, out of
			band; or nodes, kube-system pods or CSRs the credential may not
			list) shows Unchecked, and is never a pass: the command exits 3
			when nothing is unhealthy but something went unchecked.`),
		Example: templates.Examples(`
			# The fleet at a glance; exit 1 when any spoke is unhealthy
			kubectl spoke health

			# Reach every spoke too, 32 at a time, 5 seconds each at most
			kubectl spoke health --deep --max-concurrent 32 --spoke-timeout 5s -o wide

			# The names of the unhealthy spokes, for alerting
			kubectl spoke health -o json | jq -r '.items[] | select(.healthy | not) | .metadata.name'`),
		ValidArgsFunction: cli.ResourceNames(f, spokeResourceName),
		RunE:              cli.RunE(o, o.Complete),
	}
	o.Output.AddFlags(cmd)
	o.Output.AddNoHeadersFlag(cmd)
	o.addFlags(cmd, "Only the spokes whose labels match this selector (clusters joined out of band have no Spoke to match).")
	flags := cmd.Flags()
	flags.BoolVar(&o.Deep, "deep", o.Deep, "Also reach each spoke through its stored kubeconfig: nodes, kube-system pods, pending CSRs, API server certificate.")
	flags.IntVar(&o.MaxConcurrent, "max-concurrent", o.MaxConcurrent, "With --deep, how many spokes to reach at the same time.")
	flags.DurationVar(&o.SpokeTimeout, "spoke-timeout", o.SpokeTimeout, "With --deep, how long one spoke may take, from the read of its Secret to its last answer.")
	return cmd
}

// Complete reads the arguments.
func (o *HealthOptions) Complete(_ *cobra.Command, args []string) error {
	o.complete(args)
	return nil
}

// Validate rejects bad flags before any request.
func (o *HealthOptions) Validate() error {
	if err := o.validate(o.f); err != nil {
		return err
	}
	switch {
	case o.MaxConcurrent < 1:
		return exitcode.UsageErrorf("--max-concurrent must be at least 1, got %d", o.MaxConcurrent)
	case o.SpokeTimeout <= 0:
		return exitcode.UsageErrorf("--spoke-timeout must be more than 0, got %s", o.SpokeTimeout)
	}
	return o.Output.Validate()
}

// Run reads the hub (one paginated list per kind, all at once), with
// --deep reaches the spokes, judges them and prints the table; exit 1 when
// any spoke is unhealthy.
func (o *HealthOptions) Run(ctx context.Context) error {
	hub, err := NewHubClient(ctx, o.f)
	if err != nil {
		return err
	}
	hub.ChunkSize = o.ChunkSize
	ns := hub.Namespace
	if o.AllNamespaces {
		ns = ""
	}
	in := healthInput{OutOfBand: o.AllNamespaces && o.Selector == ""}
	var spokesErr, clustersErr, fleetErr, leasesErr, addOnsErr error
	var wg sync.WaitGroup
	wg.Go(func() { in.Spokes, spokesErr = hub.listedSpokes(ctx, ns, o.Selector) })
	wg.Go(func() { in.Clusters, clustersErr = hub.listedClusters(ctx) })
	wg.Go(func() { in.Leases, leasesErr = hub.readLeases(ctx) })
	wg.Go(func() { in.AddOns, addOnsErr = hub.readAddOns(ctx) })
	if !o.AllNamespaces && o.Selector == "" {
		wg.Go(func() { in.OutOfBand, fleetErr = hub.HoldsHub(ctx, ns) })
	}
	wg.Wait()
	if err := cmp.Or(spokesErr, clustersErr, leasesErr, addOnsErr); err != nil {
		return err
	}
	if fleetErr != nil {
		fmt.Fprintf(o.ErrOut, "Warning: clusters joined out of band are not shown: %v\n", fleetErr)
	}
	// Only the spokes named are reached; all of them tell which clusters
	// were joined out of band.
	named := namedSpokes(in.Spokes, o.Names)
	now := time.Now()
	if o.Deep {
		in.Credentials, in.Deep = hub.readDeep(ctx, named, o.MaxConcurrent, o.SpokeTimeout, now)
	} else {
		in.Credentials = recordedCredentials(named, now)
	}
	rows := AssessHealth(in, now)
	rows, selErr := selectHealthRows(rows, o.Names)
	report := HealthReport{APIVersion: api.ReportGroupVersion.String(), Kind: "SpokeHealthList", Items: rows, allNamespaces: o.AllNamespaces, deep: o.Deep}
	if len(rows) == 0 && len(o.Names) == 0 && o.Output.IsTable() {
		fmt.Fprintf(o.ErrOut, "No spokes found in %s.\n", hubclient.NamespaceOrAll(ns))
		return nil
	}
	if len(rows) > 0 || !o.Output.IsTable() {
		if err := o.Output.Print(o.Out, report, func() cli.Table { return report.Table(now) }); err != nil {
			return err
		}
	}
	return cmp.Or(selErr, report.unhealthy())
}

// namedSpokes keeps the Spokes named (all when names is empty), so that
// only their credentials are read and only they are reached.
func namedSpokes(spokes []fleetconfig.Spoke, names []string) []fleetconfig.Spoke {
	if len(names) == 0 {
		return spokes
	}
	var out []fleetconfig.Spoke
	for _, s := range spokes {
		for _, n := range names {
			if s.Name == n {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// selectHealthRows keeps the rows named (all when names is empty) and names
// those it did not find.
func selectHealthRows(rows []health.Row, names []string) ([]health.Row, error) {
	if len(names) == 0 {
		return rows, nil
	}
	var out []health.Row
	var missing []string
	for _, n := range names {
		found := false
		for _, r := range rows {
			if r.Metadata.Name == n {
				out, found = append(out, r), true
			}
		}
		if !found {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return out, fmt.Errorf("spoke(s) not found: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// HealthReport is what health prints.
type HealthReport struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Items      []health.Row `json:"items"`
	// allNamespaces (-A) leads the table with each row's namespace; deep
	// adds the columns of --deep.
	allNamespaces, deep bool
}

// unhealthy is the exit-1 error naming the unhealthy spokes (nil: none).
func (r HealthReport) unhealthy() error {
	var names []string
	for _, it := range r.Items {
		if !it.Healthy {
			names = append(names, it.Metadata.Name)
		}
	}
	var unchecked []string
	for _, it := range r.Items {
		if len(it.NotChecked) > 0 {
			unchecked = append(unchecked, it.Metadata.Name)
		}
	}
	// An unhealthy spoke is a definite failure; what could not be checked
	// is named beside it, and alone is exit 3: never a pass.
	var notChecked string
	if len(unchecked) > 0 {
		notChecked = fmt.Sprintf("; --deep could not check %d: %s", len(unchecked), strings.Join(unchecked, ", "))
	}
	switch {
	case len(names) > 0:
		return &exitcode.Error{Code: exitcode.Failed, Err: fmt.Errorf("%d of %d spokes unhealthy: %s%s (-o wide says why)", len(names), len(r.Items), strings.Join(names, ", "), notChecked)}
	case len(unchecked) > 0:
		return exitcode.RefusedErrorf("--deep could not check %d of %d spokes: %s (-o wide says what and why)", len(unchecked), len(r.Items), strings.Join(unchecked, ", "))
	}
	return nil
}

// Table is the human view at time now.
func (r HealthReport) Table(now time.Time) cli.Table {
	t := cli.Table{Columns: []cli.Column{
		{Name: "NAME"},
		{Name: "PHASE"},
		{Name: "JOINED"},
		{Name: "AVAILABLE"},
		{Name: "LEASE"},
		{Name: "ADDONS"},
		{Name: "VERSION"},
		{Name: "DRAINED"},
		{Name: "CREDENTIAL"},
	}}
	if r.deep {
		t.Columns = append(t.Columns, cli.Column{Name: "NODES"}, cli.Column{Name: "UNREADY SYSTEM PODS"}, cli.Column{Name: "PENDING CSRS"}, cli.Column{Name: "APISERVER CERT"})
	}
	t.Columns = append(t.Columns, cli.Column{Name: "HEALTH"}, cli.Column{Name: "PROBLEMS", Wide: true})
	if r.allNamespaces {
		t.Columns = append([]cli.Column{{Name: "NAMESPACE"}}, t.Columns...)
	}
	for _, h := range r.Items {
		joined, avail, lease, addOns, version, drained := h.Joined, h.Available, "-", "-", "-", "-"
		if h.LeaseRenewed != nil {
			lease = duration.HumanDuration(now.Sub(h.LeaseRenewed.Time))
		}
		if !h.ManagedCluster {
			joined, avail = "-", "-"
		} else {
			addOns = strconv.Itoa(h.AddOns-len(h.AddOnsNotAvailable)) + "/" + strconv.Itoa(h.AddOns)
		}
		if h.KubernetesVersion != "" {
			version = h.KubernetesVersion
		}
		if h.Drained {
			drained = "yes"
		}
		row := []string{h.Metadata.Name, orNone(h.Phase), joined, avail, lease, addOns, version, drained, credentialCell(h.Credential)}
		if r.deep {
			row = append(row, deepCells(h.Deep)...)
		}
		verdict := "Healthy"
		switch {
		case !h.Healthy:
			verdict = "Unhealthy"
		case len(h.NotChecked) > 0:
			verdict = "Unchecked"
		}
		row = append(row, verdict, strings.Join(slices.Concat(h.Problems, h.NotChecked), "; "))
		if r.allNamespaces {
			row = append([]string{orNone(h.Metadata.Namespace)}, row...)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// credentialCell is the CREDENTIAL column: the expiry date, or the state.
func credentialCell(c health.Credential) string {
	switch {
	case c.Expires != nil:
		return c.Expires.UTC().Format(time.DateOnly) + " (" + c.Kind + ")"
	case c.State == health.CredentialValid:
		return "never (" + c.Kind + ")"
	}
	return c.State
}

// deepCells are the --deep columns of a spoke: NODES, UNREADY SYSTEM PODS, PENDING
// CSRS, APISERVER CERT.
func deepCells(d *probe.Result) []string {
	switch {
	case d == nil:
		return []string{"-", "-", "-", "-"}
	case d.Skipped != "":
		return []string{"skipped", "-", "-", "-"}
	case d.Error != "":
		return []string{"unreachable", "-", "-", "-"}
	}
	cells := []string{
		strconv.Itoa(d.NodesReady) + "/" + strconv.Itoa(d.Nodes),
		strconv.Itoa(len(d.UnreadySystemPods)),
		strconv.Itoa(len(d.PendingCSRs)),
		"-",
	}
	for _, u := range d.Unchecked {
		switch u {
		case "nodes":
			cells[0] = "not readable"
		case "kube-system pods":
			cells[1] = "not readable"
		default:
			cells[2] = "not readable"
		}
	}
	if d.APIServerCert != nil {
		cells[3] = d.APIServerCert.UTC().Format(time.DateOnly)
	}
	return cells
}

// Subjects are the spokes reported (the ManagedCluster of one joined out
// of band), for -o name.
func (r HealthReport) Subjects() []string {
	names := make([]string, 0, len(r.Items))
	for _, h := range r.Items {
		names = append(names, subject(h.Metadata.Name, h.OutOfBand))
	}
	return names
}
