package fleetdrain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli"
)

// SurgeAnnotation is on a Deployment that --surge scaled up by one: the
// replicas to give back. It is written in the same guarded patch as the
// scale-up and removed with the scale-down, as park records a Cluster's
// pools, so that what was taken is known even after the run.
const SurgeAnnotation = "fleetdrain.spokekit.io/surge"

// SurgeRecord is the value of SurgeAnnotation.
type SurgeRecord struct {
	// Replicas is the Deployment's spec.replicas before the surge.
	Replicas int32 `json:"replicas"`
	// Pod is the pod (namespace/name) the surge made room to evict.
	Pod  string `json:"pod"`
	Node string `json:"node"`
}

// parseSurgeRecord reads the annotation, which anyone who may edit the
// Deployment may edit: it is checked before it is trusted.
func parseSurgeRecord(s string) (SurgeRecord, error) {
	var r SurgeRecord
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return r, fmt.Errorf("annotation %s is not a surge record: %w", SurgeAnnotation, err)
	}
	if r.Replicas < 0 {
		return r, fmt.Errorf("annotation %s records %d replicas", SurgeAnnotation, r.Replicas)
	}
	return r, nil
}

// PlanSurge decides whether --surge starts pod's replacement before its
// eviction: only a Deployment's pod that a budget allowing no disruption
// blocks, when one more pod makes that budget allow one and the strategy
// allows a surge. why says what is done, or why the pod is not surged ("":
// no budget blocks it, nothing to say). Pure: rs and d are the pod's
// ReplicaSet and its Deployment (nil when there is none, or not read).
func PlanSurge(pod *corev1.Pod, rs *appsv1.ReplicaSet, d *appsv1.Deployment, budgets []*policyv1.PodDisruptionBudget, comesBack string) (surge bool, why string) {
	var blocking []*policyv1.PodDisruptionBudget
	for _, b := range Covering(budgets, pod) {
		if b.Status.DisruptionsAllowed <= 0 {
			blocking = append(blocking, b)
		}
	}
	if len(blocking) == 0 {
		return false, ""
	}
	c := metav1.GetControllerOf(pod)
	switch {
	case c == nil:
		return false, "not surged: no controller starts a replacement"
	case c.Kind == "StatefulSet":
		return false, "not surged: a StatefulSet's pod keeps its name and volumes, so its replacement cannot start first"
	case c.Kind != "ReplicaSet":
		return false, "not surged: only a Deployment's pods are (controller " + c.Kind + ")"
	case rs == nil || d == nil:
		return false, "not surged: its ReplicaSet belongs to no Deployment"
	case d.Annotations[SurgeAnnotation] != "":
		return false, fmt.Sprintf("not surged: Deployment %s already carries %s of an earlier run; set its replicas back and remove the annotation first", namespacedName(d.Namespace, d.Name), SurgeAnnotation)
	case d.Spec.Paused:
		return false, "not surged: Deployment " + namespacedName(d.Namespace, d.Name) + " is paused"
	case d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
		return false, "not surged: Deployment " + namespacedName(d.Namespace, d.Name) + " has strategy Recreate, which allows no surge"
	case comesBack != "":
		return false, "not surged: its replacement " + comesBack
	}
	replicas := replicas(d.Spec.Replicas)
	maxSurge := intstr.FromString("25%") // the API's default
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil && ru.MaxSurge != nil {
		maxSurge = *ru.MaxSurge
	}
	if n, err := intstr.GetScaledValueFromIntOrPercent(&maxSurge, int(replicas), true); err != nil || n < 1 {
		return false, "not surged: Deployment " + namespacedName(d.Namespace, d.Name) + " allows no surge (maxSurge " + maxSurge.String() + ")"
	}
	for _, b := range blocking {
		if b.Spec.MaxUnavailable != nil {
			if n, err := intstr.GetScaledValueFromIntOrPercent(b.Spec.MaxUnavailable, int(replicas)+1, true); err != nil || n < 1 {
				return false, fmt.Sprintf("not surged: budget %s allows no pod unavailable (maxUnavailable %s), however many run", namespacedName(b.Namespace, b.Name), b.Spec.MaxUnavailable.String())
			}
		}
	}
	return true, fmt.Sprintf("surge: Deployment %s goes from %d to %d replicas first; the pod is evicted once its budget allows it, then back to %d",
		namespacedName(d.Namespace, d.Name), replicas, replicas+1, replicas)
}

// planSurges reads, for each pod a budget blocks, its ReplicaSet and
// Deployment, and puts PlanSurge's answer in the plan. It returns the
// pods to surge (namespace/name) with their Deployment's.
func planSurges(ctx context.Context, client kubernetes.Interface, founds []NodePods, report *DrainReport, budgets []*policyv1.PodDisruptionBudget) (map[string]string, error) {
	surges := map[string]string{}
	for i, found := range founds {
		for j := range found.Evict {
			pod := &found.Evict[j]
			planned := &report.Items[i].Evict[j]
			rs, d, err := deploymentOf(ctx, client, pod)
			if err != nil {
				return nil, err
			}
			ok, why := PlanSurge(pod, rs, d, budgets, planned.ComesBack)
			planned.Surge = why
			if ok {
				surges[namespacedName(pod.Namespace, pod.Name)] = namespacedName(d.Namespace, d.Name)
			}
		}
	}
	return surges, nil
}

// deploymentOf reads the ReplicaSet behind pod and the Deployment behind
// it (nil, nil for other pods). A read that fails fails the plan: --surge
// cannot promise a surge it could not check.
func deploymentOf(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod) (*appsv1.ReplicaSet, *appsv1.Deployment, error) {
	c := metav1.GetControllerOf(pod)
	if c == nil || c.Kind != "ReplicaSet" {
		return nil, nil, nil
	}
	rs, err := client.AppsV1().ReplicaSets(pod.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("--surge: reading ReplicaSet %s: %w", namespacedName(pod.Namespace, c.Name), err)
	}
	dc := metav1.GetControllerOf(rs)
	if dc == nil || dc.Kind != "Deployment" {
		return rs, nil, nil
	}
	d, err := client.AppsV1().Deployments(pod.Namespace).Get(ctx, dc.Name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("--surge: reading Deployment %s: %w", namespacedName(pod.Namespace, dc.Name), err)
	}
	return rs, d, nil
}

// surgeAccess is what surging the planned pods needs: read and patch their
// Deployments.
func surgeAccess(surges map[string]string) []authz.Permission {
	var needs []authz.Permission
	for _, d := range surges {
		ns, name := splitKey(d)
		for _, verb := range []string{"get", "patch"} {
			needs = append(needs, authz.Permission{Verb: verb, Group: "apps", Resource: "deployments", Namespace: ns, Name: name})
		}
	}
	return authz.Unique(needs)
}

func splitKey(key string) (namespace, name string) {
	for i := range key {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}

// surger scales up the Deployment of each planned pod before its eviction
// and gives the replicas back after, one surge at a time per Deployment.
// Nil surges nothing.
type surger struct {
	client kubernetes.Interface
	pods   map[string]string // pod -> Deployment (namespace/name)

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

func newSurger(client kubernetes.Interface, pods map[string]string) *surger {
	if len(pods) == 0 {
		return nil
	}
	return &surger{client: client, pods: pods, locks: map[string]*sync.Mutex{}}
}

func (s *surger) lock(deployment string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.locks[deployment] == nil {
		s.locks[deployment] = &sync.Mutex{}
	}
	return s.locks[deployment]
}

// begin scales up pod's Deployment by one when the plan surges it, and
// returns what gives the replica back (nil when nothing was surged). The
// give-back runs with a context of its own: after Ctrl-C, --timeout or a
// failure it still restores the scale exactly.
func (s *surger) begin(ctx context.Context, node string, pod *corev1.Pod) (giveBack func() error, err error) {
	if s == nil {
		return nil, nil
	}
	key, ok := s.pods[namespacedName(pod.Namespace, pod.Name)]
	if !ok {
		return nil, nil
	}
	l := s.lock(key)
	l.Lock()
	ns, name := splitKey(key)
	record := SurgeRecord{Pod: namespacedName(pod.Namespace, pod.Name), Node: node}
	err = s.patch(ctx, ns, name, func(d *appsv1.Deployment) ([]api.PatchOp, error) {
		if d.Annotations[SurgeAnnotation] != "" {
			return nil, fmt.Errorf("deployment %s already carries %s", key, SurgeAnnotation)
		}
		record.Replicas = replicas(d.Spec.Replicas)
		return surgeOps(d, record)
	})
	if err != nil {
		l.Unlock()
		return nil, fmt.Errorf("--surge: scaling up Deployment %s: %w", key, err)
	}
	return func() error {
		defer l.Unlock()
		gctx, cancel := cli.GiveBackContext(ctx)
		defer cancel()
		return s.restore(gctx, ns, name)
	}, nil
}

// surgeOps raise the replicas by one and record what they were, behind
// tests of both, in the patch guarded by the resourceVersion read.
func surgeOps(d *appsv1.Deployment, r SurgeRecord) ([]api.PatchOp, error) {
	value, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding the surge record: %w", err)
	}
	ops := []api.PatchOp{
		{Op: "test", Path: "/spec/replicas", Value: r.Replicas},
		{Op: "replace", Path: "/spec/replicas", Value: r.Replicas + 1},
	}
	if d.Annotations == nil {
		return append(ops, api.PatchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{SurgeAnnotation: string(value)}}), nil
	}
	return append(ops, api.PatchOp{Op: "test", Path: api.AnnotationPath(SurgeAnnotation), Value: api.Absent},
		api.PatchOp{Op: "add", Path: api.AnnotationPath(SurgeAnnotation), Value: string(value)}), nil
}

// restoreOps give back the recorded replicas and remove the record, when
// the Deployment is still at the surge's count; otherwise someone scaled it
// since, and only the record goes (their count stays).
func restoreOps(d *appsv1.Deployment) ([]api.PatchOp, error) {
	raw := d.Annotations[SurgeAnnotation]
	if raw == "" {
		return nil, fmt.Errorf("its %s record is gone; its replicas are %d now", SurgeAnnotation, replicas(d.Spec.Replicas))
	}
	r, err := parseSurgeRecord(raw)
	if err != nil {
		return nil, err
	}
	path := api.AnnotationPath(SurgeAnnotation)
	ops := []api.PatchOp{{Op: "test", Path: path, Value: raw}, {Op: "remove", Path: path}}
	if replicas(d.Spec.Replicas) != r.Replicas+1 {
		return ops, errScaledSince
	}
	return append(ops, api.PatchOp{Op: "test", Path: "/spec/replicas", Value: r.Replicas + 1},
		api.PatchOp{Op: "replace", Path: "/spec/replicas", Value: r.Replicas}), nil
}

var errScaledSince = errors.New("scaled by someone else since the surge: their replica count stays, the record is removed")

func (s *surger) restore(ctx context.Context, ns, name string) error {
	var scaledSince bool
	err := s.patch(ctx, ns, name, func(d *appsv1.Deployment) ([]api.PatchOp, error) {
		ops, err := restoreOps(d)
		if errors.Is(err, errScaledSince) {
			scaledSince = true
			return ops, nil
		}
		return ops, err
	})
	switch {
	case err != nil:
		return fmt.Errorf("--surge: giving back the replicas of Deployment %s: %w", namespacedName(ns, name), err)
	case scaledSince:
		return fmt.Errorf("--surge: Deployment %s %w", namespacedName(ns, name), errScaledSince)
	}
	return nil
}

// patch sends the ops change returns for the Deployment as read now,
// guarded by its resourceVersion, reading again on conflict.
func (s *surger) patch(ctx context.Context, ns, name string, change func(*appsv1.Deployment) ([]api.PatchOp, error)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := s.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ops, err := change(d)
		if err != nil {
			return err
		}
		data, err := guardedPatch(d.ResourceVersion, ops)
		if err != nil || data == nil {
			return err
		}
		_, err = s.client.AppsV1().Deployments(ns).Patch(ctx, name, types.JSONPatchType, data, metav1.PatchOptions{FieldManager: FieldManager})
		return err
	})
}
