package fleetdrain

import (
	"bytes"
	"maps"
	"slices"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// checkPod is a pod of ns on node, controlled by kind/owner ("" for none).
func checkPod(ns, name, node, kind, owner string, labels map[string]string, volumes ...corev1.Volume) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	p.Spec.NodeName = node
	p.Spec.Volumes = volumes
	p.Status.Phase = corev1.PodRunning
	if kind != "" {
		yes := true
		apiVersion := "apps/v1"
		if kind == "Job" {
			apiVersion = "batch/v1"
		}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner, Controller: &yes}}
	}
	return p
}

func int32p(n int32) *int32 { return &n }

func deployment(ns, name string, n int32, labels map[string]string, image string) (appsv1.Deployment, appsv1.ReplicaSet) {
	d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	d.Spec.Replicas = int32p(n)
	d.Spec.Template.Labels = labels
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: image}}
	yes := true
	rs := appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-5d8f", OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, Controller: &yes}}}}
	return d, rs
}

func statefulSet(ns, name string, n *int32, image string) appsv1.StatefulSet {
	s := appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	s.Spec.Replicas = n
	s.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: image}}
	return s
}

// checkInput has one object of each kind of finding, and one of each kind
// that must not be a finding, on worker-1 and worker-2 (worker-3 is not
// checked).
func checkInput() CheckInput {
	web, webRS := deployment("shop", "web", 3, map[string]string{"app": "web"}, "nginx:1.27")
	api, apiRS := deployment("shop", "api", 1, map[string]string{"app": "api"}, "example.com/api:v2")
	zk, zkRS := deployment("infra", "zk", 3, nil, "docker.io/library/zookeeper:3.9")
	cache, cacheRS := deployment("shop", "cache", 2, map[string]string{"app": "cache"}, "bitnami/rabbitmq:3.13")
	hostPath := corev1.Volume{Name: "logs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/app"}}}
	scratch := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	claim := func(name string) corev1.Volume {
		return corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}
	}
	pvc := func(name, volume string) corev1.PersistentVolumeClaim {
		c := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: name}}
		c.Spec.VolumeName = volume
		return c
	}
	localPV := corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "local-pv-1"}}
	localPV.Spec.Local = &corev1.LocalVolumeSource{Path: "/mnt/disks/1"}
	networkPV := corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-net"}}
	networkPV.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-1"}
	mirror := checkPod("kube-system", "etcd-worker-1", "worker-1", "", "", nil, hostPath)
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	done := checkPod("shop", "migrate-x", "worker-1", "", "", nil)
	done.Status.Phase = corev1.PodSucceeded
	dbBudget := budget("infra", "db", 0, map[string]string{"app": "db"})
	dbBudget.Status.CurrentHealthy, dbBudget.Status.DesiredHealthy, dbBudget.Status.ExpectedPods = 2, 2, 2
	return CheckInput{
		Nodes: []string{"worker-2", "worker-1"},
		Pods: []corev1.Pod{
			checkPod("shop", "web-5d8f-a", "worker-1", "ReplicaSet", webRS.Name, map[string]string{"app": "web"}),
			checkPod("shop", "web-5d8f-b", "worker-2", "ReplicaSet", webRS.Name, map[string]string{"app": "web"}),
			checkPod("shop", "web-5d8f-c", "worker-3", "ReplicaSet", webRS.Name, map[string]string{"app": "web"}),
			checkPod("shop", "api-5d8f-a", "worker-1", "ReplicaSet", apiRS.Name, map[string]string{"app": "api"}, scratch),
			checkPod("infra", "zk-5d8f-a", "worker-2", "ReplicaSet", zkRS.Name, nil),
			checkPod("shop", "cache-5d8f-a", "worker-1", "ReplicaSet", cacheRS.Name, map[string]string{"app": "cache"}),
			checkPod("infra", "db-0", "worker-1", "StatefulSet", "db", map[string]string{"app": "db"}, claim("data-db-0")),
			checkPod("infra", "db-1", "worker-2", "StatefulSet", "db", map[string]string{"app": "db"}, claim("data-db-1")),
			checkPod("infra", "queue-0", "worker-2", "StatefulSet", "queue", map[string]string{"app": "queue"}, claim("data-queue-0")),
			checkPod("infra", "solo-0", "worker-1", "StatefulSet", "solo", nil),
			checkPod("infra", "collector", "worker-1", "", "", nil, hostPath),
			checkPod("infra", "agent-x", "worker-1", "DaemonSet", "agent", nil, hostPath),
			checkPod("infra", "backup-x", "worker-2", "Job", "backup", nil),
			checkPod("infra", "far-away", "worker-3", "", "", nil),
			mirror,
			done,
		},
		Budgets: []*policyv1.PodDisruptionBudget{
			budget("shop", "web", 1, map[string]string{"app": "web"}),
			dbBudget,
			budget("infra", "unrelated", 0, map[string]string{"app": "nothing-here"}),
		},
		Deployments:  []appsv1.Deployment{web, api, zk, cache},
		ReplicaSets:  []appsv1.ReplicaSet{webRS, apiRS, zkRS, cacheRS},
		StatefulSets: []appsv1.StatefulSet{statefulSet("infra", "db", int32p(2), "postgres:16"), statefulSet("infra", "queue", int32p(3), "example.com/queue"), statefulSet("infra", "solo", nil, "busybox")},
		Claims:       []corev1.PersistentVolumeClaim{pvc("data-db-0", "local-pv-1"), pvc("data-db-1", "pv-net"), pvc("data-queue-0", "pv-net")},
		Volumes:      []corev1.PersistentVolume{localPV, networkPV},
	}
}

// TestPlanCheck: one finding of each kind, and none for what a replacement
// survives: a guarded Deployment of 3, a Job's pod, a budget that protects
// no pod of the checked nodes, a network volume, an unchecked node's pods,
// finished and DaemonSet and mirror pods (these listed as left out).
func TestPlanCheck(t *testing.T) {
	r := PlanCheck(checkInput())
	var buf bytes.Buffer
	assert.NilError(t, cli.WriteTable(&buf, r.table(), true))
	golden.Assert(t, buf.String(), "check.golden")
	assert.Check(t, is.DeepEqual(r.Nodes, []string{"worker-1", "worker-2"}))
	assert.Check(t, is.DeepEqual(r.Skipped, []string{"infra/agent-x", "kube-system/etcd-worker-1"}))

	err := r.outcome()
	assert.Check(t, is.Equal(exitcode.Of(err), exitcode.Refused))
	assert.Check(t, is.ErrorContains(err, "poddisruptionbudget.policy/db in infra (BudgetAllowsNoDisruption)"))
	assert.Check(t, is.ErrorContains(err, "deployment.apps/api in shop (EmptyDir)"))
	assert.Check(t, !bytes.Contains([]byte(err.Error()), []byte("SingleReplica")), "disruptions do not fail the check: %v", err)
}

// --allow-emptydir makes an emptyDir a note; a cluster with only notes and
// disruptions passes (exit 0).
func TestPlanCheckEmptyDirAsScratch(t *testing.T) {
	in := checkInput()
	in.AllowEmptyDir = true
	in.Nodes = []string{"worker-1"}
	keep := in.Pods[:0]
	for _, p := range in.Pods {
		if p.Name == "api-5d8f-a" || p.Name == "cache-5d8f-a" {
			keep = append(keep, p)
		}
	}
	in.Pods = keep
	r := PlanCheck(in)
	var got []string
	for _, item := range r.Items {
		got = append(got, string(item.Severity)+" "+item.Reason+" "+item.Object)
	}
	assert.Check(t, is.DeepEqual(got, []string{"Disrupts QuorumWithoutBudget deployment.apps/cache", "Disrupts SingleReplica deployment.apps/api", "Note EmptyDir deployment.apps/api"}))
	assert.NilError(t, r.outcome())
	assert.Check(t, is.DeepEqual(r.Subjects(), []string{"deployment.apps/cache", "deployment.apps/api"}))
}

// A clear cluster: no finding, exit 0.
func TestPlanCheckClear(t *testing.T) {
	r := PlanCheck(CheckInput{Nodes: []string{"worker-1"}})
	assert.Check(t, is.Len(r.Items, 0))
	assert.NilError(t, r.outcome())
}

// pinnedPV is a CSI PersistentVolume whose required node affinity is terms
// (each a list of key, operator, values...).
func pinnedPV(name, driver string, terms ...[]corev1.NodeSelectorRequirement) corev1.PersistentVolume {
	pv := corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}
	pv.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: name}
	if len(terms) > 0 {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{}}
		for _, reqs := range terms {
			pv.Spec.NodeAffinity.Required.NodeSelectorTerms = append(pv.Spec.NodeAffinity.Required.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: reqs})
		}
	}
	return pv
}

func nodeIn(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

// volumesInput has, on worker-1, one StatefulSet per kind of volume behind
// its claim: node-local CSI volumes as TopoLVM, OpenEBS LocalPV (LVM) and
// the CSI hostpath driver (local-path storage) provision them, pinned to
// the node by their own label for it, one pinned by its hostname or its
// name; volumes that outlive the node (zonal, or admitted on several
// nodes); and claims that cannot be resolved.
func volumesInput() CheckInput {
	onNode := func(name, claim string) corev1.Pod {
		return checkPod("data", name+"-0", "worker-1", "StatefulSet", name, nil,
			corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	}
	in := CheckInput{
		Nodes: []string{"worker-1"},
		NodeLabels: map[string]map[string]string{"worker-1": {
			"kubernetes.io/hostname": "worker-1.example", "topology.kubernetes.io/zone": "zone-a",
			"topology.topolvm.io/node": "worker-1", "openebs.io/nodename": "worker-1", "openebs.io/rack": "rack-1", "topology.hostpath.csi/node": "worker-1",
		}},
	}
	zoneA := nodeIn("topology.kubernetes.io/zone", "zone-a")
	volumes := map[string]corev1.PersistentVolume{
		"topolvm":  pinnedPV("pvc-topolvm", "topolvm.io", []corev1.NodeSelectorRequirement{nodeIn("topology.topolvm.io/node", "worker-1")}),
		"openebs":  pinnedPV("pvc-openebs", "local.csi.openebs.io", []corev1.NodeSelectorRequirement{nodeIn("openebs.io/rack", "rack-1"), nodeIn("openebs.io/nodename", "worker-1")}),
		"hostpath": pinnedPV("pvc-hostpath", "hostpath.csi.k8s.io", []corev1.NodeSelectorRequirement{nodeIn("topology.hostpath.csi/node", "worker-1")}),
		"hostname": pinnedPV("pvc-hostname", "local.csi.example.com", []corev1.NodeSelectorRequirement{zoneA, nodeIn("kubernetes.io/hostname", "worker-1.example")}, []corev1.NodeSelectorRequirement{nodeIn("kubernetes.io/hostname", "worker-1.example")}),
		"field": func() corev1.PersistentVolume {
			pv := pinnedPV("pvc-field", "local.csi.example.com")
			pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchFields: []corev1.NodeSelectorRequirement{nodeIn("metadata.name", "worker-1")}},
			}}}
			return pv
		}(),
		"zonal":     pinnedPV("pvc-zonal", "ebs.csi.aws.com", []corev1.NodeSelectorRequirement{zoneA}),
		"rack":      pinnedPV("pvc-rack", "local.csi.openebs.io", []corev1.NodeSelectorRequirement{nodeIn("openebs.io/rack", "rack-1")}),
		"two-nodes": pinnedPV("pvc-two-nodes", "shared.csi.example.com", []corev1.NodeSelectorRequirement{nodeIn("kubernetes.io/hostname", "worker-1.example", "worker-2.example")}),
		"either": pinnedPV("pvc-either", "shared.csi.example.com",
			[]corev1.NodeSelectorRequirement{nodeIn("kubernetes.io/hostname", "worker-1.example")}, []corev1.NodeSelectorRequirement{nodeIn("kubernetes.io/hostname", "worker-2.example")}),
		"no-affinity": pinnedPV("pvc-no-affinity", "nfs.csi.k8s.io"),
	}
	for _, name := range slices.Sorted(maps.Keys(volumes)) {
		in.Pods = append(in.Pods, onNode(name, "data-"+name))
		in.StatefulSets = append(in.StatefulSets, statefulSet("data", name, int32p(2), "postgres:16"))
		c := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: "data-" + name}}
		c.Spec.VolumeName = volumes[name].Name
		in.Claims = append(in.Claims, c)
		in.Volumes = append(in.Volumes, volumes[name])
	}
	// Claims that cannot be resolved: gone, never bound, bound to a volume
	// that is not there.
	unbound := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: "data-unbound"}}
	lost := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: "data-lost"}}
	lost.Spec.VolumeName = "pvc-deleted"
	in.Claims = append(in.Claims, unbound, lost)
	for _, name := range []string{"missing", "unbound", "lost"} {
		in.Pods = append(in.Pods, onNode(name, "data-"+name))
		in.StatefulSets = append(in.StatefulSets, statefulSet("data", name, int32p(2), "postgres:16"))
	}
	in.Budgets = []*policyv1.PodDisruptionBudget{budget("data", "all", 1, nil)}
	in.Budgets[0].Spec.Selector = &metav1.LabelSelector{}
	return in
}

// A PersistentVolume whose node affinity pins it to the node keeps its data
// there, whatever its driver (TopoLVM, OpenEBS LocalPV, local-path CSI):
// LosesData, as a local volume. One a zone, a rack or several nodes admit
// does not. A claim that cannot be resolved is a finding that fails the
// check (CannotTell), never silence.
func TestPlanCheckNodeLocalVolumes(t *testing.T) {
	r := PlanCheck(volumesInput())
	var buf bytes.Buffer
	assert.NilError(t, cli.WriteTable(&buf, r.table(), false))
	golden.Assert(t, buf.String(), "check-volumes.golden")
	got := map[string]string{}
	for _, item := range r.Items {
		got[item.Object] = string(item.Severity) + " " + item.Reason
	}
	assert.Check(t, is.DeepEqual(got, map[string]string{
		"statefulset.apps/topolvm":  "LosesData LocalVolume",
		"statefulset.apps/openebs":  "LosesData LocalVolume",
		"statefulset.apps/hostpath": "LosesData LocalVolume",
		"statefulset.apps/hostname": "LosesData LocalVolume",
		"statefulset.apps/field":    "LosesData LocalVolume",
		"statefulset.apps/missing":  "CannotTell UnresolvedVolume",
		"statefulset.apps/unbound":  "CannotTell UnresolvedVolume",
		"statefulset.apps/lost":     "CannotTell UnresolvedVolume",
	}))
	err := r.outcome()
	assert.Check(t, is.Equal(exitcode.Of(err), exitcode.Refused))
	assert.Check(t, is.ErrorContains(err, "statefulset.apps/topolvm in data (LocalVolume)"))
	assert.Check(t, is.ErrorContains(err, "statefulset.apps/unbound in data (UnresolvedVolume)"))

	// Each alone fails the check; without them it passes.
	for _, name := range []string{"topolvm", "openebs", "hostpath", "missing"} {
		in := volumesInput()
		in.Pods = slices.DeleteFunc(in.Pods, func(p corev1.Pod) bool { return p.Name != name+"-0" })
		assert.Check(t, is.Equal(exitcode.Of(PlanCheck(in).outcome()), exitcode.Refused), name)
	}
	in := volumesInput()
	in.Pods = slices.DeleteFunc(in.Pods, func(p corev1.Pod) bool {
		return !slices.Contains([]string{"zonal-0", "rack-0", "two-nodes-0", "either-0", "no-affinity-0"}, p.Name)
	})
	assert.NilError(t, PlanCheck(in).outcome())
}
