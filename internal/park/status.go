package park

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/scrub"
)

// ReplacedThreshold is how many replacements of one pool's machines within
// the window make it worth reporting to the platform team.
const ReplacedThreshold = 3

// StatusReport is both health views of a cluster.
type StatusReport struct {
	api.ReportMeta `json:",inline"`
	Platform       PlatformView `json:"platform"`
	Cluster        ClusterView  `json:"cluster"`
}

// PlatformView is the platform's view: is it happy with the cluster?
type PlatformView struct {
	Phase string `json:"phase"`
	// Version is the Kubernetes version the topology asks for.
	Version          string          `json:"version,omitempty"`
	ControlPlane     ControlPlane    `json:"controlPlane"`
	Pools            []PoolHealth    `json:"pools"`
	Machines         map[string]int  `json:"machines"`
	HealthChecks     []HealthCheck   `json:"healthChecks"`
	ControlPlanePods []string        `json:"controlPlanePods"`
	Window           metav1.Duration `json:"window"`
	// ReplicasOwners are who, besides park, set the worker replicas (a
	// GitOps tool): they may un-park a parked cluster by themselves.
	ReplicasOwners []string `json:"replicasOwners,omitempty"`
}

// PoolHealth is one worker pool's machines.
type PoolHealth struct {
	Kind string `json:"kind"`
	// Name is the pool's name in the topology; Object is the name of its
	// MachineDeployment or MachinePool, which Cluster API derives from the
	// cluster's and the pool's names and a random suffix.
	Name    string `json:"name"`
	Object  string `json:"object"`
	Version string `json:"version,omitempty"`
	Ready   int32  `json:"ready"`
	// Updated counts the machines rolled out to the pool's current spec
	// (nil when the pool does not say).
	Updated  *int32 `json:"updated,omitempty"`
	Desired  int32  `json:"desired"`
	Replaced int    `json:"replaced"`
}

// ControlPlane is the cluster's control plane as the platform has it.
type ControlPlane struct {
	Kind     string `json:"kind,omitempty"`
	Name     string `json:"name,omitempty"`
	Machines int    `json:"machines"`
	// Hosted is a control plane that runs as pods on the platform (Kamaji),
	// not on Machines: it has no nodes in the cluster.
	Hosted bool `json:"hosted"`
}

// HealthCheck is one MachineHealthCheck of the cluster.
type HealthCheck struct {
	Name     string `json:"name"`
	Expected int32  `json:"expected"`
	Healthy  int32  `json:"healthy"`
}

// ClusterView is the cluster's own view: is it happy with itself?
type ClusterView struct {
	Source         string   `json:"source,omitempty"`
	Error          string   `json:"error,omitempty"`
	NotReadyNodes  []string `json:"notReadyNodes"`
	PodsNotRunning []string `json:"podsNotRunning"`
	PendingCSRs    []string `json:"pendingCSRs"`
	// Unavailable says, per part (pods, certificate signing requests), why
	// it could not be listed: a workload API server may not serve every
	// resource, and the other parts are still worth showing.
	Unavailable map[string]string `json:"unavailable,omitempty"`
}

// The parts of the cluster's view that can be unavailable on their own.
const (
	partPods = "pods"
	partCSRs = "certificate signing requests"
)

// PlatformObjects is what the platform view is made from.
type PlatformObjects struct {
	Cluster      *capi.Cluster
	Deployments  []capi.MachineDeployment
	Pools        []capi.MachinePool
	Machines     []capi.Machine
	HealthChecks []capi.MachineHealthCheck
	Pods         []corev1.Pod
	Events       []corev1.Event
}

// BuildPlatformView reads the platform's objects of one cluster. Machines
// replaced by the health check are counted per pool from the
// MachineMarkedUnhealthy events of the window; a machine that is gone is
// matched to its pool by name, since Cluster API names machines after
// their MachineDeployment (or MachinePool).
func BuildPlatformView(o PlatformObjects, now time.Time, window time.Duration) PlatformView {
	v := PlatformView{
		Phase: o.Cluster.Status.Phase, Machines: map[string]int{}, Pools: []PoolHealth{}, HealthChecks: []HealthCheck{}, ControlPlanePods: []string{}, Window: metav1.Duration{Duration: window},
		ReplicasOwners: ReplicasOwners(o.Cluster),
	}
	owner := map[string]int{}
	if t := o.Cluster.Spec.Topology; t != nil {
		v.Version = t.Version
	}
	if ref := o.Cluster.Spec.ControlPlaneRef; ref != nil {
		v.ControlPlane.Kind, v.ControlPlane.Name = ref.Kind, ref.Name
	}
	add := func(kind string, meta metav1.ObjectMeta, topologyLabel string, spec capi.MachineSetSpec, st capi.MachineSetStatus) {
		name := meta.Name
		if n := meta.Labels[topologyLabel]; n != "" {
			name = n
		}
		p := PoolHealth{Kind: kind, Name: name, Object: meta.Name, Version: spec.Template.Spec.Version, Ready: deref(st.ReadyReplicas), Updated: st.Updated(), Desired: deref(spec.Replicas)}
		owner[meta.Name] = len(v.Pools)
		v.Pools = append(v.Pools, p)
	}
	for _, d := range o.Deployments {
		add("MachineDeployment", d.ObjectMeta, capi.TopologyDeploymentNameLabel, d.Spec, d.Status)
	}
	for _, p := range o.Pools {
		add("MachinePool", p.ObjectMeta, capi.TopologyPoolNameLabel, p.Spec, p.Status)
	}
	machinePool := map[string]string{}
	for _, m := range o.Machines {
		phase := m.Status.Phase
		if phase == "" {
			phase = capi.MachinePhasePending
		}
		v.Machines[phase]++
		if _, ok := m.Labels[capi.MachineControlPlaneLabel]; ok {
			v.ControlPlane.Machines++
		}
		if n := m.Labels[capi.MachineDeploymentNameLabel]; n != "" {
			machinePool[m.Name] = n
		} else if n := m.Labels[capi.MachinePoolNameLabel]; n != "" {
			machinePool[m.Name] = n
		}
	}
	for _, e := range o.Events {
		if e.Reason != capi.EventMachineMarkedUnhealthy || e.InvolvedObject.Kind != "Machine" || now.Sub(eventTime(e)) > window {
			continue
		}
		name := machinePool[e.InvolvedObject.Name]
		if name == "" {
			name = longestPrefix(e.InvolvedObject.Name, owner)
		}
		if i, ok := owner[name]; ok {
			v.Pools[i].Replaced++
		}
	}
	for _, h := range o.HealthChecks {
		v.HealthChecks = append(v.HealthChecks, HealthCheck{Name: h.Name, Expected: deref(h.Status.ExpectedMachines), Healthy: deref(h.Status.CurrentHealthy)})
	}
	for _, p := range o.Pods {
		v.ControlPlanePods = append(v.ControlPlanePods, p.Name+" ("+string(p.Status.Phase)+")")
	}
	sort.Strings(v.ControlPlanePods)
	v.ControlPlane.Hosted = v.ControlPlane.Name != "" && v.ControlPlane.Machines == 0 &&
		(slices.Contains(capi.HostedControlPlaneKinds, v.ControlPlane.Kind) || len(o.Pods) > 0)
	return v
}

func eventTime(e corev1.Event) time.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

func longestPrefix(machine string, pools map[string]int) string {
	best := ""
	for name := range pools {
		if strings.HasPrefix(machine, name+"-") && len(name) > len(best) {
			best = name
		}
	}
	return best
}

func deref(n *int32) int32 {
	if n == nil {
		return 0
	}
	return *n
}

// BuildClusterView reads the cluster's own objects.
func BuildClusterView(nodes []corev1.Node, pods []corev1.Pod, csrs []certificatesv1.CertificateSigningRequest) ClusterView {
	v := ClusterView{NotReadyNodes: []string{}, PodsNotRunning: []string{}, PendingCSRs: []string{}}
	for _, n := range nodes {
		if !nodeReady(n) {
			v.NotReadyNodes = append(v.NotReadyNodes, n.Name)
		}
	}
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning {
			v.PodsNotRunning = append(v.PodsNotRunning, fmt.Sprintf("%s/%s (%s)", p.Namespace, p.Name, p.Status.Phase))
		}
	}
	for _, c := range csrs {
		if len(c.Status.Conditions) == 0 {
			v.PendingCSRs = append(v.PendingCSRs, c.Name)
		}
	}
	sort.Strings(v.NotReadyNodes)
	sort.Strings(v.PodsNotRunning)
	sort.Strings(v.PendingCSRs)
	return v
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// StatusOptions are the options of `kubectl park status`.
type StatusOptions struct {
	genericiooptions.IOStreams
	Output            *cli.Output
	Name              string
	Namespace         string
	ClusterKubeconfig string
	Window            time.Duration

	f *cli.Factory
}

// NewCmdStatus builds `kubectl park status NAME`.
func NewCmdStatus(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &StatusOptions{IOStreams: streams, Output: cli.NewOutput(), Window: time.Hour, f: f}
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Show a cluster's health as the platform sees it and as it sees itself",
		Long: cli.LongDesc(`
			Show both health views of a Cluster API cluster. The platform's:
			the Cluster phase, ready and desired machines per pool, Machines by
			phase, the MachineHealthCheck, the control-plane pods and the
			machines the health check keeps replacing. The cluster's own: nodes
			that are not Ready, pods that are not Running and certificate
			signing requests still Pending (reported, never approved).

			The cluster is reached with --cluster-kubeconfig, your own file,
			used as kubectl would use it; or else with the admin kubeconfig in
			the NAME-kubeconfig secret when you may read it (spokekit-park
			does not grant it: that is an opt-in Role for the one secret).
			Without either, the cluster's view says it was not checked and why. That one is used in
			memory only, never written, printed or logged, and refused (exit 3)
			if it would run a program or read a local file.`),
		Example: templates.Examples(`
			# Both views of the cluster "app"
			kubectl park status app -n dynamo-prod

			# With your own kubeconfig for the cluster, and replacements of the last 6 hours
			kubectl park status app -n dynamo-prod --cluster-kubeconfig app.kubeconfig --window 6h`),
		Args:              cli.ExactArgs(1, "NAME"),
		ValidArgsFunction: cli.ResourceNames(f, "clusters."+capi.Group),
		RunE:              cli.RunE(o, o.Complete),
	}
	o.Output.AddFlags(cmd)
	cmd.Flags().StringVar(&o.ClusterKubeconfig, "cluster-kubeconfig", "", "Kubeconfig file of the cluster itself (default: the NAME-kubeconfig secret, read in memory).")
	cmd.Flags().DurationVar(&o.Window, "window", o.Window, "How far back to count machine replacements.")
	return cmd
}

// Complete reads the cluster's name and namespace; it sends no request.
func (o *StatusOptions) Complete(_ *cobra.Command, args []string) error {
	o.Name = args[0]
	var err error
	o.Namespace, _, err = o.f.Namespace()
	return err
}

// Validate rejects bad flags before any request.
func (o *StatusOptions) Validate() error {
	if err := validateTarget(o.Name, o.Namespace); err != nil {
		return err
	}
	if err := o.Output.Validate(); err != nil {
		return err
	}
	if o.Window <= 0 {
		return exitcode.UsageErrorf("--window must be positive, got %s", o.Window)
	}
	return nil
}

// Run finds the platform's Cluster API, reads both views and prints them.
func (o *StatusOptions) Run(ctx context.Context) error {
	return onPlatform(o.f, o.Namespace, func(p *Platform) error { return o.status(ctx, p) })
}

func (o *StatusOptions) status(ctx context.Context, p *Platform) error {
	c, err := p.Cluster(ctx, o.Name)
	if err != nil {
		return err
	}
	objs := PlatformObjects{Cluster: c}
	if objs.Deployments, err = list[capi.MachineDeployment](ctx, p, capi.MachineDeploymentResource, o.Name); err != nil {
		return err
	}
	if objs.Pools, err = list[capi.MachinePool](ctx, p, capi.MachinePoolResource, o.Name); err != nil {
		return err
	}
	if objs.Machines, err = list[capi.Machine](ctx, p, capi.MachineResource, o.Name); err != nil {
		return err
	}
	if objs.HealthChecks, err = p.healthChecks(ctx, o.Name); err != nil {
		return err
	}
	if objs.Pods, err = p.ControlPlanePods(ctx, c); err != nil {
		return err
	}
	events, err := p.Kube.CoreV1().Events(o.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("reason", capi.EventMachineMarkedUnhealthy).String()})
	if err != nil {
		return fmt.Errorf("listing machine health events in %s: %w", o.Namespace, err)
	}
	objs.Events = events.Items
	report := StatusReport{ReportMeta: api.NewNamespacedReportMeta("ClusterStatus", o.Namespace, o.Name), Platform: BuildPlatformView(objs, time.Now(), o.Window)}
	var refused error
	report.Cluster, refused = o.clusterView(ctx, p)
	if o.Output.IsTable() {
		report.write(o.Out)
		return refused
	}
	if err := o.Output.Print(o.Out, report, nil); err != nil {
		return err
	}
	return refused
}

// clusterView reads the cluster's own view. A kubeconfig secret the loader
// refuses is shown in the view and returned, so status exits 3. Each
// request is bounded (clusterContext): a stalled cluster is "not checked".
func (o *StatusOptions) clusterView(ctx context.Context, p *Platform) (ClusterView, error) {
	kube, source, err := p.ClusterClient(ctx, o.Name, o.ClusterKubeconfig)
	if exitcode.IsRefused(err) {
		return ClusterView{Source: source, Error: "not read: the kubeconfig may not run programs or read local files"}, scrub.Error(err)
	}
	if err != nil {
		msg := scrub.Error(err).Error()
		if o.ClusterKubeconfig == "" {
			msg = "not checked: " + msg + ": " + p.clusterAccessHint(ctx, o.Name)
		}
		return ClusterView{Source: source, Error: msg}, nil
	}
	var nodes *corev1.NodeList
	err = bounded(ctx, p, func(ctx context.Context) (err error) {
		nodes, err = kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		return err
	})
	if err != nil {
		return ClusterView{Source: source, Error: "listing nodes with the kubeconfig from " + source + ": " + notChecked(ctx, err)}, nil
	}
	unavailable := map[string]string{}
	pods := &corev1.PodList{}
	err = bounded(ctx, p, func(ctx context.Context) (err error) {
		pods, err = kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Running"})
		return err
	})
	if err != nil {
		pods = &corev1.PodList{}
		unavailable[partPods] = notChecked(ctx, err)
	}
	csrs := &certificatesv1.CertificateSigningRequestList{}
	err = bounded(ctx, p, func(ctx context.Context) (err error) {
		csrs, err = kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		return err
	})
	if err != nil {
		csrs = &certificatesv1.CertificateSigningRequestList{}
		unavailable[partCSRs] = notChecked(ctx, err)
	}
	v := BuildClusterView(nodes.Items, pods.Items, csrs.Items)
	v.Source = source
	if len(unavailable) > 0 {
		v.Unavailable = unavailable
	}
	return v, nil
}

// bounded runs one request to the workload cluster within the per-request
// timeout (status has no --timeout of its own).
func bounded(ctx context.Context, p *Platform, request func(context.Context) error) error {
	rctx, cancel := p.clusterContext(ctx, 0)
	defer cancel()
	return request(rctx)
}

func (r StatusReport) write(w io.Writer) {
	pv := r.Platform
	fmt.Fprintf(w, "Platform view of %s/%s\n", r.Metadata.Namespace, r.Metadata.Name)
	fmt.Fprintf(w, "  Cluster phase: %s\n", orDash(pv.Phase))
	fmt.Fprintf(w, "  Kubernetes version: %s\n", orDash(pv.Version))
	t := cli.Table{Columns: []cli.Column{{Name: "  POOL"}, {Name: "KIND"}, {Name: "VERSION"}, {Name: "READY"}, {Name: "UPDATED"}, {Name: fmt.Sprintf("REPLACED (%s)", pv.Window.Duration)}}}
	for _, p := range pv.Pools {
		replaced := fmt.Sprint(p.Replaced)
		if p.Replaced >= ReplacedThreshold {
			replaced += " - keeps being replaced"
		}
		updated := "-"
		if p.Updated != nil {
			updated = fmt.Sprint(*p.Updated)
		}
		t.Rows = append(t.Rows, []string{"  " + p.Name, p.Kind, orDash(p.Version), fmt.Sprintf("%d/%d", p.Ready, p.Desired), updated, replaced})
	}
	_ = cli.WriteTable(w, t, false)
	var phases []string
	for _, ph := range sortedPhases(pv.Machines) {
		phases = append(phases, fmt.Sprintf("%d %s", pv.Machines[ph], ph))
	}
	fmt.Fprintf(w, "  Machines: %s\n", orDash(strings.Join(phases, ", ")))
	for _, h := range pv.HealthChecks {
		fmt.Fprintf(w, "  MachineHealthCheck %s: %d of %d machines healthy\n", h.Name, h.Healthy, h.Expected)
	}
	if len(pv.HealthChecks) == 0 {
		fmt.Fprintln(w, "  MachineHealthCheck: none (unhealthy workers are not replaced automatically)")
	}
	fmt.Fprintf(w, "  Control-plane pods: %s\n", orDash(strings.Join(pv.ControlPlanePods, ", ")))
	if cp := pv.ControlPlane; cp.Hosted {
		fmt.Fprintf(w, "  Control plane: %s %s, hosted on the platform (its pods above), not Machines: it has no nodes in the cluster, whose nodes are its workers only\n", cp.Kind, cp.Name)
	} else if cp.Name != "" {
		fmt.Fprintf(w, "  Control plane: %s %s, %d machine(s)\n", cp.Kind, cp.Name, cp.Machines)
	}
	if len(pv.ReplicasOwners) > 0 {
		fmt.Fprintf(w, "  ! Worker replicas also set by: %s. It may un-park this cluster (or park it again) by itself; park and resume through it\n", strings.Join(pv.ReplicasOwners, "; "))
	}
	for _, p := range pv.Pools {
		if p.Replaced >= ReplacedThreshold {
			fmt.Fprintf(w, "  ! %s had %d machines replaced in %s: the health check is doing its job, but the cause is not visible from here; report it to your platform team\n", p.Name, p.Replaced, pv.Window.Duration)
		}
	}
	cv := r.Cluster
	fmt.Fprintf(w, "\nCluster's own view (kubeconfig from %s)\n", orDash(cv.Source))
	if cv.Error != "" {
		fmt.Fprintf(w, "  not available: %s\n", cv.Error)
		return
	}
	hosted := ""
	if pv.ControlPlane.Hosted {
		hosted = " (workers only: the hosted control plane has no nodes, none is missing)"
	}
	fmt.Fprintf(w, "  NotReady nodes: %s%s\n", noneOr(cv.NotReadyNodes), hosted)
	fmt.Fprintf(w, "  Pods not Running: %s\n", cv.part(partPods, cv.PodsNotRunning))
	fmt.Fprintf(w, "  Pending CSRs: %s\n", cv.part(partCSRs, cv.PendingCSRs))
	if len(cv.PendingCSRs) > 0 {
		fmt.Fprintln(w, "  ! Pending CSRs should be approved automatically; many of them usually mean the cluster's bootstrap path is broken. Report them rather than approving them by hand.")
	}
}

// part shows one part of the view, or why it could not be listed.
func (cv ClusterView) part(name string, items []string) string {
	if reason, ok := cv.Unavailable[name]; ok {
		return "not available (listing " + name + ": " + reason + ")"
	}
	return noneOr(items)
}

func noneOr(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, ", ")
}

// Subjects is the Cluster, for -o name.
func (r StatusReport) Subjects() []string {
	return []string{api.ObjectName(capi.ClusterKind, r.Metadata.Name)}
}
