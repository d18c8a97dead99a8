// Package fleet is a test stand-in for what fleetconfig-controller does
// with Spokes on a hub, no more, driving the real Open Cluster Management
// components the harness runs (OCMHub). It follows upstream's source
// (open-cluster-management-io/lab, fleetconfig-controller: the v1beta1
// Spoke controller and webhook) in either of its two modes:
//
//   - ModeAddon, the chart's default (addonMode: true): a manager on the hub
//     does the day-1 work (finalizers, `clusteradm join` and accept, add-ons,
//     the hub half of a removal) and installs the fleetconfig-controller-agent
//     add-on on each spoke; that agent sets PivotComplete, adds the
//     spoke-cleanup finalizer and, when the Spoke is deleted, unjoins its own
//     cluster while the hub waits "for spoke agent to deregister". After the
//     pivot the hub never reaches the spoke again, and with
//     cleanupConfig.purgeKubeconfigSecret it deletes the Spoke's kubeconfig
//     Secret. The hub unjoins a spoke itself only for hub-as-spoke or when
//     the pivot never completed.
//   - ModeUnified: the hub does everything, reaching the spoke with the
//     Spoke's kubeconfig on every reconcile.
//
// The spoke-side agent: the agent add-on is an AddOnTemplate, as in the
// chart, which OCM's own add-on manager renders into a ManifestWork; kwok
// spokes run no pods, so the template carries a ConfigMap in place of the
// agent's Deployment, and the agent itself is a goroutine of this package
// (agent.go). It starts once the spoke's real work agent has applied that
// work and acts on the spoke with the credential the add-on was
// installed with (the kubeconfig the join used), never with the Spoke's
// Secret, which may be gone; it reads and writes the Spoke on the hub with
// the hub's admin client (the real agent has its own add-on credential).
//
// The stand-in serves upstream's validating webhook for Spokes and Hubs
// (webhook.go) for real, registered with the hub's API server, so every
// object a test or plugin writes passes the rules upstream enforces.
//
// Reconciles follow controller-runtime's rhythm at a Pace: a Spoke is
// reconciled when it changes (seen within a fraction of a second), after a
// failed deletion step with exponential backoff, and otherwise at the pace's
// requeue (upstream's 30 s); UpstreamPace is upstream's, scaled for fast runs.
// It never writes a ManagedCluster's status, placement decisions, an
// add-on's status or a ManifestWork (a force-delete aside, which deletes
// them): the hub's controllers and the agents do.
//
// It knows the upstream names from upstream, spelled here, never from the
// plugins' packages, so a wrong name in a plugin fails a test; it imports
// nothing from internal/. Its unexpected errors fail the test run (harness
// Env.Fail).
package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
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
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

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
	conditionAddonsConfigured = "AddonsConfigured"
	conditionPivotComplete    = "PivotComplete"
	conditionKlusterletSynced = "KlusterletSynced"
	conditionHubInitialized   = "HubInitialized"

	defaultKubeconfigKey = "kubeconfig"
	hubAsSpokeName       = "hub-as-spoke"

	// AgentAddOn is the add-on that carries the spoke-side agent in addon
	// mode: its ClusterManagementAddOn on the hub is how a client tells the
	// mode, and every Spoke but hub-as-spoke must list it there.
	AgentAddOn = "fleetconfig-controller-agent"

	// TaintWorkloadCleanup is added on delete when forceClusterDrain is set.
	TaintWorkloadCleanup = "fleetconfig.open-cluster-management.io/workload-cleanup"
	// TaintTerminating is added once the blocking check passed.
	TaintTerminating = "fleetconfig.open-cluster-management.io/terminating"

	managedClusterAddOnKind = "ManagedClusterAddOn"
	clusterNameLabel        = "open-cluster-management.io/cluster-name"
	addOnNameLabel          = "open-cluster-management.io/addon-name"
	conditionMCJoined       = "ManagedClusterJoined"
)

var (
	spokeGVR          = schema.GroupVersionResource{Group: "fleetconfig.open-cluster-management.io", Version: "v1beta1", Resource: "spokes"}
	hubGVR            = schema.GroupVersionResource{Group: "fleetconfig.open-cluster-management.io", Version: "v1beta1", Resource: "hubs"}
	managedClusterGVR = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1", Resource: "managedclusters"}
	manifestWorkGVR   = schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1", Resource: "manifestworks"}
	clusterAddOnGVR   = schema.GroupVersionResource{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Resource: "clustermanagementaddons"}
	addOnGVR          = schema.GroupVersionResource{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Resource: "managedclusteraddons"}
	addOnTemplateGVR  = schema.GroupVersionResource{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Resource: "addontemplates"}
)

// Mode is how the FleetConfig controller runs (the chart's addonMode).
type Mode string

const (
	// ModeAddon is a manager on the hub and an agent add-on on each spoke
	// (addonMode: true, the chart's default).
	ModeAddon Mode = "addon"
	// ModeUnified is one controller on the hub doing everything (addonMode: false).
	ModeUnified Mode = "unified"
)

// Options configure the stand-in.
type Options struct {
	// Mode defaults to ModeAddon.
	Mode Mode
	// Pace defaults to UpstreamPace scaled by FastScale.
	Pace Pace
}

// BlockingMessage is the upstream CleanupFailed message while ManifestWorks
// that no add-on owns are in the cluster namespace.
func BlockingMessage(cluster string) string {
	return fmt.Sprintf("Found manifestWorks for ManagedCluster %s; cannot unjoin spoke cluster while it has active ManifestWorks", cluster)
}

// spoke is what the stand-in (and its webhook) reads of a Spoke.
type spoke struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		HubRef struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"hubRef"`
		Kubeconfig kubeconfigRef `json:"kubeconfig"`
		Klusterlet struct {
			Mode                            string        `json:"mode"`
			ManagedClusterKubeconfig        kubeconfigRef `json:"managedClusterKubeconfig"`
			AddonKubeClientRegistrationAuth string        `json:"addonKubeClientRegistrationAuth"`
		} `json:"klusterlet"`
		AddOns []struct {
			ConfigName string `json:"configName"`
		} `json:"addOns"`
		Timeout       int64 `json:"timeout"`
		LogVerbosity  int64 `json:"logVerbosity"`
		CleanupConfig struct {
			ForceClusterDrain     bool `json:"forceClusterDrain"`
			PurgeKubeconfigSecret bool `json:"purgeKubeconfigSecret"`
		} `json:"cleanupConfig"`
	} `json:"spec"`
	Status spokeStatus `json:"status"`
}

type kubeconfigRef struct {
	SecretReference *struct {
		Name          string `json:"name"`
		KubeconfigKey string `json:"kubeconfigKey"`
	} `json:"secretReference"`
	InCluster bool   `json:"inCluster"`
	Context   string `json:"context"`
}

// hubAsSpoke is upstream's IsHubAsSpoke.
func (s *spoke) hubAsSpoke() bool {
	return s.Name == hubAsSpokeName || s.Spec.Kubeconfig.InCluster
}

func (s *spoke) has(finalizer string) bool { return slices.Contains(s.Finalizers, finalizer) }

// pivotComplete is upstream's PivotComplete: the spoke joined and the
// agent took over (both conditions True).
func (s *spoke) pivotComplete() bool {
	return s.conditionTrue(conditionJoined) && s.conditionTrue(conditionPivotComplete)
}

func (s *spoke) conditionTrue(t string) bool {
	i := slices.IndexFunc(s.Status.Conditions, func(c condition) bool { return c.Type == t })
	return i >= 0 && s.Status.Conditions[i].Status == metav1.ConditionTrue
}

type spokeStatus struct {
	Phase         string      `json:"phase,omitempty"`
	Conditions    []condition `json:"conditions,omitempty"`
	EnabledAddons []string    `json:"enabledAddons,omitempty"`
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
	mode      Mode

	// running is held while reconciling; Pause holds it to keep the
	// stand-in's own requests out of a measurement.
	running sync.Mutex

	mu sync.Mutex
	// installed holds, per cluster, the spoke kubeconfig the join used: the
	// credential the agent add-on is installed with.
	installed map[string][]byte
	agents    map[string]*agent
	// began is, per Spoke, when its last finished reconcile began (see
	// WaitReconcile).
	began map[string]time.Time
	pace  Pace
}

// SetPace changes the pace from the next reconcile on and returns the
// previous one; a Spoke already waiting keeps its due time.
func (f *Fleet) SetPace(p Pace) (previous Pace) {
	f.mu.Lock()
	defer f.mu.Unlock()
	previous, f.pace = f.pace, p
	return previous
}

func (f *Fleet) currentPace() Pace {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pace
}

// WaitReconcile waits until a reconcile of the Spoke that began after the
// call has finished: a test that must show the stand-in did nothing on its
// own (the Spoke stayed Running) waits for one, at the pace's requeue.
func (f *Fleet) WaitReconcile(ctx context.Context, name string) error {
	start := time.Now()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		f.mu.Lock()
		began := f.began[name]
		f.mu.Unlock()
		if began.After(start) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for a reconcile of Spoke %s: %w", name, ctx.Err())
		case <-t.C:
		}
	}
}

// Pause stops reconciling until the returned function is called.
func (f *Fleet) Pause() (resume func()) {
	f.running.Lock()
	return f.running.Unlock
}

// Mode is the mode the stand-in runs in.
func (f *Fleet) Mode() Mode { return f.mode }

// Start runs the stand-in in addon mode on the hub until ctx ends, at the
// pace; a failure to start fails the test run. Run is the same with every
// option and the error.
func Start(ctx context.Context, hub *harness.OCMHub, namespace string, pace Pace) *Fleet {
	f, err := Run(ctx, hub, namespace, Options{Pace: pace})
	if err != nil {
		hub.Env().Fail(fmt.Errorf("fleet stand-in: %w", err))
	}
	return f
}

// Run registers on the hub what the FleetConfig release does in the mode
// (the agent add-on's ClusterManagementAddOn in addon mode; the Hub marked
// initialized), serves and registers the validating webhook, and runs the
// stand-in until ctx ends.
func Run(ctx context.Context, hub *harness.OCMHub, namespace string, o Options) (*Fleet, error) {
	if o.Mode == "" {
		o.Mode = ModeAddon
	}
	if o.Mode != ModeAddon && o.Mode != ModeUnified {
		return nil, fmt.Errorf("unknown FleetConfig mode %q", o.Mode)
	}
	if o.Pace == (Pace{}) {
		o.Pace = UpstreamPace().Scaled(FastScale)
	}
	f := &Fleet{
		hub: hub, dyn: hub.Dynamic, kube: hub.Kube, namespace: namespace, mode: o.Mode, pace: o.Pace,
		installed: map[string][]byte{}, agents: map[string]*agent{}, began: map[string]time.Time{},
	}
	if err := f.registerAgentAddOn(ctx); err != nil {
		return nil, err
	}
	if err := f.initializeHubs(ctx); err != nil {
		return nil, err
	}
	if err := f.serveWebhook(ctx); err != nil {
		return nil, err
	}
	go f.loop(ctx)
	return f, nil
}

// ModeFromEnv reads SPOKEKIT_E2E_FLEET_MODE ("addon" or "unified"); unset
// is "".
func ModeFromEnv() (Mode, error) {
	m := Mode(os.Getenv("SPOKEKIT_E2E_FLEET_MODE"))
	switch m {
	case "", ModeAddon, ModeUnified:
		return m, nil
	}
	return "", fmt.Errorf("SPOKEKIT_E2E_FLEET_MODE=%q: want %q or %q", m, ModeAddon, ModeUnified)
}

// registerAgentAddOn makes the hub's add-on list say the mode, as the
// chart does: in addon mode only, the agent's AddOnTemplate and its
// ClusterManagementAddOn (installed by hand, per Spoke), from which OCM's
// add-on manager renders each enabled cluster's work
// (addon-fleetconfig-controller-agent-deploy-0) and reports the add-on's
// availability. kwok spokes run no pods: a ConfigMap stands for the agent's
// Deployment, in the release namespace the join made on the spoke.
func (f *Fleet) registerAgentAddOn(ctx context.Context) error {
	cmas, templates := f.dyn.Resource(clusterAddOnGVR), f.dyn.Resource(addOnTemplateGVR)
	if f.mode == ModeUnified {
		for _, ri := range []dynamic.NamespaceableResourceInterface{cmas, templates} {
			if err := ri.Delete(ctx, AgentAddOn, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("removing the %s add-on: %w", AgentAddOn, err)
			}
		}
		return nil
	}
	template := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": addOnTemplateGVR.GroupVersion().String(), "kind": "AddOnTemplate",
		"metadata": map[string]any{"name": AgentAddOn},
		"spec": map[string]any{
			"addonName": AgentAddOn,
			"agentSpec": map[string]any{"workload": map[string]any{"manifests": []any{map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				// One spoke API server may carry several test clusters: one agent each.
				"metadata": map[string]any{"name": AgentAddOn + "-{{CLUSTER_NAME}}", "namespace": f.namespace},
				"data":     map[string]any{"spokeName": "{{CLUSTER_NAME}}"},
			}}}},
		},
	}}
	cma := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": clusterAddOnGVR.GroupVersion().String(), "kind": "ClusterManagementAddOn",
		"metadata": map[string]any{"name": AgentAddOn},
		"spec": map[string]any{
			"addOnMeta": map[string]any{"displayName": "FleetConfig controller agent"},
			"supportedConfigs": []any{map[string]any{
				"group": addOnTemplateGVR.Group, "resource": addOnTemplateGVR.Resource,
				"defaultConfig": map[string]any{"name": AgentAddOn},
			}},
			"installStrategy": map[string]any{"type": "Manual"},
		},
	}}
	for _, o := range []struct {
		ri  dynamic.NamespaceableResourceInterface
		obj *unstructured.Unstructured
	}{{templates, template}, {cmas, cma}} {
		if _, err := o.ri.Create(ctx, o.obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("registering %s %s: %w", o.obj.GetKind(), AgentAddOn, err)
		}
	}
	return nil
}

// initializeHubs marks every Hub of the namespace initialized, as the Hub
// controller does once the cluster manager runs (the OCM hub components
// are up by now); the webhook checks add-on names against the hub from then on.
func (f *Fleet) initializeHubs(ctx context.Context) error {
	hubs, err := f.dyn.Resource(hubGVR).Namespace(f.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing Hubs: %w", err)
	}
	for i := range hubs.Items {
		h := &hubs.Items[i]
		c := cond(conditionHubInitialized, metav1.ConditionTrue, metav1.ConditionTrue, "Hub initialized")
		c.Reason, c.LastTransitionTime = "ReconcileSuccess", metav1.Now()
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
		if err != nil {
			return err
		}
		h.Object["status"] = map[string]any{"phase": phaseRunning, "conditions": []any{raw}}
		if _, err := f.dyn.Resource(hubGVR).Namespace(f.namespace).UpdateStatus(ctx, h, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("initializing Hub %s: %w", h.GetName(), err)
		}
	}
	return nil
}

// tick is how soon a change to a Spoke is seen (a watch event's latency).
const tick = 200 * time.Millisecond

// next is what a reconcile asks of the queue.
type next int

const (
	// requeue: come back after the pace's Requeue (upstream's
	// RequeueAfter), or at once if the Spoke changes.
	requeue next = iota
	// failed: a deletion step failed; come back after the backoff.
	failed
	// waitChange: come back only when the Spoke changes (upstream's
	// Result{} without error).
	waitChange
	// again: the stand-in split one upstream reconcile into several
	// rounds; go on at the next tick.
	again
	// pollAddons: the hub waits for disabled add-ons' works to go.
	pollAddons
)

// schedule says when an object is reconciled next: when it changed (its
// resourceVersion), or at its due time.
type schedule map[string]*entry

type entry struct {
	rv       string
	due      time.Time
	failures int
}

func (sc schedule) due(u *unstructured.Unstructured, now time.Time) bool {
	e, ok := sc[u.GetName()]
	return !ok || e.rv != u.GetResourceVersion() || (!e.due.IsZero() && !now.Before(e.due))
}

// after records a reconcile of u that asked for n, at pace p.
func (sc schedule) after(u *unstructured.Unstructured, n next, p Pace) {
	e := sc[u.GetName()]
	if e == nil {
		e = &entry{}
		sc[u.GetName()] = e
	}
	e.rv = u.GetResourceVersion()
	if n == failed {
		e.failures++
	} else {
		e.failures = 0
	}
	var d time.Duration
	switch n {
	case requeue:
		d = p.Requeue
	case failed:
		d = p.backoff(e.failures)
	case waitChange:
		e.due = time.Time{}
		return
	case again:
		d = tick
	case pollAddons:
		d = p.AddonPoll
	}
	e.due = time.Now().Add(d)
}

func (f *Fleet) loop(ctx context.Context) {
	t := time.NewTicker(tick)
	defer t.Stop()
	sc := schedule{}
	for {
		f.running.Lock()
		f.reconcileAll(ctx, sc)
		if f.mode == ModeAddon {
			f.startInstalledAgents(ctx)
		}
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

func (f *Fleet) reconcileAll(ctx context.Context, sc schedule) {
	l, err := f.spokes().List(ctx, metav1.ListOptions{})
	if err != nil {
		f.fail(ctx, fmt.Errorf("listing Spokes: %w", err))
		return
	}
	now := time.Now()
	seen := map[string]bool{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range l.Items {
		u := &l.Items[i]
		seen[u.GetName()] = true
		if !sc.due(u, now) {
			continue
		}
		wg.Go(func() {
			var s spoke
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
				f.fail(ctx, fmt.Errorf("reading Spoke %s: %w", u.GetName(), err))
				return
			}
			began := time.Now()
			var n next
			if s.DeletionTimestamp != nil {
				n = f.reconcileDelete(ctx, &s)
			} else {
				f.reconcileJoin(ctx, &s)
				n = requeue // as upstream, after every reconcile of a live Spoke
			}
			p := f.currentPace()
			mu.Lock()
			sc.after(u, n, p)
			mu.Unlock()
			f.mu.Lock()
			f.began[u.GetName()] = began
			f.mu.Unlock()
		})
	}
	wg.Wait()
	for name := range sc {
		if !seen[name] {
			delete(sc, name)
		}
	}
}

// loadKubeconfig is upstream's KubeconfigFromSecretOrCluster: the
// kubeconfig the Spoke names (its Secret, or the hub's own for inCluster),
// narrowed to spec.kubeconfig.context when set, as clusteradm's --context
// would use it. It does not reach the spoke.
func (f *Fleet) loadKubeconfig(ctx context.Context, s *spoke) ([]byte, error) {
	var data []byte
	switch ref := s.Spec.Kubeconfig.SecretReference; {
	case s.Spec.Kubeconfig.InCluster:
		var err error
		if data, err = os.ReadFile(f.hub.Kubeconfig); err != nil {
			return nil, err
		}
	case ref == nil:
		return nil, errors.New("no kubeconfig secret reference")
	default:
		sec, err := f.kube.CoreV1().Secrets(s.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading kubeconfig secret: %w", err)
		}
		key := ref.KubeconfigKey
		if key == "" {
			key = defaultKubeconfigKey
		}
		data = sec.Data[key]
	}
	return withContext(data, s.Spec.Kubeconfig.Context)
}

// withContext narrows a kubeconfig to one context (its current one when
// context is ""), so whoever uses it (the klusterlet agent, the agent
// add-on) uses that context's cluster and user.
func withContext(kubeconfig []byte, contextName string) ([]byte, error) {
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("parsing kubeconfig secret: %w", err)
	}
	if contextName != "" {
		if _, ok := raw.Contexts[contextName]; !ok {
			return nil, fmt.Errorf("context %q not found in the kubeconfig", contextName)
		}
		raw.CurrentContext = contextName
	}
	if err := clientcmdapi.MinifyConfig(raw); err != nil {
		return nil, fmt.Errorf("parsing kubeconfig secret: %w", err)
	}
	return clientcmd.Write(*raw)
}

// reachSpoke makes a client of a kubeconfig and checks the API server answers.
func reachSpoke(ctx context.Context, kubeconfig []byte) (kubernetes.Interface, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("parsing kubeconfig secret: %w", err)
	}
	cfg.Timeout = 3 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := c.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		return nil, fmt.Errorf("spoke API server %s: %w", cfg.Host, err)
	}
	return c, nil
}

// initialConditions are upstream's, set when missing at every reconcile.
func initialConditions() []condition {
	return []condition{
		cond(conditionJoined, metav1.ConditionFalse, metav1.ConditionTrue, conditionJoined),
		cond(conditionCleanupFailed, metav1.ConditionFalse, metav1.ConditionFalse, conditionCleanupFailed),
		cond(conditionAddonsConfigured, metav1.ConditionFalse, metav1.ConditionFalse, conditionAddonsConfigured),
		cond(conditionPivotComplete, metav1.ConditionFalse, metav1.ConditionTrue, conditionPivotComplete),
		cond(conditionKlusterletSynced, metav1.ConditionFalse, metav1.ConditionFalse, conditionKlusterletSynced),
	}
}

// reconcileJoin is upstream's reconcile of a live Spoke on the hub: the
// finalizers, then the hub's work (join, accept, add-ons, the purge of the
// kubeconfig Secret after the pivot) and, in unified mode or for
// hub-as-spoke, the spoke's work too; the phase follows the conditions.
// Upstream requeues a live Spoke after every reconcile, failed or not.
func (f *Fleet) reconcileJoin(ctx context.Context, s *spoke) {
	if !s.has(finalizerHubCleanup) {
		fins := append(slices.Clone(s.Finalizers), finalizerHubCleanupPreflight, finalizerHubCleanup)
		// In addon mode the spoke side adds spoke-cleanup once joined.
		if f.mode == ModeUnified || s.hubAsSpoke() {
			fins = append(fins, finalizerSpokeCleanup)
		}
		// Upstream takes the Hub's defaults as it adds its finalizers.
		hub, err := f.hubOf(ctx, s)
		if err != nil {
			f.fail(ctx, err)
		}
		f.patch(ctx, s, fins, hubDefaults(s, hub))
		return
	}
	st := newStatus(s)
	if s.Status.Phase == "" {
		f.writeStatus(ctx, s, st, phaseJoining)
		return
	}
	hub, err := f.hubOf(ctx, s)
	if err == nil {
		err = f.hubWork(ctx, s, st, hub)
	}
	if err == nil && (f.mode == ModeUnified || s.hubAsSpoke()) {
		spokeWork(st)
	}
	f.writeStatus(ctx, s, st, st.phase(err))
}

// hubOf is upstream's getHubMeta: the Hub that spec.hubRef names, nil when
// there is none (not an error: the join says "hub not found").
func (f *Fleet) hubOf(ctx context.Context, s *spoke) (*unstructured.Unstructured, error) {
	ref := s.Spec.HubRef
	if ref.Namespace == "" || ref.Name == "" {
		// Upstream's cached client finds no namespaced object so.
		return nil, nil
	}
	h, err := f.dyn.Resource(hubGVR).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Hub %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	return h, nil
}

// hubWork is upstream's doHubWork.
func (f *Fleet) hubWork(ctx context.Context, s *spoke, st *status, hub *unstructured.Unstructured) error {
	mc, err := f.managedCluster(ctx, s.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if mc == nil {
		kubeconfig, err := f.loadKubeconfig(ctx, s)
		if err != nil {
			// Upstream returns this one without a condition.
			return fmt.Errorf("failed to load spoke kubeconfig: %w", err)
		}
		if err := f.join(ctx, s, hub, kubeconfig); err != nil {
			st.set(cond(conditionJoined, metav1.ConditionFalse, metav1.ConditionTrue, err.Error()))
			return err
		}
	}
	if mc == nil || !hasCondition(mc, conditionMCJoined) {
		// clusteradm join --wait returns once the agent asked to join;
		// upstream re-accepts and looks again at its next requeue.
		st.set(cond(conditionJoined, metav1.ConditionFalse, metav1.ConditionTrue,
			fmt.Sprintf("ManagedClusterJoined condition not found in ManagedCluster for spoke cluster %s", s.Name)))
		// Upstream accepts again with --skip-approve-check here.
		if _, err := f.hub.Accept(ctx, s.Name, true); err != nil {
			f.fail(ctx, err)
		}
		return nil
	}
	if !conditionTrue(mc, conditionMCJoined) {
		msg := fmt.Sprintf("failed to join spoke cluster %s: %s", s.Name, conditionMessage(mc, conditionMCJoined))
		st.set(cond(conditionJoined, metav1.ConditionFalse, metav1.ConditionTrue, msg))
		return errors.New(msg)
	}
	st.set(cond(conditionJoined, metav1.ConditionTrue, metav1.ConditionTrue, "Joined"))
	agentMode := f.mode == ModeAddon && !s.hubAsSpoke()
	if agentMode && !s.has(finalizerSpokeCleanup) {
		f.setFinalizers(ctx, s, append(slices.Clone(s.Finalizers), finalizerSpokeCleanup))
		return nil
	}
	if err := f.purgeKubeconfigSecret(ctx, s); err != nil {
		return err
	}
	enabled, err := f.enableAddOns(ctx, s)
	if err != nil {
		st.set(cond(conditionAddonsConfigured, metav1.ConditionFalse, metav1.ConditionTrue,
			fmt.Sprintf("failed to enable addons for spoke cluster %s: %s", s.Name, err)))
		return err
	}
	st.enabledAddons = enabled
	if len(enabled) > 0 {
		st.set(cond(conditionAddonsConfigured, metav1.ConditionTrue, metav1.ConditionTrue, conditionAddonsConfigured))
	}
	return nil
}

// join does what upstream's joinSpoke and `clusteradm join` and accept do:
// only for a Hub that hubRef names and that is initialized, the klusterlet
// agent, bootstrapping from the hub; in addon mode also the agent's
// namespace on the spoke, made beforehand so it outlives the unjoin
// (upstream's createAgentNamespace).
func (f *Fleet) join(ctx context.Context, s *spoke, hub *unstructured.Unstructured, kubeconfig []byte) error {
	if hub == nil {
		return errors.New("hub not found")
	}
	if !conditionTrue(hub, conditionHubInitialized) {
		return errors.New("hub does not have initialized condition")
	}
	c, err := reachSpoke(ctx, kubeconfig)
	if err == nil {
		err = f.hub.StartAgent(ctx, s.Name, kubeconfig)
	}
	if err != nil {
		return fmt.Errorf("clusteradm join command failed for spoke %s: %w", s.Name, err)
	}
	if _, err := f.hub.Accept(ctx, s.Name, false); err != nil {
		return fmt.Errorf("failed to accept spoke cluster join request: %w", err)
	}
	if f.mode == ModeAddon && !s.hubAsSpoke() {
		if err := createNamespace(ctx, c, f.namespace); err != nil {
			return err
		}
	}
	f.mu.Lock()
	f.installed[s.Name] = kubeconfig
	f.mu.Unlock()
	return nil
}

// purgeKubeconfigSecret is upstream's deleteKubeconfigSecret: only in addon
// mode, after the pivot, for a Spoke that asked for it.
func (f *Fleet) purgeKubeconfigSecret(ctx context.Context, s *spoke) error {
	ref := s.Spec.Kubeconfig.SecretReference
	if f.mode != ModeAddon || !s.pivotComplete() || s.Spec.Kubeconfig.InCluster || ref == nil || !s.Spec.CleanupConfig.PurgeKubeconfigSecret {
		return nil
	}
	err := f.kube.CoreV1().Secrets(s.Namespace).Delete(ctx, ref.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("purging the kubeconfig secret of %s: %w", s.Name, err)
	}
	return nil
}

// spokeWork is upstream's doSpokeWork run from the hub (unified mode,
// hub-as-spoke). Upstream's reads the in-cluster config, which on the hub
// is the hub's own, and with the default bundle version checks no
// klusterlet: it never reaches the spoke, so a spoke whose API server
// stopped, or whose kubeconfig Secret went, stays Running.
func spokeWork(st *status) {
	st.set(cond(conditionPivotComplete, metav1.ConditionTrue, metav1.ConditionTrue, conditionPivotComplete))
	st.set(cond(conditionKlusterletSynced, metav1.ConditionTrue, metav1.ConditionTrue, conditionKlusterletSynced))
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

func findCondition(u *unstructured.Unstructured, t string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == t {
			return m
		}
	}
	return nil
}

func hasCondition(u *unstructured.Unstructured, t string) bool { return findCondition(u, t) != nil }

func conditionTrue(u *unstructured.Unstructured, t string) bool {
	c := findCondition(u, t)
	return c != nil && c["status"] == "True"
}

func conditionMessage(u *unstructured.Unstructured, t string) string {
	msg, _ := findCondition(u, t)["message"].(string)
	return msg
}

func cond(t string, status, want metav1.ConditionStatus, msg string) condition {
	return condition{Condition: metav1.Condition{Type: t, Status: status, Reason: "ReconcileSuccess", Message: msg}, WantStatus: want}
}

// status is a Spoke's status being worked on in one reconcile.
type status struct {
	conds         []condition
	enabledAddons []string
}

// newStatus starts from the Spoke's conditions, adding upstream's initial
// ones that are missing.
func newStatus(s *spoke) *status {
	st := &status{conds: slices.Clone(s.Status.Conditions), enabledAddons: s.Status.EnabledAddons}
	for _, c := range initialConditions() {
		if !slices.ContainsFunc(st.conds, func(o condition) bool { return o.Type == c.Type }) {
			st.conds = append(st.conds, c)
		}
	}
	return st
}

func (st *status) set(c condition) {
	i := slices.IndexFunc(st.conds, func(o condition) bool { return o.Type == c.Type })
	if i < 0 {
		st.conds = append(st.conds, c)
		return
	}
	if st.conds[i].Status != c.Status {
		c.LastTransitionTime = metav1.Time{}
	} else {
		c.LastTransitionTime = st.conds[i].LastTransitionTime
	}
	st.conds[i] = c
}

// phase is upstream's: Unhealthy after an error or while any condition is
// not as wanted, else Running.
func (st *status) phase(err error) string {
	if err != nil || slices.ContainsFunc(st.conds, func(c condition) bool { return c.Status != c.WantStatus }) {
		return phaseUnhealthy
	}
	return phaseRunning
}

// writeStatus writes the phase, conditions and enabled add-ons when any changed.
func (f *Fleet) writeStatus(ctx context.Context, s *spoke, st *status, phase string) {
	next := spokeStatus{Phase: phase, Conditions: st.conds, EnabledAddons: st.enabledAddons}
	for i := range next.Conditions {
		if next.Conditions[i].LastTransitionTime.IsZero() {
			next.Conditions[i].LastTransitionTime = metav1.Now()
		}
	}
	if equalStatus(s.Status, next) {
		return
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&next)
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

// equalStatus compares what the stand-in writes (transition times aside).
func equalStatus(a, b spokeStatus) bool {
	if a.Phase != b.Phase || !slices.Equal(a.EnabledAddons, b.EnabledAddons) || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i, c := range a.Conditions {
		o := b.Conditions[i]
		if c.Type != o.Type || c.Status != o.Status || c.WantStatus != o.WantStatus || c.Message != o.Message || c.Reason != o.Reason {
			return false
		}
	}
	return true
}

// setDeleting sets the phase Deleting and the given conditions (keeping the
// others).
func (f *Fleet) setDeleting(ctx context.Context, s *spoke, conds ...condition) {
	st := &status{conds: slices.Clone(s.Status.Conditions), enabledAddons: s.Status.EnabledAddons}
	for _, c := range conds {
		st.set(c)
	}
	f.writeStatus(ctx, s, st, phaseDeleting)
}

// hubDefaults is upstream's setDefaults: a Spoke's timeout left at the
// default (300) and a log verbosity left at 0 take the Hub's.
func hubDefaults(s *spoke, hub *unstructured.Unstructured) map[string]any {
	if hub == nil {
		return nil
	}
	spec := map[string]any{}
	if t, found, _ := unstructured.NestedInt64(hub.Object, "spec", "timeout"); found && s.Spec.Timeout == 300 && t != 300 {
		spec["timeout"] = t
	}
	if v, _, _ := unstructured.NestedInt64(hub.Object, "spec", "logVerbosity"); s.Spec.LogVerbosity == 0 && v != 0 {
		spec["logVerbosity"] = v
	}
	return spec
}

func (f *Fleet) setFinalizers(ctx context.Context, s *spoke, finalizers []string) {
	f.patch(ctx, s, finalizers, nil)
}

// patch sets the Spoke's finalizers and the given spec fields, if the
// Spoke is still as read.
func (f *Fleet) patch(ctx context.Context, s *spoke, finalizers []string, spec map[string]any) {
	p := map[string]any{"metadata": map[string]any{"resourceVersion": s.ResourceVersion, "finalizers": finalizers}}
	if len(spec) > 0 {
		p["spec"] = spec
	}
	patch, _ := json.Marshal(p)
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
