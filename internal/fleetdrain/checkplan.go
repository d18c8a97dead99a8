package fleetdrain

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// Severity is what a finding of check means for a node replacement.
type Severity string

// Severities, worst first.
const (
	// SeverityBlocks: the replacement's drain cannot finish.
	SeverityBlocks Severity = "Blocks"
	// SeverityLosesData: something is lost for good: data kept on the node,
	// or a pod nothing re-creates.
	SeverityLosesData Severity = "LosesData"
	// SeverityCannotTell: whether data is kept on the node cannot be told
	// (a claim that cannot be resolved): the check cannot pass it.
	SeverityCannotTell Severity = "CannotTell"
	// SeverityDisrupts: the service goes down, or loses quorum, until its
	// pods run again elsewhere.
	SeverityDisrupts Severity = "Disrupts"
	// SeverityNote: worth knowing, harmless by itself.
	SeverityNote Severity = "Note"
)

func (s Severity) rank() int {
	return slices.Index([]Severity{SeverityBlocks, SeverityLosesData, SeverityCannotTell, SeverityDisrupts, SeverityNote}, s)
}

// Reasons of check's findings.
const (
	ReasonBudget        = "BudgetAllowsNoDisruption"
	ReasonSingleReplica = "SingleReplica"
	ReasonQuorum        = "QuorumWithoutBudget"
	ReasonHostPath      = "HostPath"
	ReasonLocalVolume   = "LocalVolume"
	ReasonUnresolved    = "UnresolvedVolume"
	ReasonEmptyDir      = "EmptyDir"
	ReasonUnmanaged     = "NoController"
)

// CheckInput is what check read from the cluster: the nodes it checks and
// the objects that decide what their replacement does.
type CheckInput struct {
	// Nodes are the nodes checked; their pods are the ones that count.
	Nodes        []string
	Pods         []corev1.Pod
	Budgets      []*policyv1.PodDisruptionBudget
	Deployments  []appsv1.Deployment
	StatefulSets []appsv1.StatefulSet
	ReplicaSets  []appsv1.ReplicaSet
	Claims       []corev1.PersistentVolumeClaim
	Volumes      []corev1.PersistentVolume
	// NodeLabels are the checked nodes' labels, by name: which of them name
	// the node itself, for the node affinity of volumes.
	NodeLabels map[string]map[string]string
	// AllowEmptyDir counts emptyDir volumes as scratch space (a Note).
	AllowEmptyDir bool
	// Rules decide, by node name, how Cluster API's drain of the next
	// rollout treats the pods of nodes that belong to a Machine.
	Rules map[string]NodeRules
}

// CheckReport is what `fleetdrain check` prints.
type CheckReport struct {
	api.ReportMeta `json:",inline"`
	// Nodes are the nodes checked.
	Nodes []string  `json:"nodes"`
	Items []Finding `json:"items"`
	// Skipped are the DaemonSet and mirror (static) pods left out: a new
	// node runs them again, without what they kept on the old one.
	Skipped []string `json:"skipped,omitempty"`
}

// Finding is one thing a replacement of the nodes would break or block, on
// one object (a budget, a workload, or a pod without one).
type Finding struct {
	api.ReportMeta `json:",inline"`
	Severity       Severity `json:"severity"`
	Reason         string   `json:"reason"`
	// Object is the object's kind and name as kubectl get -o name writes it.
	Object string `json:"object"`
	// Nodes and Pods are the checked nodes and their pods it concerns.
	Nodes   []string `json:"nodes"`
	Pods    []string `json:"pods"`
	Message string   `json:"message"`
}

var (
	podKind         = schema.GroupKind{Kind: "Pod"}
	budgetKind      = schema.GroupKind{Group: "policy", Kind: "PodDisruptionBudget"}
	deploymentKind  = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	statefulSetKind = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
)

// quorumApps are images or app names of well-known systems that keep a
// quorum: losing a majority of their members at once stops them.
var quorumApps = []string{"etcd", "zookeeper", "consul", "kafka", "rabbitmq", "cassandra", "mongodb", "mongo", "elasticsearch", "opensearch", "vault", "nats", "cockroach", "cockroachdb", "redis-sentinel", "galera", "patroni", "minio"}

// workload is the Deployment or StatefulSet behind pods, or the pod itself.
type workload struct {
	kind      schema.GroupKind
	namespace string
	name      string
	replicas  int32
	labels    map[string]string
	images    []string
	pods      []*corev1.Pod
}

func (w *workload) key() string {
	return w.kind.String() + "/" + namespacedName(w.namespace, w.name)
}

// PlanCheck turns what was read into the findings: pure, so that every rule
// is tested on objects, not on a cluster.
func PlanCheck(in CheckInput) CheckReport {
	r := CheckReport{ReportMeta: api.NewReportMeta("ReplacementCheck", "nodes"), Nodes: slices.Sorted(slices.Values(in.Nodes)), Items: []Finding{}}
	scope := map[string]bool{}
	for _, n := range in.Nodes {
		scope[n] = true
	}
	var pods []*corev1.Pod
	for i := range in.Pods {
		p := &in.Pods[i]
		switch {
		case !scope[p.Spec.NodeName], p.DeletionTimestamp != nil, p.Status.Phase == corev1.PodSucceeded, p.Status.Phase == corev1.PodFailed:
		case p.Annotations[corev1.MirrorPodAnnotationKey] != "" || controllerKind(p) == "DaemonSet":
			r.Skipped = append(r.Skipped, namespacedName(p.Namespace, p.Name))
		default:
			pods = append(pods, p)
		}
	}
	slices.Sort(r.Skipped)
	f := newFindings()
	budgetFindings(f, in.Budgets, pods)
	drainRuleFindings(f, in.Rules, pods)
	comeBackFindings(f, in, pods)
	workloads := groupWorkloads(in, pods)
	for _, w := range workloads {
		workloadFindings(f, w, in.Budgets)
	}
	volumes := newVolumeIndex(in.Claims, in.Volumes, in.NodeLabels)
	for _, w := range workloads {
		stateFindings(f, w, volumes, in.AllowEmptyDir)
	}
	r.Items = f.sorted()
	return r
}

// findings collects findings by object and reason, so that the pods of one
// workload on several nodes make one finding.
type findings struct {
	byKey map[string]*Finding
}

func newFindings() *findings { return &findings{byKey: map[string]*Finding{}} }

func (f *findings) add(sev Severity, reason string, kind schema.GroupKind, namespace, name string, pods []*corev1.Pod, message string) {
	key := reason + "/" + kind.String() + "/" + namespacedName(namespace, name)
	if f.byKey[key] != nil {
		return
	}
	item := &Finding{
		ReportMeta: api.NewNamespacedReportMeta("Finding", namespace, name), Severity: sev, Reason: reason,
		Object: api.ObjectName(kind, name), Nodes: []string{}, Pods: []string{}, Message: message,
	}
	for _, p := range pods {
		item.Pods = append(item.Pods, namespacedName(p.Namespace, p.Name))
		if !slices.Contains(item.Nodes, p.Spec.NodeName) {
			item.Nodes = append(item.Nodes, p.Spec.NodeName)
		}
	}
	slices.Sort(item.Pods)
	slices.Sort(item.Nodes)
	f.byKey[key] = item
}

func (f *findings) sorted() []Finding {
	out := make([]Finding, 0, len(f.byKey))
	for _, item := range f.byKey {
		out = append(out, *item)
	}
	slices.SortFunc(out, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Severity.rank(), b.Severity.rank()), strings.Compare(a.Reason, b.Reason),
			strings.Compare(a.Metadata.Namespace, b.Metadata.Namespace), strings.Compare(a.Object, b.Object))
	})
	return out
}

// budgetFindings: a budget that allows no disruption now and protects pods
// of the nodes stalls their drain.
func budgetFindings(f *findings, budgets []*policyv1.PodDisruptionBudget, pods []*corev1.Pod) {
	for _, b := range budgets {
		if b.Status.DisruptionsAllowed > 0 {
			continue
		}
		var covered []*corev1.Pod
		for _, p := range pods {
			if len(Covering([]*policyv1.PodDisruptionBudget{b}, p)) > 0 {
				covered = append(covered, p)
			}
		}
		if len(covered) == 0 {
			continue
		}
		f.add(SeverityBlocks, ReasonBudget, budgetKind, b.Namespace, b.Name, covered, fmt.Sprintf(
			"allows 0 disruptions (%d of %d healthy pods, %d wanted): draining a node with its pods waits until it allows one, and a replacement waits with it",
			b.Status.CurrentHealthy, b.Status.ExpectedPods, b.Status.DesiredHealthy))
	}
}

// groupWorkloads puts the pods under the Deployment or StatefulSet that
// manages them; a pod with another controller (a Job, an operator's kind)
// has a workload of its own kind, and one without a controller stands alone.
func groupWorkloads(in CheckInput, pods []*corev1.Pod) []*workload {
	sets := map[string]*appsv1.ReplicaSet{}
	for i := range in.ReplicaSets {
		rs := &in.ReplicaSets[i]
		sets[namespacedName(rs.Namespace, rs.Name)] = rs
	}
	deployments := map[string]*appsv1.Deployment{}
	for i := range in.Deployments {
		d := &in.Deployments[i]
		deployments[namespacedName(d.Namespace, d.Name)] = d
	}
	statefulSets := map[string]*appsv1.StatefulSet{}
	for i := range in.StatefulSets {
		s := &in.StatefulSets[i]
		statefulSets[namespacedName(s.Namespace, s.Name)] = s
	}
	byKey := map[string]*workload{}
	var order []*workload
	for _, p := range pods {
		w := podWorkload(p, sets, deployments, statefulSets)
		if have := byKey[w.key()]; have != nil {
			w = have
		} else {
			byKey[w.key()] = w
			order = append(order, w)
		}
		w.pods = append(w.pods, p)
	}
	return order
}

func podWorkload(p *corev1.Pod, sets map[string]*appsv1.ReplicaSet, deployments map[string]*appsv1.Deployment, statefulSets map[string]*appsv1.StatefulSet) *workload {
	c := metav1.GetControllerOf(p)
	if c == nil {
		return &workload{kind: podKind, namespace: p.Namespace, name: p.Name}
	}
	if c.Kind == "ReplicaSet" {
		if rs := sets[namespacedName(p.Namespace, c.Name)]; rs != nil {
			if dc := metav1.GetControllerOf(rs); dc != nil && dc.Kind == "Deployment" {
				if d := deployments[namespacedName(p.Namespace, dc.Name)]; d != nil {
					return controllerWorkload(deploymentKind, d, d.Spec.Replicas, d.Spec.Template)
				}
			}
		}
	}
	if c.Kind == "StatefulSet" {
		if s := statefulSets[namespacedName(p.Namespace, c.Name)]; s != nil {
			return controllerWorkload(statefulSetKind, s, s.Spec.Replicas, s.Spec.Template)
		}
	}
	gv, _ := schema.ParseGroupVersion(c.APIVersion)
	return &workload{kind: schema.GroupKind{Group: gv.Group, Kind: c.Kind}, namespace: p.Namespace, name: c.Name}
}

// replicas is a workload's desired count; unset means 1.
// controllerWorkload is the workload of a Deployment or StatefulSet o, from
// its replicas and pod template.
func controllerWorkload(kind schema.GroupKind, o metav1.Object, n *int32, template corev1.PodTemplateSpec) *workload {
	return &workload{
		kind: kind, namespace: o.GetNamespace(), name: o.GetName(), replicas: replicas(n),
		labels: template.Labels, images: images(template.Spec),
	}
}

func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}

func images(spec corev1.PodSpec) []string {
	var out []string
	for _, c := range spec.Containers {
		out = append(out, c.Image)
	}
	return out
}

// workloadFindings: a pod nothing re-creates, a workload of one replica,
// and one that keeps a quorum with no budget to keep it.
func workloadFindings(f *findings, w *workload, budgets []*policyv1.PodDisruptionBudget) {
	switch {
	case w.kind == podKind:
		f.add(SeverityLosesData, ReasonUnmanaged, podKind, w.namespace, w.name, w.pods,
			"no controller re-creates this pod: it is gone with the node (kubectl drain refuses it without --force)")
		return
	case w.kind != deploymentKind && w.kind != statefulSetKind:
		return
	case w.replicas == 1:
		f.add(SeverityDisrupts, ReasonSingleReplica, w.kind, w.namespace, w.name, w.pods,
			"1 replica: it is down from the pod's eviction until it runs on another node; run 2 or more (and a PodDisruptionBudget) to ride out a replacement")
		return
	}
	app := quorumApp(w)
	if w.replicas < 2 || (w.kind != statefulSetKind && app == "") || guarded(w, budgets) {
		return
	}
	what := "a StatefulSet of " + fmt.Sprint(w.replicas) + " replicas"
	if app != "" {
		what = fmt.Sprintf("a %s (%s, which keeps a quorum) of %d replicas", w.kind.Kind, app, w.replicas)
	}
	f.add(SeverityDisrupts, ReasonQuorum, w.kind, w.namespace, w.name, w.pods,
		what+" and no PodDisruptionBudget: drains may take down several members at once and break the quorum; add one with maxUnavailable: 1")
}

// guarded tells whether a budget protects the workload's pods.
func guarded(w *workload, budgets []*policyv1.PodDisruptionBudget) bool {
	for _, p := range w.pods {
		if len(Covering(budgets, p)) > 0 {
			return true
		}
	}
	return false
}

// quorumApp names the well-known quorum system a workload runs ("" when
// none): by its app labels, then by its images' names.
func quorumApp(w *workload) string {
	var names []string
	for _, k := range []string{"app.kubernetes.io/name", "app"} {
		if v := w.labels[k]; v != "" {
			names = append(names, v)
		}
	}
	for _, image := range w.images {
		base := path.Base(image)
		base, _, _ = strings.Cut(base, "@")
		base, _, _ = strings.Cut(base, ":")
		names = append(names, base)
	}
	for _, n := range names {
		if slices.Contains(quorumApps, strings.ToLower(n)) {
			return strings.ToLower(n)
		}
	}
	return ""
}

// volumeIndex finds the PersistentVolume behind a pod's claim.
type volumeIndex struct {
	claims     map[string]*corev1.PersistentVolumeClaim
	volumes    map[string]*corev1.PersistentVolume
	nodeLabels map[string]map[string]string
}

func newVolumeIndex(claims []corev1.PersistentVolumeClaim, volumes []corev1.PersistentVolume, nodeLabels map[string]map[string]string) volumeIndex {
	x := volumeIndex{claims: map[string]*corev1.PersistentVolumeClaim{}, volumes: map[string]*corev1.PersistentVolume{}, nodeLabels: nodeLabels}
	for i := range claims {
		x.claims[namespacedName(claims[i].Namespace, claims[i].Name)] = &claims[i]
	}
	for i := range volumes {
		x.volumes[volumes[i].Name] = &volumes[i]
	}
	return x
}

// claimData is what a pod's claim says of where its data is kept: on the
// node (local names the volume and why), not (both ""), or it cannot be told
// (unresolved says why).
type claimData struct {
	local, unresolved string
}

// resolve follows the claim of pod p to its PersistentVolume.
func (x volumeIndex) resolve(p *corev1.Pod, claim string) claimData {
	c := x.claims[namespacedName(p.Namespace, claim)]
	switch {
	case c == nil:
		return claimData{unresolved: claim + " (not found)"}
	case c.Spec.VolumeName == "":
		return claimData{unresolved: claim + " (bound to no PersistentVolume)"}
	}
	pv := x.volumes[c.Spec.VolumeName]
	if pv == nil {
		return claimData{unresolved: fmt.Sprintf("%s (its PersistentVolume %s not found)", claim, c.Spec.VolumeName)}
	}
	if why := keptOnNode(pv, p.Spec.NodeName, x.nodeLabels[p.Spec.NodeName]); why != "" {
		return claimData{local: pv.Name + " (" + why + ")"}
	}
	return claimData{}
}

// keptOnNode says why a PersistentVolume keeps its data on one node ("" when
// it does not): a local or hostPath volume, or one whose required node
// affinity only one node can meet (pinnedNode), as node-local CSI drivers
// (TopoLVM, OpenEBS LocalPV, local-path) provision them. node is the node
// of the pod that uses it, labels that node's.
func keptOnNode(pv *corev1.PersistentVolume, node string, labels map[string]string) string {
	switch {
	case pv.Spec.Local != nil:
		return "local"
	case pv.Spec.HostPath != nil:
		return "hostPath"
	}
	pinned, key := pinnedNode(pv.Spec.NodeAffinity, node, labels)
	switch {
	case pinned == "":
		return ""
	case pv.Spec.CSI != nil:
		return fmt.Sprintf("%s, pinned to %s by %s", pv.Spec.CSI.Driver, pinned, key)
	}
	return fmt.Sprintf("pinned to %s by %s", pinned, key)
}

// pinnedNode is the one node a volume's required node affinity admits, and
// the key that names it ("" when it may admit more). Its terms are
// alternatives, so each must name that same node. A term names a node when
// one of its requirements (all of which must hold) is In with one value on a
// key that tells nodes apart one by one: the field metadata.name, the label
// kubernetes.io/hostname, or a label whose value on the pod's node is the
// node's name or hostname (TopoLVM's topology.topolvm.io/node, OpenEBS's
// openebs.io/nodename, the CSI hostpath driver's topology.hostpath.csi/node).
// Which of the cluster's nodes match today does not decide it: a zone or a
// rack with one node in it today still keeps a zonal volume's data when that
// node is replaced.
func pinnedNode(affinity *corev1.VolumeNodeAffinity, node string, labels map[string]string) (pinned, key string) {
	if affinity == nil || affinity.Required == nil {
		return "", ""
	}
	for i, term := range affinity.Required.NodeSelectorTerms {
		n, k := termNode(term, node, labels)
		if n == "" || i > 0 && n != pinned {
			return "", ""
		}
		pinned, key = n, k
	}
	return pinned, key
}

// termNode is the node one term of a node affinity names, and the key it
// names it by ("" when none).
func termNode(term corev1.NodeSelectorTerm, node string, labels map[string]string) (pinned, key string) {
	for _, r := range term.MatchFields {
		if r.Key == "metadata.name" && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0], r.Key
		}
	}
	for _, r := range term.MatchExpressions {
		if r.Operator != corev1.NodeSelectorOpIn || len(r.Values) != 1 {
			continue
		}
		own := labels[r.Key]
		if r.Key == corev1.LabelHostname || own != "" && (own == node || own == labels[corev1.LabelHostname]) {
			return r.Values[0], r.Key
		}
	}
	return "", ""
}

// stateFindings: volumes whose data lives on the node, and claims of which
// that cannot be told. Whether an emptyDir holds data that matters cannot
// be seen from the API.
func stateFindings(f *findings, w *workload, volumes volumeIndex, allowEmptyDir bool) {
	var hostPaths, locals, unresolved, emptyDirs []string
	var hostPods, localPods, unresolvedPods, emptyPods []*corev1.Pod
	for _, p := range w.pods {
		var h, l, u, e bool
		for _, v := range p.Spec.Volumes {
			switch {
			case v.HostPath != nil:
				hostPaths, h = appendNew(hostPaths, v.HostPath.Path), true
			case v.EmptyDir != nil:
				emptyDirs, e = appendNew(emptyDirs, v.Name), true
			case v.PersistentVolumeClaim != nil:
				d := volumes.resolve(p, v.PersistentVolumeClaim.ClaimName)
				if d.local != "" {
					locals, l = appendNew(locals, d.local), true
				}
				if d.unresolved != "" {
					unresolved, u = appendNew(unresolved, d.unresolved), true
				}
			}
		}
		if h {
			hostPods = append(hostPods, p)
		}
		if l {
			localPods = append(localPods, p)
		}
		if u {
			unresolvedPods = append(unresolvedPods, p)
		}
		if e {
			emptyPods = append(emptyPods, p)
		}
	}
	if len(hostPods) > 0 {
		f.add(SeverityLosesData, ReasonHostPath, w.kind, w.namespace, w.name, hostPods,
			"hostPath "+strings.Join(hostPaths, ", ")+": what it writes there stays on the node, and a replaced node is built anew")
	}
	if len(localPods) > 0 {
		f.add(SeverityLosesData, ReasonLocalVolume, w.kind, w.namespace, w.name, localPods,
			"node-local PersistentVolume "+strings.Join(locals, "; ")+": its data goes with the node, and the pod cannot run anywhere else")
	}
	if len(unresolvedPods) > 0 {
		f.add(SeverityCannotTell, ReasonUnresolved, w.kind, w.namespace, w.name, unresolvedPods,
			"cannot tell whether PersistentVolumeClaim "+strings.Join(unresolved, ", ")+" keeps its data on the node: the check cannot pass it")
	}
	if len(emptyPods) > 0 {
		sev, msg := SeverityLosesData, "may lose data: emptyDir "+strings.Join(emptyDirs, ", ")+" is emptied when the pod leaves the node (whether it holds data that matters cannot be seen from the API; --allow-emptydir if it is scratch space)"
		if allowEmptyDir {
			sev, msg = SeverityNote, "emptyDir "+strings.Join(emptyDirs, ", ")+" is emptied when the pod leaves the node (taken as scratch space: --allow-emptydir)"
		}
		f.add(sev, ReasonEmptyDir, w.kind, w.namespace, w.name, emptyPods, msg)
	}
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

func controllerKind(p *corev1.Pod) string {
	if c := metav1.GetControllerOf(p); c != nil {
		return c.Kind
	}
	return ""
}

// failing lists the findings that block or lose data, or cannot tell: the
// ones that make check exit 3.
func (r CheckReport) failing() []Finding {
	var out []Finding
	for _, item := range r.Items {
		if item.Severity == SeverityBlocks || item.Severity == SeverityLosesData || item.Severity == SeverityCannotTell {
			out = append(out, item)
		}
	}
	return out
}

// outcome is check's error: a refusal (exit 3) naming every finding that
// blocks, loses data or cannot tell; nil when there is none.
func (r CheckReport) outcome() error {
	failing := r.failing()
	if len(failing) == 0 {
		return nil
	}
	var names []string
	for _, item := range failing {
		names = append(names, fmt.Sprintf("%s in %s (%s)", item.Object, item.Metadata.Namespace, item.Reason))
	}
	return exitcode.RefusedErrorf("a replacement of node(s) %s would be blocked or lose data, or whether it would cannot be told: %s", strings.Join(r.Nodes, ", "), strings.Join(names, "; "))
}

// table is the human view: one row per finding.
func (r CheckReport) table() cli.Table {
	t := cli.Table{Columns: []cli.Column{{Name: "SEVERITY"}, {Name: "REASON"}, {Name: "NAMESPACE"}, {Name: "OBJECT"}, {Name: "NODES"}, {Name: "PODS", Wide: true}, {Name: "DETAIL"}}}
	for _, item := range r.Items {
		t.Rows = append(t.Rows, []string{
			string(item.Severity), item.Reason, item.Metadata.Namespace, item.Object,
			strings.Join(item.Nodes, ","), strings.Join(item.Pods, ","), item.Message,
		})
	}
	return t
}

// Subjects are the objects of the findings, for -o name.
func (r CheckReport) Subjects() []string {
	var out []string
	for _, item := range r.Items {
		if !slices.Contains(out, item.Object) {
			out = append(out, item.Object)
		}
	}
	return out
}
