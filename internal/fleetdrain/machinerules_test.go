package fleetdrain

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/exitcode"
)

func unstructuredOf(t *testing.T, kind string, obj any) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	assert.NilError(t, err)
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(capi.Group + "/v1beta2")
	u.SetKind(kind)
	return u
}

// managementOf is a management cluster holding Machine fleet/md-0-abc of
// Cluster fleet/app and the given rules.
func managementOf(t *testing.T, given bool, rules ...capi.MachineDrainRule) (*ManagementCluster, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	machine := &capi.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "md-0-abc"}, Spec: capi.MachineSpec{ClusterName: "app"}}
	cluster := &capi.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "app"}}
	objs := []runtime.Object{unstructuredOf(t, "Machine", machine), unstructuredOf(t, "Cluster", cluster)}
	for i := range rules {
		objs = append(objs, unstructuredOf(t, "MachineDrainRule", &rules[i]))
	}
	lists := map[schema.GroupVersionResource]string{}
	for _, v := range capi.Versions {
		lists[capi.GVR(v, capi.MachineDrainRuleResource)] = "MachineDrainRuleList"
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, objs...)
	return &ManagementCluster{Dynamic: dyn, Source: "--platform-kubeconfig mgmt", Given: given}, dyn
}

// machineNode is worker-1, the Node of a Machine of the cluster fleet/md-0.
func machineNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", Annotations: map[string]string{
		capi.MachineAnnotation: "md-0-abc", capi.ClusterNamespaceAnnotation: "fleet",
	}}}
}

func TestReadNodeRules(t *testing.T) {
	workload, _ := fakeCluster(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	mgmt, _ := managementOf(t, true, rule("b-skip", capi.DrainBehaviorSkip, nil), rule("a-last", capi.DrainBehaviorDrain, order(5)))
	plain := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
	got, err := ReadNodeRules(context.Background(), mgmt, workload, []*corev1.Node{machineNode(), plain})
	assert.NilError(t, err)
	assert.Equal(t, len(got), 1, "a node of no Machine drains as kubectl drain does")
	r := got["worker-1"]
	assert.Equal(t, r.Machine, "fleet/md-0-abc")
	assert.Equal(t, len(r.Rules), 2)
	assert.Equal(t, r.Rules[0].Name, "a-last")
	assert.Check(t, r.Namespaces["shop"] != nil)
	assert.Check(t, is.Contains(r.Source, "2 MachineDrainRule(s) of namespace fleet apply (read from --platform-kubeconfig mgmt)"))
}

func TestReadNodeRulesWithoutManagementCluster(t *testing.T) {
	workload, _ := fakeCluster(t)
	got, err := ReadNodeRules(context.Background(), nil, workload, []*corev1.Node{machineNode()})
	assert.NilError(t, err)
	assert.Equal(t, got["worker-1"].Source, rulesNotRead)
	assert.Check(t, got["worker-1"].Rules == nil)
}

// A management cluster named by the user that cannot say refuses (exit 3)
// before any cordon; the current context that is not the Machine's
// management cluster only leaves the rules unread.
func TestReadNodeRulesRefusesWhatItCannotRead(t *testing.T) {
	workload, _ := fakeCluster(t)
	// fails makes every verb request of resource fail with err.
	fails := func(verb, resource string, err error) func(*dynamicfake.FakeDynamicClient) {
		return func(dyn *dynamicfake.FakeDynamicClient) {
			dyn.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, err
			})
		}
	}
	rules := schema.GroupResource{Group: capi.Group, Resource: capi.MachineDrainRuleResource}
	notServed := fails("list", capi.MachineDrainRuleResource, apierrors.NewNotFound(rules, ""))
	forbidden := fails("list", capi.MachineDrainRuleResource, apierrors.NewForbidden(rules, "", nil))
	noMachine := fails("get", capi.MachineResource, apierrors.NewNotFound(schema.GroupResource{Group: capi.Group, Resource: capi.MachineResource}, "md-0-abc"))
	for name, tc := range map[string]struct {
		fault func(*dynamicfake.FakeDynamicClient)
		want  string
	}{
		"not served":      {notServed, "serves no MachineDrainRules"},
		"forbidden":       {forbidden, "listing the MachineDrainRules of namespace fleet"},
		"no such Machine": {noMachine, "machine fleet/md-0-abc not found there"},
		"an invalid rule": {nil, "MachineDrainRule fleet/bad"},
	} {
		t.Run(name, func(t *testing.T) {
			bad := rule("bad", capi.DrainBehaviorSkip, nil, capi.MachineDrainRulePodSelect{Selector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}},
			}})
			var rules []capi.MachineDrainRule
			if tc.fault == nil {
				rules = append(rules, bad)
			}
			mgmt, dyn := managementOf(t, true, rules...)
			if tc.fault != nil {
				tc.fault(dyn)
			}
			_, err := ReadNodeRules(context.Background(), mgmt, workload, []*corev1.Node{machineNode()})
			assert.ErrorContains(t, err, tc.want)
			assert.ErrorContains(t, err, "nothing was changed")
			assert.Check(t, exitcode.IsRefused(err))

			if tc.fault != nil {
				mgmt.Given = false
				got, err := ReadNodeRules(context.Background(), mgmt, workload, []*corev1.Node{machineNode()})
				assert.NilError(t, err, "the current context need not be the management cluster")
				assert.Equal(t, got["worker-1"].Source, rulesNotRead)
			}
		})
	}
}
