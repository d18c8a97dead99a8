// Package fleet is a test stand-in for what fleetconfig-controller does
// with a Spoke on a hub, no more, driving the real Open Cluster Management
// components the harness runs (OCMHub): it keeps the upstream finalizers,
// joins a new Spoke (reads its kubeconfig secret, starts the klusterlet
// agent with a bootstrap credential, as `clusteradm join` does, and accepts
// the cluster, as `clusteradm accept` does), and takes a deleted Spoke
// through the upstream order (the forceClusterDrain taint, the block on
// ManifestWorks no add-on owns, the terminating taint, unjoin on the spoke,
// hub cleanup), or through the force-delete shortcut. It never writes a
// ManagedCluster's status, placement decisions or ManifestWorks: the hub's
// registration controller and the agents do.
//
// It knows the upstream names from upstream, spelled here, never from the
// plugins' packages, so a wrong name in a plugin fails a test. Its
// unexpected errors fail the test run (harness Env.Fail).
package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/spokekit/spokekit/e2e/harness"
)

// Upstream names (fleetconfig-controller api/v1beta1 and OCM).
const (
	finalizerHubCleanupPreflight = "fleetconfig.open-cluster-management.io/hub-cleanup-preflight"
	finalizerHubCleanup          = "fleetconfig.open-cluster-management.io/hub-cleanup"
	finalizerSpokeCleanup        = "fleetconfig.open-cluster-management.io/spoke-cleanup"
	forceDeleteAnnotation        = "fleetconfig.open-cluster-management.io/force-delete"

	phaseJoining   = "Joining"
	phaseRunning   = "Running"
	phaseUnhealthy = "Unhealthy"
	phaseDeleting  = "Deleting"

	conditionJoined           = "SpokeJoined"
	conditionCleanupFailed    = "CleanupFailed"
	conditionKlusterletSynced = "KlusterletSynced"

	defaultKubeconfigKey = "kubeconfig"

	// TaintWorkloadCleanup is added on delete when forceClusterDrain is set.
	TaintWorkloadCleanup = "fleetconfig.open-cluster-management.io/workload-cleanup"
	// TaintTerminating is added once the blocking check passed.
	TaintTerminating = "fleetconfig.open-cluster-management.io/terminating"

	managedClusterAddOnKind = "ManagedClusterAddOn"
	clusterNameLabel        = "open-cluster-management.io/cluster-name"
	conditionMCJoined       = "ManagedClusterJoined"
)

var (
	spokeGVR          = schema.GroupVersionResource{Group: "fleetconfig.open-cluster-management.io", Version: "v1beta1", Resource: "spokes"}
	hubGVR            = schema.GroupVersionResource{Group: "fleetconfig.open-cluster-management.io", Version: "v1beta1", Resource: "hubs"}
	managedClusterGVR = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1", Resource: "managedclusters"}
	manifestWorkGVR   = schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1", Resource: "manifestworks"}
)

// BlockingMessage is the upstream CleanupFailed message while ManifestWorks
// that no add-on owns are in the cluster namespace.
func BlockingMessage(cluster string) string {
	return fmt.Sprintf("Found manifestWorks for ManagedCluster %s; cannot unjoin spoke cluster while it has active ManifestWorks", cluster)
}

// spoke is what the stand-in reads of a Spoke.
type spoke struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Kubeconfig struct {
			SecretReference *struct {
				Name          string `json:"name"`
				KubeconfigKey string `json:"kubeconfigKey"`
			} `json:"secretReference"`
		} `json:"kubeconfig"`
		CleanupConfig struct {
			ForceClusterDrain bool `json:"forceClusterDrain"`
		} `json:"cleanupConfig"`
	} `json:"spec"`
	Status spokeStatus `json:"status"`
}

type spokeStatus struct {
	Phase      string      `json:"phase,omitempty"`
	Conditions []condition `json:"conditions,omitempty"`
}

type condition struct {
	metav1.Condition `json:",inline"`
	WantStatus       metav1.ConditionStatus `json:"wantStatus"`
}

// Fleet reconciles the Spokes of one namespace of a hub.
type Fleet struct {
	hub       *harness.OCMHub
	dyn       dynamic.Interface
	kube      kubernetes.Interface
	namespace string
	interval  time.Duration

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
// interval, which is how often the real controller requeues (scaled down).
func Start(ctx context.Context, hub *harness.OCMHub, namespace string, interval time.Duration) *Fleet {
	f := &Fleet{hub: hub, dyn: hub.Dynamic, kube: hub.Kube, namespace: namespace, interval: interval}
	go f.loop(ctx)
	return f
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
	return f.dyn.Resource(spokeGVR).Namespace(f.namespace)
}

func (f *Fleet) reconcileAll(ctx context.Context) {
	l, err := f.spokes().List(ctx, metav1.ListOptions{})
	if err != nil {
		f.fail(ctx, fmt.Errorf("listing Spokes: %w", err))
		return
	}
	var wg sync.WaitGroup
	for i := range l.Items {
		wg.Add(1)
		go func(u *unstructured.Unstructured) {
			defer wg.Done()
			var s spoke
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
				f.fail(ctx, fmt.Errorf("reading Spoke %s: %w", u.GetName(), err))
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

// spokeKubeconfig reads the kubeconfig in the Spoke's secret and checks the
// spoke's API server answers with it.
func (f *Fleet) spokeKubeconfig(ctx context.Context, s *spoke) ([]byte, kubernetes.Interface, error) {
	ref := s.Spec.Kubeconfig.SecretReference
	if ref == nil {
		return nil, nil, errors.New("no kubeconfig secret reference")
	}
	sec, err := f.kube.CoreV1().Secrets(s.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("reading kubeconfig secret: %w", err)
	}
	key := ref.KubeconfigKey
	if key == "" {
		key = defaultKubeconfigKey
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(sec.Data[key])
	if err != nil {
		return nil, nil, fmt.Errorf("parsing kubeconfig secret: %w", err)
	}
	cfg.Timeout = 3 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	if _, err := c.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		return nil, nil, fmt.Errorf("spoke API server %s: %w", cfg.Host, err)
	}
	return sec.Data[key], c, nil
}

// reconcileJoin joins the spoke once (upstream runs clusteradm join and
// accept while the ManagedCluster has not joined) and reports the
// conditions; every round it reaches the spoke, as upstream's klusterlet
// upgrade check does, so a spoke whose API server stopped turns Unhealthy.
func (f *Fleet) reconcileJoin(ctx context.Context, s *spoke) {
	if !slices.Contains(s.Finalizers, finalizerHubCleanup) {
		f.setFinalizers(ctx, s, []string{finalizerHubCleanupPreflight, finalizerHubCleanup, finalizerSpokeCleanup})
		return
	}
	if s.Status.Phase == "" {
		f.setStatus(ctx, s, phaseJoining, cond(conditionJoined, metav1.ConditionFalse, metav1.ConditionTrue, "joining"))
		return
	}
	mc, err := f.managedCluster(ctx, s.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		f.fail(ctx, err)
		return
	}
	joined := mc != nil && conditionIs(mc, conditionMCJoined, "True")
	kubeconfig, _, reachErr := f.spokeKubeconfig(ctx, s)
	if !joined {
		if reachErr != nil {
			f.setStatus(ctx, s, phaseUnhealthy, cond(conditionJoined, metav1.ConditionFalse, metav1.ConditionTrue, "failed to join spoke cluster: "+reachErr.Error()))
			return
		}
		if err := f.hub.StartAgent(ctx, s.Name, kubeconfig); err != nil {
			f.fail(ctx, fmt.Errorf("joining spoke %s: %w", s.Name, err))
			return
		}
		if _, err := f.hub.Accept(ctx, s.Name); err != nil {
			f.fail(ctx, err)
			return
		}
		f.setStatus(ctx, s, phaseJoining, cond(conditionJoined, metav1.ConditionFalse, metav1.ConditionTrue, "waiting for the ManagedCluster to join"))
		return
	}
	if reachErr != nil {
		f.setStatus(ctx, s, phaseUnhealthy, cond(conditionJoined, metav1.ConditionTrue, metav1.ConditionTrue, "joined"),
			cond(conditionKlusterletSynced, metav1.ConditionFalse, metav1.ConditionTrue, "failed to check if spoke cluster needs upgrade: "+reachErr.Error()))
		return
	}
	f.setStatus(ctx, s, phaseRunning, cond(conditionJoined, metav1.ConditionTrue, metav1.ConditionTrue, "joined"),
		cond(conditionKlusterletSynced, metav1.ConditionTrue, metav1.ConditionTrue, "klusterlet up to date"))
}

func (f *Fleet) managedCluster(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	mc, err := f.dyn.Resource(managedClusterGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("reading ManagedCluster %s: %w", name, err)
	}
	return mc, nil
}

func conditionIs(u *unstructured.Unstructured, t, status string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == t {
			return m["status"] == status
		}
	}
	return false
}

func cond(t string, status, want metav1.ConditionStatus, msg string) condition {
	return condition{Condition: metav1.Condition{Type: t, Status: status, Reason: "ReconcileSuccess", Message: msg}, WantStatus: want}
}

// setStatus sets the phase and the given conditions (keeping the others).
func (f *Fleet) setStatus(ctx context.Context, s *spoke, phase string, conds ...condition) {
	st := s.Status
	st.Conditions = slices.Clone(st.Conditions)
	changed := st.Phase != phase
	for _, c := range conds {
		i := slices.IndexFunc(st.Conditions, func(o condition) bool { return o.Type == c.Type })
		if i >= 0 && st.Conditions[i].Status == c.Status && st.Conditions[i].Message == c.Message {
			continue
		}
		changed = true
		c.LastTransitionTime = metav1.Now()
		if i >= 0 {
			st.Conditions[i] = c
		} else {
			st.Conditions = append(st.Conditions, c)
		}
	}
	if !changed {
		return
	}
	st.Phase = phase
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		f.fail(ctx, err)
		return
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": spokeGVR.GroupVersion().String(), "kind": "Spoke",
		"metadata": map[string]any{"name": s.Name, "namespace": s.Namespace, "resourceVersion": s.ResourceVersion},
		"status":   raw,
	}}
	// A conflict means the Spoke changed meanwhile: the next round sees it.
	if _, err := f.spokes().UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		f.fail(ctx, fmt.Errorf("updating the status of Spoke %s: %w", s.Name, err))
	}
}

func (f *Fleet) setFinalizers(ctx context.Context, s *spoke, finalizers []string) {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": s.ResourceVersion, "finalizers": finalizers}})
	if _, err := f.spokes().Patch(ctx, s.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		f.fail(ctx, fmt.Errorf("setting the finalizers of Spoke %s: %w", s.Name, err))
	}
}

// fail records an unexpected error; errors after the run ended are not.
func (f *Fleet) fail(ctx context.Context, err error) {
	if ctx.Err() == nil {
		f.hub.Env().Fail(fmt.Errorf("fleet stand-in: %w", err))
	}
}
