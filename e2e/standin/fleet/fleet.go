// Package fleet is a test stand-in for the FleetConfig controller and OCM
// registration on a hub, for the end-to-end tests: it does what their
// documentation says happens to a Spoke, against the real hub and spoke API
// servers. A new Spoke is joined (its kubeconfig secret read, the spoke
// reached, the agent namespace created there, a Joined and Available
// ManagedCluster and the cluster namespace created on the hub, PHASE
// Joining then Running, the upstream finalizers kept); a spoke whose API
// server stops answering is marked not Available and tainted unreachable; a
// deleted Spoke goes through the upstream flow (forceClusterDrain taint, the
// check that blocks on ManifestWorks no add-on owns, unjoin on the spoke,
// hub cleanup), or its shortcut when the force-delete annotation is set.
//
// Nothing in the plugins knows it exists.
package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
)

// Upstream names the controllers use.
const (
	// AgentNamespace is where the klusterlet agent runs on a spoke.
	AgentNamespace = "open-cluster-management-agent"
	// OperatorNamespace is where the klusterlet operator runs on a spoke.
	OperatorNamespace = "open-cluster-management"
	// TaintWorkloadCleanup is added on delete when forceClusterDrain is set.
	TaintWorkloadCleanup = "fleetconfig.open-cluster-management.io/workload-cleanup"
	// TaintTerminating is added once the blocking check passed.
	TaintTerminating = "fleetconfig.open-cluster-management.io/terminating"
)

// BlockingMessage is the upstream CleanupFailed message while ManifestWorks
// that no add-on owns are in the cluster namespace.
func BlockingMessage(cluster string) string {
	return fmt.Sprintf("Found manifestWorks for ManagedCluster %s; cannot unjoin spoke cluster while it has active ManifestWorks", cluster)
}

// Fleet reconciles the Spokes of one namespace of a hub.
type Fleet struct {
	dyn       dynamic.Interface
	kube      kubernetes.Interface
	namespace string
	interval  time.Duration

	mu     sync.Mutex
	errors []error
	// running is held while reconciling; Pause holds it to keep the
	// stand-in's own requests out of a measurement.
	running sync.Mutex
}

// Pause stops reconciling until the returned function is called.
func (f *Fleet) Pause() (resume func()) {
	f.running.Lock()
	return f.running.Unlock
}

// Start runs the stand-in on the hub until ctx ends. It resyncs every
// interval, which is how often the real controllers requeue (scaled down).
func Start(ctx context.Context, hub *rest.Config, namespace string, interval time.Duration) (*Fleet, error) {
	dyn, err := dynamic.NewForConfig(hub)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(hub)
	if err != nil {
		return nil, err
	}
	f := &Fleet{dyn: dyn, kube: kube, namespace: namespace, interval: interval}
	go f.loop(ctx)
	return f, nil
}

func (f *Fleet) loop(ctx context.Context) {
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		f.running.Lock()
		f.reconcileAll(ctx)
		f.running.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (f *Fleet) spokes() dynamic.ResourceInterface {
	return f.dyn.Resource(fleetconfig.SpokeResource).Namespace(f.namespace)
}

func (f *Fleet) reconcileAll(ctx context.Context) {
	l, err := f.spokes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	for i := range l.Items {
		wg.Add(1)
		go func(u *unstructured.Unstructured) {
			defer wg.Done()
			var s fleetconfig.Spoke
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
				return
			}
			if s.DeletionTimestamp != nil {
				f.reconcileDelete(ctx, &s)
				return
			}
			f.reconcileJoin(ctx, &s)
		}(&l.Items[i])
	}
	wg.Wait()
}

// spokeClient reaches the spoke with the kubeconfig in its secret.
func (f *Fleet) spokeClient(ctx context.Context, s *fleetconfig.Spoke) (kubernetes.Interface, string, error) {
	ref := s.Spec.Kubeconfig.SecretReference
	if ref == nil {
		return nil, "", fmt.Errorf("no kubeconfig secret reference")
	}
	sec, err := f.kube.CoreV1().Secrets(s.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("reading kubeconfig secret: %w", err)
	}
	key := ref.KubeconfigKey
	if key == "" {
		key = fleetconfig.DefaultKubeconfigKey
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(sec.Data[key])
	if err != nil {
		return nil, "", fmt.Errorf("parsing kubeconfig secret: %w", err)
	}
	cfg.Timeout = 3 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	if _, err := c.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		return nil, cfg.Host, fmt.Errorf("spoke API server %s: %w", cfg.Host, err)
	}
	return c, cfg.Host, nil
}

func (f *Fleet) reconcileJoin(ctx context.Context, s *fleetconfig.Spoke) {
	if !slices.Contains(s.Finalizers, fleetconfig.FinalizerHubCleanup) {
		f.setFinalizers(ctx, s, []string{fleetconfig.FinalizerHubCleanupPreflight, fleetconfig.FinalizerHubCleanup, fleetconfig.FinalizerSpokeCleanup})
		return
	}
	c, host, err := f.spokeClient(ctx, s)
	if err != nil {
		if f.markUnreachable(ctx, s.Name) {
			f.setStatus(ctx, s, fleetconfig.SpokePhaseUnhealthy, joinedCondition(metav1.ConditionFalse, err.Error()))
		} else {
			f.setStatus(ctx, s, fleetconfig.SpokePhaseJoining, joinedCondition(metav1.ConditionFalse, err.Error()))
		}
		return
	}
	if s.Status.Phase == "" {
		f.setStatus(ctx, s, fleetconfig.SpokePhaseJoining, joinedCondition(metav1.ConditionFalse, "joining"))
		return
	}
	for _, ns := range []string{OperatorNamespace, AgentNamespace} {
		if err := ensureNamespace(ctx, c, ns); err != nil {
			f.fail(err)
			return
		}
	}
	if err := ensureNamespace(ctx, f.kube, s.Name); err != nil {
		f.fail(err)
		return
	}
	if err := f.ensureAvailable(ctx, s.Name, host); err != nil {
		f.fail(err)
		return
	}
	f.setStatus(ctx, s, fleetconfig.SpokePhaseRunning, joinedCondition(metav1.ConditionTrue, "joined"))
}

func ensureNamespace(ctx context.Context, c kubernetes.Interface, name string) error {
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

func (f *Fleet) mcs() dynamic.ResourceInterface { return f.dyn.Resource(ocm.ManagedClusterResource) }

func (f *Fleet) managedCluster(ctx context.Context, name string) (*ocm.ManagedCluster, *unstructured.Unstructured, error) {
	u, err := f.mcs().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	var mc ocm.ManagedCluster
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &mc); err != nil {
		return nil, nil, err
	}
	return &mc, u, nil
}

// ensureAvailable creates the ManagedCluster (registration) and reports it
// joined and available (the agent's lease), without the unreachable taint.
func (f *Fleet) ensureAvailable(ctx context.Context, name, host string) error {
	mc, _, err := f.managedCluster(ctx, name)
	if apierrors.IsNotFound(err) {
		obj := map[string]any{
			"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
			"metadata": map[string]any{"name": name},
			"spec": map[string]any{"hubAcceptsClient": true, "leaseDurationSeconds": int64(60),
				"managedClusterClientConfigs": []any{map[string]any{"url": host}}},
		}
		if _, err := f.mcs().Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating ManagedCluster %s: %w", name, err)
		}
		mc, _, err = f.managedCluster(ctx, name)
	}
	if err != nil {
		return err
	}
	if i := taintIndex(mc, ocm.TaintUnreachable); i >= 0 {
		if err := f.patchTaints(ctx, mc, slices.Delete(slices.Clone(mc.Spec.Taints), i, i+1)); err != nil {
			return err
		}
	}
	return f.setMCConditions(ctx, name, metav1.ConditionTrue, "ManagedClusterAvailable", "the agent's lease is renewed")
}

// markUnreachable reports the ManagedCluster's availability as Unknown and
// taints it unreachable, as the hub does when the lease runs out. It says
// whether there was a ManagedCluster to mark.
func (f *Fleet) markUnreachable(ctx context.Context, name string) bool {
	mc, _, err := f.managedCluster(ctx, name)
	if err != nil {
		return false
	}
	if taintIndex(mc, ocm.TaintUnreachable) < 0 {
		now := metav1.Now()
		taints := append(slices.Clone(mc.Spec.Taints), ocm.Taint{Key: ocm.TaintUnreachable, Effect: ocm.TaintEffectNoSelect, TimeAdded: &now})
		if err := f.patchTaints(ctx, mc, taints); err != nil {
			f.fail(err)
		}
	}
	if err := f.setMCConditions(ctx, name, metav1.ConditionUnknown, "ManagedClusterLeaseUpdateStopped", "the agent stopped renewing its lease"); err != nil {
		f.fail(err)
	}
	return true
}

func taintIndex(mc *ocm.ManagedCluster, key string) int {
	return slices.IndexFunc(mc.Spec.Taints, func(t ocm.Taint) bool { return t.Key == key })
}

func (f *Fleet) patchTaints(ctx context.Context, mc *ocm.ManagedCluster, taints []ocm.Taint) error {
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": mc.ResourceVersion},
		"spec":     map[string]any{"taints": taints},
	})
	if _, err := f.mcs().Patch(ctx, mc.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("setting taints of ManagedCluster %s: %w", mc.Name, err)
	}
	return nil
}

func (f *Fleet) setMCConditions(ctx context.Context, name string, available metav1.ConditionStatus, reason, msg string) error {
	_, u, err := f.managedCluster(ctx, name)
	if err != nil {
		return err
	}
	now := metav1.Now()
	conds := []metav1.Condition{
		{Type: ocm.ManagedClusterConditionAccepted, Status: metav1.ConditionTrue, Reason: "HubClusterAdminAccepted", Message: "accepted", LastTransitionTime: now},
		{Type: ocm.ManagedClusterConditionJoined, Status: metav1.ConditionTrue, Reason: "ManagedClusterJoined", Message: "the agent joined", LastTransitionTime: now},
		{Type: ocm.ManagedClusterConditionAvailable, Status: available, Reason: reason, Message: msg, LastTransitionTime: now},
	}
	var old ocm.ManagedCluster
	_ = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &old)
	if sameStatuses(old.Status.Conditions, conds) {
		return nil
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&ocm.ManagedClusterStatus{Conditions: conds})
	if err != nil {
		return err
	}
	u.Object["status"] = raw
	if _, err := f.mcs().UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("updating the status of ManagedCluster %s: %w", name, err)
	}
	return nil
}

func sameStatuses(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Status != b[i].Status {
			return false
		}
	}
	return true
}

func joinedCondition(status metav1.ConditionStatus, msg string) fleetconfig.Condition {
	return fleetconfig.Condition{
		Condition:  metav1.Condition{Type: fleetconfig.SpokeConditionJoined, Status: status, Reason: "ReconcileSuccess", Message: msg},
		WantStatus: metav1.ConditionTrue,
	}
}

func cleanupCondition(failed bool, msg string) fleetconfig.Condition {
	status := metav1.ConditionFalse
	if failed {
		status = metav1.ConditionTrue
	}
	return fleetconfig.Condition{
		Condition:  metav1.Condition{Type: fleetconfig.SpokeConditionCleanupFailed, Status: status, Reason: "ReconcileSuccess", Message: msg},
		WantStatus: metav1.ConditionFalse,
	}
}

// setStatus sets the phase and one condition (keeping the others).
func (f *Fleet) setStatus(ctx context.Context, s *fleetconfig.Spoke, phase string, cond fleetconfig.Condition) {
	st := s.Status
	st.Conditions = slices.Clone(st.Conditions)
	i := slices.IndexFunc(st.Conditions, func(c fleetconfig.Condition) bool { return c.Type == cond.Type })
	if i >= 0 && st.Phase == phase && st.Conditions[i].Status == cond.Status && st.Conditions[i].Message == cond.Message {
		return
	}
	cond.LastTransitionTime = metav1.Now()
	if i >= 0 {
		st.Conditions[i] = cond
	} else {
		st.Conditions = append(st.Conditions, cond)
	}
	st.Phase = phase
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		f.fail(err)
		return
	}
	u, err := f.spokes().Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		return
	}
	if u.GetResourceVersion() != s.ResourceVersion {
		return // changed meanwhile: the next round sees the new one
	}
	u.Object["status"] = raw
	if _, err := f.spokes().UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		f.fail(fmt.Errorf("updating the status of Spoke %s: %w", s.Name, err))
	}
}

func (f *Fleet) setFinalizers(ctx context.Context, s *fleetconfig.Spoke, finalizers []string) {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": s.ResourceVersion, "finalizers": finalizers}})
	if _, err := f.spokes().Patch(ctx, s.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		f.fail(fmt.Errorf("setting the finalizers of Spoke %s: %w", s.Name, err))
	}
}

func (f *Fleet) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, err)
}

// Errors are the unexpected errors the stand-in met (conflicts and objects
// that went away meanwhile are expected and not among them).
func (f *Fleet) Errors() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.errors)
}
