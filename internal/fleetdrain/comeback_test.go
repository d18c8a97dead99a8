package fleetdrain

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/cli"
)

func labelledNode(name string, labels map[string]string) *corev1.Node {
	n := node(name, false, nil)
	n.Labels = labels
	return n
}

func onlyOn(hostname string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{hostname}},
		}}},
	}}}
}

func TestComesBack(t *testing.T) {
	nodes := []*corev1.Node{
		labelledNode("a", map[string]string{corev1.LabelHostname: "a", "pool": "gpu"}),
		labelledNode("b", map[string]string{corev1.LabelHostname: "b", "pool": "gpu"}),
		labelledNode("c", map[string]string{corev1.LabelHostname: "c", "pool": "cpu"}),
	}
	base := pod("shop", "p", "ReplicaSet", nil)
	with := func(change func(p *corev1.Pod)) *corev1.Pod {
		p := base.DeepCopy()
		change(p)
		return p
	}
	cases := []struct {
		name     string
		pod      *corev1.Pod
		template *corev1.PodSpec
		drained  []string
	}{
		{"a plain pod", &base, nil, []string{"a"}},
		{"tolerates every taint", with(func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}} }), nil, []string{"a"}},
		{"tolerates the cordon by name", with(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}), nil, []string{"a"}},
		{"tolerates another taint", with(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
		}), nil, []string{"a"}},
		{"its template pins a node", &base, &corev1.PodSpec{NodeName: "a"}, []string{"a"}},
		{"its pool is all drained", with(func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"pool": "gpu"} }), nil, []string{"a", "b"}},
		{"its pool has another node", with(func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"pool": "gpu"} }), nil, []string{"a"}},
		{"its affinity names the drained node", with(func(p *corev1.Pod) { p.Spec.Affinity = onlyOn("a") }), nil, []string{"a"}},
		{"its affinity names another node", with(func(p *corev1.Pod) { p.Spec.Affinity = onlyOn("c") }), nil, []string{"a"}},
		{"no node matches at all", with(func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"pool": "tpu"} }), nil, []string{"a"}},
	}
	var out strings.Builder
	for _, c := range cases {
		why := ComesBack(c.pod, c.template, nodes, c.drained)
		if why == "" {
			why = "-"
		}
		fmt.Fprintf(&out, "%s: %s\n", c.name, why)
	}
	golden.Assert(t, out.String(), "comes-back.golden")
}

// The plan of fleetdrain node and check both name a pod that would come
// back: one tolerating the cordon, and one whose ReplicaSet pins the node.
func TestPlanAndCheckNameThePodsThatComeBack(t *testing.T) {
	tolerant := pod("ops", "agent-1", "ReplicaSet", nil)
	tolerant.Spec.NodeName, tolerant.Spec.Tolerations = "a", []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	pinned := pod("ops", "pinned-1", "ReplicaSet", nil)
	pinned.Spec.NodeName = "a"
	pinned.OwnerReferences[0].APIVersion = "apps/v1"
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "pinned-1-owner"}}
	rs.Spec.Template.Spec.NodeName = "a"
	client, _ := fakeCluster(t, node("a", false, nil), node("b", false, nil), &tolerant, &pinned, rs)

	o, out, _ := nodeOptions(client, "a")
	o.DryRun = cli.DryRunClient
	assert.NilError(t, o.drainNodes(context.Background()))
	golden.Assert(t, out.String(), "plan-comes-back.golden")

	// A pool's only node: a pod that selects the pool goes to the pool's
	// replacement node, so check names none; one that selects the node by
	// its hostname has nowhere to go, and check names it.
	pooled := pod("ops", "pooled-1", "ReplicaSet", nil)
	pooled.Spec.NodeName, pooled.Spec.NodeSelector = "a", map[string]string{"pool": "gpu"}
	hosted := pod("ops", "hosted-1", "ReplicaSet", nil)
	hosted.Spec.NodeName, hosted.Spec.NodeSelector = "a", map[string]string{corev1.LabelHostname: "a"}
	in := CheckInput{
		Nodes: []string{"a"}, Pods: []corev1.Pod{tolerant, pinned, pooled, hosted}, ReplicaSets: []appsv1.ReplicaSet{*rs},
		NodeLabels: map[string]map[string]string{"a": {"pool": "gpu", corev1.LabelHostname: "a"}},
	}
	var reasons []string
	for _, f := range PlanCheck(in).Items {
		if f.Reason == ReasonComesBack {
			reasons = append(reasons, f.Object+": "+f.Message)
		}
	}
	assert.Check(t, is.Len(reasons, 3), "%v", reasons)
	var buf bytes.Buffer
	for _, r := range reasons {
		buf.WriteString(r + "\n")
	}
	assert.Check(t, is.Contains(buf.String(), `pod/pinned-1: its replacement comes back: its controller's template pins spec.nodeName "a"`))
	assert.Check(t, is.Contains(buf.String(), "pod/hosted-1: its replacement has nowhere else to go"))
}
