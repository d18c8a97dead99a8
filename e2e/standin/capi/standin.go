// Package capi is a stand-in for the Cluster API controllers (topology,
// MachineDeployment, Machine, MachineHealthCheck) and the platform around
// them, for the end-to-end tests. It runs in the test process against the
// real platform and tenant API servers and does, in small, what their
// documented behaviour is:
//
//   - one MachineDeployment (or MachinePool) per topology worker pool, with the
//     topology's replicas (left alone when the topology leaves them unset);
//   - Machines created and deleted to match, Provisioning then Running;
//   - a Node in the tenant cluster per Running Machine, annotated with
//     cluster.x-k8s.io/machine and kept Ready by kwok, removed with the Machine;
//   - the tenant's admin kubeconfig in the NAME-kubeconfig secret;
//   - control-plane pods labelled kamaji.clastix.io/name=NAME, Running;
//   - a Machine whose Node stays NotReady longer than the MachineHealthCheck
//     allows is marked unhealthy (event MachineMarkedUnhealthy) and replaced.
//
// The plugins never import it.
package capi

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/spokekit/spokekit/e2e/harness"
	capiapi "github.com/spokekit/spokekit/internal/api/capi"
)

// BrokenNodesAnnotation, on a topology pool's metadata, makes the stand-in
// register that pool's Nodes without kwok managing them, so they stay
// NotReady (a test knob; Cluster API has no such thing).
const BrokenNodesAnnotation = "e2e.spokekit.io/broken-nodes"

// ProvisionDelay is how long a Machine stays Provisioning.
const ProvisionDelay = 500 * time.Millisecond

const version = "v1beta2"

var (
	clusters  = capiapi.GVR(version, capiapi.ClusterResource)
	mds       = capiapi.GVR(version, capiapi.MachineDeploymentResource)
	mps       = capiapi.GVR(version, capiapi.MachinePoolResource)
	machines  = capiapi.GVR(version, capiapi.MachineResource)
	mhcs      = capiapi.GVR(version, capiapi.MachineHealthCheckResource)
	kwokAnnot = "kwok.x-k8s.io/node"
)

// StandIn reconciles the clusters of one namespace on the platform.
type StandIn struct {
	Platform  *harness.Cluster
	Namespace string

	mu      sync.Mutex
	tenants map[string]*harness.Cluster
	// notReadySince remembers when a broken node was first seen NotReady.
	notReadySince map[string]time.Time
}

// New returns a stand-in for the platform's namespace.
func New(platform *harness.Cluster, namespace string) *StandIn {
	return &StandIn{Platform: platform, Namespace: namespace, tenants: map[string]*harness.Cluster{}, notReadySince: map[string]time.Time{}}
}

// AddTenant says which real cluster is the workload cluster of Cluster name.
func (s *StandIn) AddTenant(name string, tenant *harness.Cluster) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tenants[name] = tenant
}

func (s *StandIn) tenant(name string) *harness.Cluster {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tenants[name]
}

// Run reconciles until ctx ends. A controller requeues on a short period;
// here that is the whole loop.
func (s *StandIn) Run(ctx context.Context) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		if err := s.reconcileAll(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "capi stand-in:", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *StandIn) dyn() dynamic.Interface { return s.Platform.Dynamic }

func (s *StandIn) reconcileAll(ctx context.Context) error {
	l, err := s.dyn().Resource(clusters).Namespace(s.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range l.Items {
		c, err := capiapi.FromUnstructured[capiapi.Cluster](&l.Items[i])
		if err != nil {
			return err
		}
		tenant := s.tenant(c.Name)
		if c.Spec.Topology == nil || tenant == nil {
			continue
		}
		if err := s.reconcile(ctx, c, &l.Items[i], tenant); err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
	}
	return nil
}

func (s *StandIn) reconcile(ctx context.Context, c *capiapi.Cluster, obj *unstructured.Unstructured, tenant *harness.Cluster) error {
	if err := s.publishKubeconfig(ctx, c, tenant); err != nil {
		return err
	}
	if err := s.controlPlanePods(ctx, c); err != nil {
		return err
	}
	var desired, current, ready int64
	if w := c.Spec.Topology.Workers; w != nil {
		for _, p := range w.MachineDeployments {
			d, cur, r, err := s.reconcilePool(ctx, c, tenant, p, "MachineDeployment", capiapi.MachineDeploymentNameLabel)
			if err != nil {
				return err
			}
			desired, current, ready = desired+d, current+cur, ready+r
		}
		for _, p := range w.MachinePools {
			d, cur, r, err := s.reconcilePool(ctx, c, tenant, p, "MachinePool", capiapi.MachinePoolNameLabel)
			if err != nil {
				return err
			}
			desired, current, ready = desired+d, current+cur, ready+r
		}
	}
	if err := s.healthCheckStatus(ctx, c.Name, current, ready); err != nil {
		return err
	}
	status := map[string]any{"phase": "Provisioned", "workers": map[string]any{"desiredReplicas": desired, "replicas": current, "readyReplicas": ready}}
	old, _, _ := unstructured.NestedMap(obj.Object, "status")
	if fmt.Sprint(old) == fmt.Sprint(status) {
		return nil
	}
	obj = obj.DeepCopy()
	obj.Object["status"] = status
	_, err := s.dyn().Resource(clusters).Namespace(s.Namespace).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// reconcilePool keeps one pool's MachineDeployment (or MachinePool) and its
// Machines, and returns desired, current and ready counts.
func (s *StandIn) reconcilePool(ctx context.Context, c *capiapi.Cluster, tenant *harness.Cluster, p capiapi.WorkerPool, kind, nameLabel string) (int64, int64, int64, error) {
	gvr := mds
	topologyLabel := capiapi.TopologyDeploymentNameLabel
	if kind == "MachinePool" {
		gvr, topologyLabel = mps, capiapi.TopologyPoolNameLabel
	}
	name := c.Name + "-" + p.Name
	ri := s.dyn().Resource(gvr).Namespace(s.Namespace)
	set, err := ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		replicas := int64(1)
		if p.Replicas != nil {
			replicas = int64(*p.Replicas)
		} else if m, err := strconv.Atoi(p.Metadata.Annotations[capiapi.AutoscalerMinSizeAnnotation]); err == nil {
			replicas = int64(m)
		}
		set = newMachineSet(c, kind, name, p.Name, topologyLabel, replicas)
		if set, err = ri.Create(ctx, set, metav1.CreateOptions{}); err != nil {
			return 0, 0, 0, err
		}
	} else if err != nil {
		return 0, 0, 0, err
	}
	replicas, _, _ := unstructured.NestedInt64(set.Object, "spec", "replicas")
	want := replicas
	if p.Replicas != nil {
		want = int64(*p.Replicas)
	} else {
		// Cluster API's defaulting webhook keeps an autoscaled pool within
		// its min and max.
		if m, err := strconv.Atoi(p.Metadata.Annotations[capiapi.AutoscalerMinSizeAnnotation]); err == nil && want < int64(m) {
			want = int64(m)
		}
		if m, err := strconv.Atoi(p.Metadata.Annotations[capiapi.AutoscalerMaxSizeAnnotation]); err == nil && want > int64(m) {
			want = int64(m)
		}
	}
	if want != replicas {
		replicas = want
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
		if set, err = ri.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return 0, 0, 0, err
		}
	}
	broken := p.Metadata.Annotations[BrokenNodesAnnotation] == "true"
	current, ready, err := s.reconcileMachines(ctx, c, tenant, set, kind, nameLabel, topologyLabel, p.Name, replicas, broken)
	if err != nil {
		return 0, 0, 0, err
	}
	status := map[string]any{"replicas": current, "readyReplicas": ready}
	old, _, _ := unstructured.NestedMap(set.Object, "status")
	if fmt.Sprint(old["replicas"], old["readyReplicas"]) != fmt.Sprint(current, ready) {
		set.Object["status"] = status
		if _, err := ri.UpdateStatus(ctx, set, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			return 0, 0, 0, err
		}
	}
	return replicas, current, ready, nil
}

func newMachineSet(c *capiapi.Cluster, kind, name, pool, topologyLabel string, replicas int64) *unstructured.Unstructured {
	labels := map[string]any{capiapi.ClusterNameLabel: c.Name, capiapi.TopologyOwnedLabel: "", topologyLabel: pool}
	tmpl := map[string]any{
		"metadata": map[string]any{"labels": labels},
		"spec":     machineSpec(c.Name, name),
	}
	spec := map[string]any{"clusterName": c.Name, "replicas": replicas, "template": tmpl}
	if kind == "MachineDeployment" {
		spec["selector"] = map[string]any{"matchLabels": map[string]any{capiapi.ClusterNameLabel: c.Name, topologyLabel: pool}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": capiapi.Group + "/" + version,
		"kind":       kind,
		"metadata": map[string]any{
			"name": name, "namespace": c.Namespace, "labels": labels,
			"ownerReferences": []any{ownerRef("Cluster", c.Name, string(c.UID))},
		},
		"spec": spec,
	}}
}

func machineSpec(cluster, infraName string) map[string]any {
	return map[string]any{
		"clusterName":       cluster,
		"bootstrap":         map[string]any{"dataSecretName": "bootstrap-" + cluster},
		"infrastructureRef": map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "KubevirtMachine", "name": infraName},
	}
}

func ownerRef(kind, name, uid string) map[string]any {
	return map[string]any{"apiVersion": capiapi.Group + "/" + version, "kind": kind, "name": name, "uid": uid, "controller": true}
}

// reconcileMachines creates and deletes Machines to match replicas, moves
// them Provisioning → Running, registers their Nodes, and replaces machines
// whose Node stays NotReady past the health check's timeout.
func (s *StandIn) reconcileMachines(ctx context.Context, c *capiapi.Cluster, tenant *harness.Cluster, set *unstructured.Unstructured, kind, nameLabel, topologyLabel, pool string, replicas int64, broken bool) (int64, int64, error) {
	ri := s.dyn().Resource(machines).Namespace(s.Namespace)
	l, err := ri.List(ctx, metav1.ListOptions{LabelSelector: nameLabel + "=" + set.GetName()})
	if err != nil {
		return 0, 0, err
	}
	var live []unstructured.Unstructured
	for _, m := range l.Items {
		if m.GetDeletionTimestamp() == nil {
			live = append(live, m)
		}
	}
	for int64(len(live)) > replicas {
		m := live[len(live)-1]
		live = live[:len(live)-1]
		if err := s.deleteMachine(ctx, tenant, &m); err != nil {
			return 0, 0, err
		}
	}
	for int64(len(live)) < replicas {
		m := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": capiapi.Group + "/" + version,
			"kind":       "Machine",
			"metadata": map[string]any{
				"name": set.GetName() + "-" + rand.String(5), "namespace": s.Namespace,
				"labels":          map[string]any{capiapi.ClusterNameLabel: c.Name, nameLabel: set.GetName(), topologyLabel: pool},
				"ownerReferences": []any{ownerRef(kind, set.GetName(), string(set.GetUID()))},
			},
			"spec": machineSpec(c.Name, set.GetName()),
		}}
		created, err := ri.Create(ctx, m, metav1.CreateOptions{})
		if err != nil {
			return 0, 0, err
		}
		created.Object["status"] = map[string]any{"phase": capiapi.MachinePhaseProvisioning}
		if created, err = ri.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return 0, 0, err
		}
		live = append(live, *created)
	}
	timeout, err := s.unhealthyTimeout(ctx, c.Name)
	if err != nil {
		return 0, 0, err
	}
	var ready int64
	for i := range live {
		m := &live[i]
		phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
		switch phase {
		case capiapi.MachinePhaseProvisioning:
			if time.Since(m.GetCreationTimestamp().Time) < ProvisionDelay {
				continue
			}
			if err := registerNode(ctx, tenant.Kube, m.GetName(), broken); err != nil {
				return 0, 0, err
			}
			m.Object["status"] = map[string]any{"phase": capiapi.MachinePhaseRunning, "nodeRef": map[string]any{"name": m.GetName()}}
			if _, err := ri.UpdateStatus(ctx, m, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
				return 0, 0, err
			}
		case capiapi.MachinePhaseRunning:
			healthy, err := s.nodeHealthy(ctx, tenant.Kube, m.GetName(), broken)
			if err != nil {
				return 0, 0, err
			}
			if healthy {
				ready++
				continue
			}
			if timeout != nil && time.Since(s.since(m.GetName())) > *timeout {
				if err := s.remediate(ctx, tenant, m); err != nil {
					return 0, 0, err
				}
			}
		}
	}
	return int64(len(live)), ready, nil
}

func (s *StandIn) since(node string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.notReadySince[node]
	if !ok {
		t = time.Now()
		s.notReadySince[node] = t
	}
	return t
}

// unhealthyTimeout is the NotReady timeout of the cluster's health check,
// or nil when no health check covers the cluster.
func (s *StandIn) unhealthyTimeout(ctx context.Context, cluster string) (*time.Duration, error) {
	l, err := s.dyn().Resource(mhcs).Namespace(s.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, h := range l.Items {
		if name, _, _ := unstructured.NestedString(h.Object, "spec", "clusterName"); name != cluster {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(h.Object, "spec", "checks", "unhealthyNodeConditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] == "Ready" {
				secs, _ := m["timeoutSeconds"].(int64)
				d := time.Duration(secs) * time.Second
				return &d, nil
			}
		}
	}
	return nil, nil
}

// healthCheckStatus counts the machines each health check of the cluster
// covers, and how many of them are healthy.
func (s *StandIn) healthCheckStatus(ctx context.Context, cluster string, expected, healthy int64) error {
	ri := s.dyn().Resource(mhcs).Namespace(s.Namespace)
	l, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range l.Items {
		h := &l.Items[i]
		if name, _, _ := unstructured.NestedString(h.Object, "spec", "clusterName"); name != cluster {
			continue
		}
		e, _, _ := unstructured.NestedInt64(h.Object, "status", "expectedMachines")
		c, _, _ := unstructured.NestedInt64(h.Object, "status", "currentHealthy")
		if e == expected && c == healthy {
			continue
		}
		h.Object["status"] = map[string]any{"expectedMachines": expected, "currentHealthy": healthy}
		if _, err := ri.UpdateStatus(ctx, h, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

// remediate does what MachineHealthCheck and the MachineSet do together:
// record the event, delete the machine; the next pass creates a new one.
func (s *StandIn) remediate(ctx context.Context, tenant *harness.Cluster, m *unstructured.Unstructured) error {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: m.GetName() + ".", Namespace: s.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Machine", APIVersion: capiapi.Group + "/" + version,
			Name: m.GetName(), Namespace: s.Namespace, UID: m.GetUID()},
		Reason:         capiapi.EventMachineMarkedUnhealthy,
		Message:        fmt.Sprintf("Machine %s/%s has been marked as unhealthy", s.Namespace, m.GetName()),
		Type:           corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "machinehealthcheck-controller"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if _, err := s.Platform.Kube.CoreV1().Events(s.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return err
	}
	return s.deleteMachine(ctx, tenant, m)
}

func (s *StandIn) deleteMachine(ctx context.Context, tenant *harness.Cluster, m *unstructured.Unstructured) error {
	err := s.dyn().Resource(machines).Namespace(s.Namespace).Delete(ctx, m.GetName(), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	err = tenant.Kube.CoreV1().Nodes().Delete(ctx, m.GetName(), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// registerNode adds the machine's Node to the tenant cluster. kwok keeps a
// node Ready; a broken one gets a NotReady condition and stays so.
func registerNode(ctx context.Context, kube kubernetes.Interface, name string, broken bool) error {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": name},
		Annotations: map[string]string{capiapi.MachineAnnotation: name},
	}}
	if !broken {
		n.Annotations[kwokAnnot] = "fake"
	} else {
		n.Labels["e2e.spokekit.io/broken"] = "true"
	}
	_, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if !broken {
		return nil
	}
	// The node controller also writes node status; retry on its conflicts.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
			Message: "container runtime network not ready", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		_, err = kube.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

// nodeHealthy reads the Node's Ready condition. A broken node is never
// healthy, whatever kwok may have written.
func (s *StandIn) nodeHealthy(ctx context.Context, kube kubernetes.Interface, name string, broken bool) (bool, error) {
	if broken {
		return false, nil
	}
	n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue, nil
		}
	}
	return false, nil
}

func (s *StandIn) publishKubeconfig(ctx context.Context, c *capiapi.Cluster, tenant *harness.Cluster) error {
	name := capiapi.KubeconfigSecretName(c.Name)
	if _, err := s.Platform.Kube.CoreV1().Secrets(s.Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
		return nil
	}
	data, err := os.ReadFile(tenant.Kubeconfig)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace, Labels: map[string]string{capiapi.ClusterNameLabel: c.Name}},
		Type:       "cluster.x-k8s.io/secret",
		Data:       map[string][]byte{capiapi.KubeconfigSecretKey: data},
	}
	_, err = s.Platform.Kube.CoreV1().Secrets(s.Namespace).Create(ctx, secret, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// controlPlanePods keeps the Kamaji control-plane pods of the cluster on a
// kwok node of the platform, where kwok runs them.
func (s *StandIn) controlPlanePods(ctx context.Context, c *capiapi.Cluster) error {
	kube := s.Platform.Kube
	const node = "platform-worker"
	if _, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Annotations: map[string]string{kwokAnnot: "fake"}, Labels: map[string]string{"type": "kwok"}}}
		if _, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	for i := range 2 {
		name := fmt.Sprintf("%s-%d", c.Name, i)
		if _, err := kube.CoreV1().Pods(s.Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
			continue
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace, Labels: map[string]string{capiapi.KamajiNameLabel: c.Name}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "kube-apiserver", Image: "registry.k8s.io/kube-apiserver:v1.34.1"}},
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		}
		if _, err := kube.CoreV1().Pods(s.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// ThreePoolCluster is a Cluster with worker pools of 3 and 2 machines and a
// machine pool the cluster autoscaler manages (1..5), as the scenarios and
// the demo use it.
func ThreePoolCluster(namespace, name string) string {
	return `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: ` + name + `
  namespace: ` + namespace + `
spec:
  topology:
    classRef:
      name: kubevirt-kubeadm
    version: v1.34.1
    workers:
      machineDeployments:
      - {class: default-worker, name: md-0, replicas: 3}
      - {class: default-worker, name: md-1, replicas: 2}
      machinePools:
      - class: pool
        name: auto
        metadata:
          annotations:
            cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size: "1"
            cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size: "5"
`
}
