package park

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
)

// The states a cluster's workers can be in.
const (
	StateRunning  = "Running"
	StateParked   = "Parked"
	StateParking  = "Parking"
	StateResuming = "Resuming"
)

// ClusterRow is one cluster in `kubectl park list`.
type ClusterRow struct {
	api.ReportMeta `json:",inline"`
	State          string `json:"state"`
	// ReadyWorkers and DesiredWorkers are nil when the server does not count them.
	ReadyWorkers   *int32      `json:"readyWorkers,omitempty"`
	DesiredWorkers *int32      `json:"desiredWorkers,omitempty"`
	Record         *ParkRecord `json:"record,omitempty"`
	RecordError    string      `json:"recordError,omitempty"`
}

// ClusterList is what `kubectl park list` prints.
type ClusterList struct {
	api.ReportMeta `json:",inline"`
	Items          []ClusterRow `json:"items"`
}

// Row says where a cluster's workers are, from the Cluster object alone.
func Row(c *capi.Cluster) ClusterRow {
	row := ClusterRow{ReportMeta: api.NewNamespacedReportMeta("ParkState", c.Namespace, c.Name)}
	if w := c.Status.WorkerCounts(); w != nil {
		row.ReadyWorkers, row.DesiredWorkers = w.ReadyReplicas, w.DesiredReplicas
	}
	record, _, err := existingRecord(c)
	if err != nil {
		row.RecordError = err.Error()
	}
	row.Record = record
	current := int32(0)
	if w := c.Status.WorkerCounts(); w != nil && w.Replicas != nil {
		current = *w.Replicas
	}
	_, hasRecord := c.Annotations[RecordAnnotation]
	switch {
	case hasRecord && current > 0:
		row.State = StateParking
	case hasRecord || allParked(c):
		row.State = StateParked
	case row.ReadyWorkers != nil && row.DesiredWorkers != nil && *row.ReadyWorkers < *row.DesiredWorkers:
		row.State = StateResuming
	default:
		row.State = StateRunning
	}
	return row
}

func allParked(c *capi.Cluster) bool {
	pools, err := workerPools(c)
	if err != nil {
		return false
	}
	for _, p := range pools {
		if !p.state().parked() {
			return false
		}
	}
	return true
}

// ListTable is the human view of the list.
func ListTable(l ClusterList, now time.Time, allNamespaces bool) cli.Table {
	t := cli.Table{Columns: []cli.Column{{Name: "NAME"}, {Name: "STATE"}, {Name: "WORKERS"}, {Name: "PARKED-SINCE"}, {Name: "RECORDED"}, {Name: "PARKED-BY", Wide: true}}}
	if allNamespaces {
		t.Columns = append([]cli.Column{{Name: "NAMESPACE"}}, t.Columns...)
	}
	for _, r := range l.Items {
		workers := "-"
		if r.DesiredWorkers != nil {
			workers = fmt.Sprintf("%s/%d", countOrDash(r.ReadyWorkers), *r.DesiredWorkers)
		}
		since, recorded, by := "", "", ""
		if r.Record != nil {
			since = duration.HumanDuration(now.Sub(r.Record.ParkedAt.Time))
			recorded = recordedPools(r.Record)
			by = r.Record.ParkedBy
		}
		if r.RecordError != "" {
			recorded = "unreadable record"
		}
		row := []string{r.Metadata.Name, r.State, workers, since, recorded, by}
		if allNamespaces {
			row = append([]string{r.Metadata.Namespace}, row...)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// recordedPools reads as "md-0=3,auto=1..5".
func recordedPools(r *ParkRecord) string {
	var parts []string
	for _, p := range r.Pools {
		switch {
		case p.Replicas != nil:
			parts = append(parts, fmt.Sprintf("%s=%d", p.Name, *p.Replicas))
		case len(p.Autoscaler) > 0:
			parts = append(parts, fmt.Sprintf("%s=%s..%s", p.Name, orDash(p.Autoscaler[capi.AutoscalerMinSizeAnnotation]), orDash(p.Autoscaler[capi.AutoscalerMaxSizeAnnotation])))
		default:
			parts = append(parts, p.Name+"=unset")
		}
	}
	return strings.Join(parts, ",")
}

func countOrDash(n *int32) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}

// ListOptions are the options of `kubectl park list`.
type ListOptions struct {
	genericiooptions.IOStreams
	Output        *cli.Output
	AllNamespaces bool
	Namespace     string
	Selector      string
	ChunkSize     int64

	f *cli.Factory
}

// NewCmdList builds `kubectl park list`.
func NewCmdList(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ListOptions{IOStreams: streams, Output: cli.NewOutput(), ChunkSize: cli.DefaultChunkSize, f: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List clusters with their parked state, since when, and what was recorded",
		Long: cli.LongDesc(`
			List the Cluster API clusters of the namespace (or of every namespace
			with -A) with the state of their workers: Running, Parked, Parking
			(parked, machines still going) or Resuming (machines coming back),
			ready and desired workers, how long ago they were parked and the
			pool sizes park recorded. It reads the clusters in pages of
			--chunk-size, as kubectl get does.`),
		Example: templates.Examples(`
			# The clusters of an Environment
			kubectl park list -n dynamo-prod

			# Every cluster on the platform, with who parked them
			kubectl park list -A -o wide

			# The production clusters, names only
			kubectl park list -A -l env=prod -o name`),
		Args: cli.NoArgs,
		RunE: cli.RunE(o, o.Complete),
	}
	o.Output.AddFlags(cmd)
	o.Output.AddNoHeadersFlag(cmd)
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List the clusters of every namespace.")
	cmd.Flags().StringVarP(&o.Selector, "selector", "l", o.Selector, "Only the clusters whose labels match this selector (e.g. -l env=prod,tier!=gpu).")
	cli.AddChunkSizeFlag(cmd, &o.ChunkSize)
	return cmd
}

// Complete reads the namespace; it sends no request.
func (o *ListOptions) Complete(_ *cobra.Command, _ []string) error {
	var err error
	o.Namespace, _, err = o.f.Namespace()
	return err
}

// Validate rejects bad flags before any request.
func (o *ListOptions) Validate() error {
	if err := cli.ValidateNames(cli.NamespaceName, o.Namespace); err != nil {
		return err
	}
	if err := cli.ValidateChunkSize(o.ChunkSize); err != nil {
		return err
	}
	if err := cli.ValidateSelector("--selector", o.Selector); err != nil {
		return err
	}
	return o.Output.Validate()
}

// Run finds the platform's Cluster API and lists the clusters.
func (o *ListOptions) Run(ctx context.Context) error {
	return onPlatform(o.f, o.Namespace, func(p *Platform) error { return o.list(ctx, p) })
}

func (o *ListOptions) list(ctx context.Context, p *Platform) error {
	ns := o.Namespace
	if o.AllNamespaces {
		ns = ""
	}
	cs, err := p.Clusters(ctx, ns, o.Selector, o.ChunkSize)
	if err != nil {
		return err
	}
	l := ClusterList{ReportMeta: api.NewReportMeta("ParkStateList", ""), Items: []ClusterRow{}}
	for i := range cs {
		l.Items = append(l.Items, Row(&cs[i]))
	}
	sort.Slice(l.Items, func(i, j int) bool {
		a, b := l.Items[i].Metadata, l.Items[j].Metadata
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	if len(l.Items) == 0 && o.Output.IsTable() {
		fmt.Fprintf(o.ErrOut, "No Cluster API clusters found in %s.\n", nsName(ns))
		return nil
	}
	return o.Output.Print(o.Out, l, func() cli.Table { return ListTable(l, time.Now(), o.AllNamespaces) })
}

func nsName(ns string) string {
	if ns == "" {
		return "any namespace"
	}
	return "namespace " + ns
}

// Subjects are the listed Clusters, for -o name.
func (l ClusterList) Subjects() []string {
	names := make([]string, 0, len(l.Items))
	for _, r := range l.Items {
		names = append(names, api.ObjectName(capi.ClusterKind, r.Metadata.Name))
	}
	return names
}
