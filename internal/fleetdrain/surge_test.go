package fleetdrain

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"

	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

var deploymentsResource = appsv1.SchemeGroupVersion.WithResource("deployments")

// singleReplica is Deployment web (namespace shop) of one replica, its ReplicaSet, its pod
// on node a, and a budget that wants it up (minAvailable 1, so it allows no
// disruption).
func singleReplica() (*appsv1.Deployment, *appsv1.ReplicaSet, *corev1.Pod, *policyv1.PodDisruptionBudget) {
	yes := true
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", ResourceVersion: "1"}}
	d.Spec.Replicas = ptr(int32(1))
	d.Spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1a", OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Controller: &yes}}}}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "shop", Name: "web-1a-x", Labels: map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1a", Controller: &yes}},
	}, Spec: corev1.PodSpec{NodeName: "a"}}
	b := budgetWithRV("web", 0)
	one := intstr.FromInt32(1)
	b.Spec.MinAvailable = &one
	return d, rs, p, b
}

func TestPlanSurge(t *testing.T) {
	d, rs, p, b := singleReplica()
	budgets := []*policyv1.PodDisruptionBudget{b}
	change := func(f func(d *appsv1.Deployment, p *corev1.Pod, b *policyv1.PodDisruptionBudget)) (*appsv1.Deployment, *corev1.Pod, []*policyv1.PodDisruptionBudget) {
		d2, p2, b2 := d.DeepCopy(), p.DeepCopy(), b.DeepCopy()
		f(d2, p2, b2)
		return d2, p2, []*policyv1.PodDisruptionBudget{b2}
	}
	zero := intstr.FromInt32(0)
	cases := []struct {
		name      string
		d         *appsv1.Deployment
		p         *corev1.Pod
		budgets   []*policyv1.PodDisruptionBudget
		comesBack string
	}{
		{"a single replica its budget holds", d, p, budgets, ""},
		{"its budget allows a disruption", d, p, []*policyv1.PodDisruptionBudget{budget("shop", "web", 1, map[string]string{"app": "web"})}, ""},
	}
	add := func(name string, f func(d *appsv1.Deployment, p *corev1.Pod, b *policyv1.PodDisruptionBudget), comesBack string) {
		d2, p2, b2 := change(f)
		cases = append(cases, struct {
			name      string
			d         *appsv1.Deployment
			p         *corev1.Pod
			budgets   []*policyv1.PodDisruptionBudget
			comesBack string
		}{name, d2, p2, b2, comesBack})
	}
	add("strategy Recreate", func(d *appsv1.Deployment, _ *corev1.Pod, _ *policyv1.PodDisruptionBudget) {
		d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
	}, "")
	add("maxSurge 0", func(d *appsv1.Deployment, _ *corev1.Pod, _ *policyv1.PodDisruptionBudget) {
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &zero}
	}, "")
	add("paused", func(d *appsv1.Deployment, _ *corev1.Pod, _ *policyv1.PodDisruptionBudget) { d.Spec.Paused = true }, "")
	add("an earlier surge recorded", func(d *appsv1.Deployment, _ *corev1.Pod, _ *policyv1.PodDisruptionBudget) {
		d.Annotations = map[string]string{SurgeAnnotation: `{"replicas":1}`}
	}, "")
	add("budget maxUnavailable 0", func(_ *appsv1.Deployment, _ *corev1.Pod, b *policyv1.PodDisruptionBudget) {
		b.Spec.MinAvailable, b.Spec.MaxUnavailable = nil, &zero
	}, "")
	add("a StatefulSet's pod", func(_ *appsv1.Deployment, p *corev1.Pod, _ *policyv1.PodDisruptionBudget) {
		p.OwnerReferences[0].Kind = "StatefulSet"
	}, "")
	add("a bare pod", func(_ *appsv1.Deployment, p *corev1.Pod, _ *policyv1.PodDisruptionBudget) { p.OwnerReferences = nil }, "")
	add("it would come back", func(*appsv1.Deployment, *corev1.Pod, *policyv1.PodDisruptionBudget) {}, "comes back: it tolerates node.kubernetes.io/unschedulable")
	var out strings.Builder
	for _, c := range cases {
		ok, why := PlanSurge(c.p, rs, c.d, c.budgets, c.comesBack)
		fmt.Fprintf(&out, "%s: %v %s\n", c.name, ok, why)
	}
	golden.Assert(t, out.String(), "surge-plan.golden")
}

// The scale-up and the scale-down each go in one patch behind the
// resourceVersion read and tests of the replicas and the record.
func TestSurgePatchesAreGuarded(t *testing.T) {
	d, _, _, _ := singleReplica()
	ops, err := surgeOps(d, SurgeRecord{Replicas: 1, Pod: "shop/web-1a-x", Node: "a"})
	assert.NilError(t, err)
	data, err := guardedPatch("7", ops)
	assert.NilError(t, err)
	assert.Equal(t, string(data), `[{"op":"replace","path":"/metadata/resourceVersion","value":"7"},`+
		`{"op":"test","path":"/spec/replicas","value":1},{"op":"replace","path":"/spec/replicas","value":2},`+
		`{"op":"add","path":"/metadata/annotations","value":{"fleetdrain.spokekit.io/surge":"{\"replicas\":1,\"pod\":\"shop/web-1a-x\",\"node\":\"a\"}"}}]`)

	d.Spec.Replicas = ptr(int32(2))
	d.Annotations = map[string]string{SurgeAnnotation: `{"replicas":1,"pod":"shop/web-1a-x","node":"a"}`}
	ops, err = restoreOps(d)
	assert.NilError(t, err)
	data, err = guardedPatch("8", ops)
	assert.NilError(t, err)
	assert.Equal(t, string(data), `[{"op":"replace","path":"/metadata/resourceVersion","value":"8"},`+
		`{"op":"test","path":"/metadata/annotations/fleetdrain.spokekit.io~1surge","value":"{\"replicas\":1,\"pod\":\"shop/web-1a-x\",\"node\":\"a\"}"},`+
		`{"op":"remove","path":"/metadata/annotations/fleetdrain.spokekit.io~1surge"},`+
		`{"op":"test","path":"/spec/replicas","value":2},{"op":"replace","path":"/spec/replicas","value":1}]`)

	// Scaled by someone else since: their count stays, the record goes.
	d.Spec.Replicas = ptr(int32(5))
	ops, err = restoreOps(d)
	assert.ErrorIs(t, err, errScaledSince)
	assert.Equal(t, len(ops), 2)

	d.Annotations[SurgeAnnotation] = `{"replicas":-3}`
	_, err = restoreOps(d)
	assert.ErrorContains(t, err, "records -3 replicas")
}

// surgeCluster is a budgetCluster whose Deployment web brings its budget
// one disruption while scaled above one replica (the replacement is Ready
// on another node), when ready is set.
func surgeCluster(t *testing.T, ready bool, objs ...k8sruntime.Object) *budgetCluster {
	t.Helper()
	c := newBudgetCluster(t, true, false, objs...)
	c.PrependReactor("patch", "deployments", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		handled, obj, err := k8stesting.ObjectReaction(c.Tracker())(a)
		if err != nil || !ready {
			return handled, obj, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if d := obj.(*appsv1.Deployment); replicas(d.Spec.Replicas) > 1 {
			for _, b := range c.budgets() {
				if b.Name == d.Name {
					c.setAllowed(b, 1)
				}
			}
		}
		return handled, obj, err
	})
	return c
}

func storedDeployment(t *testing.T, c *budgetCluster, ns, name string) *appsv1.Deployment {
	t.Helper()
	obj, err := c.Tracker().Get(deploymentsResource, ns, name)
	assert.NilError(t, err)
	return obj.(*appsv1.Deployment)
}

// --surge drains a node holding a single replica its budget will not let
// go: the Deployment goes to 2, the pod is evicted once the budget allows
// it, and the Deployment is back at 1 with no record left.
func TestSurgeEvictsASingleReplicaAfterItsReplacement(t *testing.T) {
	d, rs, p, b := singleReplica()
	c := surgeCluster(t, true, node("a", false, nil), node("b", false, nil), d, rs, p, b)
	o, out, errOut := nodeOptions(c.Clientset, "a")
	o.Surge, o.PDBTimeout = true, time.Minute

	o.DryRun = cli.DryRunClient
	assert.NilError(t, o.drainNodes(context.Background()))
	assert.Check(t, is.Contains(out.String(), "surge: Deployment shop/web goes from 1 to 2 replicas first"), out.String())
	assert.Equal(t, replicas(storedDeployment(t, c, "shop", "web").Spec.Replicas), int32(1), "a dry run scales nothing")

	o.DryRun = cli.DryRunNone
	assert.NilError(t, o.drainNodes(context.Background()), errOut.String())
	var verbs []string
	for _, a := range c.Actions() {
		switch {
		case a.GetVerb() == "patch" && a.GetResource().Resource == "deployments":
			verbs = append(verbs, "patch deployment")
		case a.GetSubresource() == "eviction":
			verbs = append(verbs, "evict")
		}
	}
	assert.DeepEqual(t, verbs, []string{"patch deployment", "evict", "patch deployment"})
	after := storedDeployment(t, c, "shop", "web")
	assert.Equal(t, replicas(after.Spec.Replicas), int32(1))
	assert.Check(t, is.Len(after.Annotations, 0))
}

// Ctrl-C while the surged pod waits for its budget: the Deployment is
// given back its one replica and the record goes; exit 130.
func TestInterruptedSurgeGivesTheReplicaBack(t *testing.T) {
	d, rs, p, b := singleReplica()
	c := surgeCluster(t, false, node("a", false, nil), node("b", false, nil), d, rs, p, b)
	o, _, _ := nodeOptions(c.Clientset, "a")
	o.Surge, o.PDBTimeout = true, time.Minute
	ctx, cancel := context.WithCancelCause(context.Background())
	o.ErrOut = writerFunc(func(line []byte) {
		if bytes.Contains(line, []byte("waiting on budget shop/web")) {
			cancel(fmt.Errorf("%w by SIGINT", exitcode.ErrInterrupted))
		}
	})
	err := o.drainNodes(ctx)
	assert.Equal(t, exitcode.Of(err), exitcode.Interrupted, "%v", err)
	after := storedDeployment(t, c, "shop", "web")
	assert.Equal(t, replicas(after.Spec.Replicas), int32(1))
	assert.Check(t, is.Len(after.Annotations, 0))
}

// --surge with --disable-eviction is refused before any request.
func TestSurgeWithoutEvictionIsRefused(t *testing.T) {
	client, _ := fakeCluster(t, node("a", false, nil))
	o, _, _ := nodeOptions(client, "a")
	o.Surge, o.DisableEviction = true, true
	err := o.Validate()
	assert.Equal(t, exitcode.Of(err), exitcode.Usage, "%v", err)
	assert.Equal(t, len(client.Actions()), 0)
}
