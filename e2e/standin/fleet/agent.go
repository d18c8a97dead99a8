package fleet

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// agent is the fleetconfig-controller-agent add-on of one spoke: upstream's
// Spoke controller in its agent role, run here as a goroutine (see the
// package doc). It works on its cluster's Spoke only, and on the spoke with
// the credential it was installed with.
type agent struct {
	cluster string
	spoke   kubernetes.Interface
	// unjoined is set once the agent unjoined its cluster.
	unjoined bool
}

// startInstalledAgents starts the agent of every cluster whose agent
// add-on work the spoke's work agent has applied, as the agent's pod
// would start on the spoke.
func (f *Fleet) startInstalledAgents(ctx context.Context) {
	works, err := f.dyn.Resource(manifestWorkGVR).List(ctx, metav1.ListOptions{LabelSelector: addOnNameLabel + "=" + AgentAddOn})
	if err != nil {
		f.fail(ctx, fmt.Errorf("listing the %s add-on works: %w", AgentAddOn, err))
		return
	}
	for i := range works.Items {
		w := &works.Items[i]
		cluster := w.GetNamespace()
		f.mu.Lock()
		_, running := f.agents[cluster]
		kubeconfig := f.installed[cluster]
		f.mu.Unlock()
		if running || kubeconfig == nil || w.GetDeletionTimestamp() != nil || !conditionTrue(w, "Applied") {
			continue
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
		if err != nil {
			f.fail(ctx, fmt.Errorf("the %s agent's kubeconfig: %w", cluster, err))
			continue
		}
		cfg.Timeout = 3 * time.Second
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			f.fail(ctx, err)
			continue
		}
		a := &agent{cluster: cluster, spoke: c}
		f.mu.Lock()
		f.agents[cluster] = a
		f.mu.Unlock()
		go f.runAgent(ctx, a)
	}
}

// AgentRunning tells whether the spoke-side agent of cluster runs (its
// add-on was installed and has not seen its Spoke go).
func (f *Fleet) AgentRunning(cluster string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.agents[cluster] != nil
}

// runAgent reconciles the agent's Spoke until it is gone; then the agent,
// as upstream's does, has nothing left to do.
func (f *Fleet) runAgent(ctx context.Context, a *agent) {
	defer func() {
		f.mu.Lock()
		delete(f.agents, a.cluster)
		f.mu.Unlock()
	}()
	t := time.NewTicker(tick)
	defer t.Stop()
	sc := schedule{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.running.Lock()
		gone := f.agentRound(ctx, a, sc)
		f.running.Unlock()
		if gone {
			return
		}
	}
}

func (f *Fleet) agentRound(ctx context.Context, a *agent, sc schedule) (gone bool) {
	u, err := f.spokes().Get(ctx, a.cluster, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		f.fail(ctx, fmt.Errorf("agent %s: reading its Spoke: %w", a.cluster, err))
		return false
	}
	if !sc.due(u, time.Now()) {
		return false
	}
	var s spoke
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
		f.fail(ctx, fmt.Errorf("agent %s: reading its Spoke: %w", a.cluster, err))
		return false
	}
	sc.after(u, f.agentReconcile(ctx, a, &s), f.currentPace())
	return false
}

// agentReconcile is upstream's reconcile in the agent role: the
// spoke-cleanup finalizer, the pivot, the klusterlet check (with the
// default bundle version it needs nothing of the spoke), and on deletion,
// once the hub's pre-flight is done, the unjoin of its own cluster. It says
// when to come back (the agent's own queue).
func (f *Fleet) agentReconcile(ctx context.Context, a *agent, s *spoke) next {
	if s.DeletionTimestamp == nil {
		if !s.has(finalizerSpokeCleanup) {
			f.setFinalizers(ctx, s, append(s.Finalizers, finalizerSpokeCleanup))
			return requeue
		}
		st := newStatus(s)
		spokeWork(st)
		f.writeStatus(ctx, s, st, st.phase(nil))
		return requeue
	}
	// The hub removes its pre-flight finalizer when the spoke may unjoin; a
	// force-delete removes it and spoke-cleanup at once, and upstream's agent,
	// still running, unjoins all the same while the hub cleans up.
	if s.has(finalizerHubCleanupPreflight) || !s.has(finalizerHubCleanup) || a.unjoined {
		return waitChange
	}
	if err := f.unjoinWith(ctx, s, a.spoke); err != nil {
		f.setDeleting(ctx, s, cleanupCondition(true, err.Error()))
		return failed
	}
	a.unjoined = true
	if s.has(finalizerSpokeCleanup) {
		f.setFinalizers(ctx, s, without(s.Finalizers, finalizerSpokeCleanup))
	}
	return waitChange
}

// unjoinWith is `clusteradm unjoin` with a client of the spoke: with that
// client's identity it deletes the Klusterlet (a cluster's agents share
// one API server here, so the namespaces upstream deletes too stay); the
// klusterlet operator's part, the agent stopped and its hub credential
// gone, is the harness's (RemoveAgent).
func (f *Fleet) unjoinWith(ctx context.Context, s *spoke, c kubernetes.Interface) error {
	err := c.Discovery().RESTClient().Delete().AbsPath(klusterletPath).Do(ctx).Error()
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to unjoin spoke cluster: %w", err)
	}
	if err := f.hub.RemoveAgent(ctx, s.Name); err != nil {
		return fmt.Errorf("failed to unjoin spoke cluster: %w", err)
	}
	return nil
}

// klusterletPath is the Klusterlet that `clusteradm join` creates in the
// klusterlet's Default mode.
const klusterletPath = "/apis/operator.open-cluster-management.io/v1/klusterlets/klusterlet"
