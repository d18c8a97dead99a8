package fleetdrain

import (
	"bytes"
	"errors"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
)

// rule builds a MachineDrainRule of namespace "fleet" that applies to
// every Machine and every pod until selectors are added.
func rule(name string, behavior capi.DrainBehavior, order *int32, pods ...capi.MachineDrainRulePodSelect) capi.MachineDrainRule {
	r := capi.MachineDrainRule{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name}}
	r.Spec.Drain = capi.MachineDrainRuleDrain{Behavior: behavior, Order: order}
	r.Spec.Pods = pods
	return r
}

func matchLabels(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func order(n int32) *int32 { return &n }

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// The cases follow the Machine controller's drain filters (Cluster API
// v1.14, core/reconcilers/machine/drain): the label before the rules, the
// first rule by name, both selectors of an entry, WaitCompleted at order 0.
func TestDecidePodDrain(t *testing.T) {
	monitoring := namespace("monitoring", map[string]string{"kubernetes.io/metadata.name": "monitoring"})
	prometheus := pod("monitoring", "prometheus-0", "StatefulSet", map[string]string{"app": "prometheus"})
	labelled := func(v string) corev1.Pod {
		return pod("monitoring", "prometheus-0", "StatefulSet", map[string]string{"app": "prometheus", capi.PodDrainLabel: v})
	}
	inMonitoring := capi.MachineDrainRulePodSelect{Selector: matchLabels("app", "prometheus"), NamespaceSelector: matchLabels("kubernetes.io/metadata.name", "monitoring")}
	elsewhere := capi.MachineDrainRulePodSelect{Selector: matchLabels("app", "prometheus"), NamespaceSelector: matchLabels("kubernetes.io/metadata.name", "other")}
	otherApp := capi.MachineDrainRulePodSelect{Selector: matchLabels("app", "logging"), NamespaceSelector: matchLabels("kubernetes.io/metadata.name", "monitoring")}
	tests := []struct {
		name  string
		pod   corev1.Pod
		rules []capi.MachineDrainRule
		want  PodDrain
		warns bool
	}{
		{name: "no rule: drain at order 0", pod: prometheus, want: PodDrain{Behavior: capi.DrainBehaviorDrain}},
		{name: "label skip", pod: labelled("skip"), want: PodDrain{Behavior: capi.DrainBehaviorSkip, DecidedBy: "label cluster.x-k8s.io/drain=skip"}},
		{name: "label Skip, any case", pod: labelled("Skip"), want: PodDrain{Behavior: capi.DrainBehaviorSkip, DecidedBy: "label cluster.x-k8s.io/drain=Skip"}},
		{name: "label wait-completed", pod: labelled("wait-completed"), want: PodDrain{Behavior: capi.DrainBehaviorWaitCompleted, DecidedBy: "label cluster.x-k8s.io/drain=wait-completed"}},
		{name: "label WaitCompleted", pod: labelled("WaitCompleted"), want: PodDrain{Behavior: capi.DrainBehaviorWaitCompleted, DecidedBy: "label cluster.x-k8s.io/drain=WaitCompleted"}},
		{
			name:  "the label wins over a rule",
			pod:   labelled("skip"),
			rules: []capi.MachineDrainRule{rule("a-drain-late", capi.DrainBehaviorDrain, order(5))},
			want:  PodDrain{Behavior: capi.DrainBehaviorSkip, DecidedBy: "label cluster.x-k8s.io/drain=skip"},
		},
		{
			name:  "an unknown label value is ignored: the rules decide",
			pod:   labelled("later"),
			rules: []capi.MachineDrainRule{rule("a-late", capi.DrainBehaviorDrain, order(5))},
			want:  PodDrain{Behavior: capi.DrainBehaviorDrain, Order: 5, DecidedBy: "MachineDrainRule a-late"},
			warns: true,
		},
		{
			name:  "a rule with no pod selector applies to every pod",
			pod:   prometheus,
			rules: []capi.MachineDrainRule{rule("all-skip", capi.DrainBehaviorSkip, nil)},
			want:  PodDrain{Behavior: capi.DrainBehaviorSkip, DecidedBy: "MachineDrainRule all-skip"},
		},
		{
			name:  "drain with an order",
			pod:   prometheus,
			rules: []capi.MachineDrainRule{rule("monitoring-last", capi.DrainBehaviorDrain, order(100), inMonitoring)},
			want:  PodDrain{Behavior: capi.DrainBehaviorDrain, Order: 100, DecidedBy: "MachineDrainRule monitoring-last"},
		},
		{
			name:  "a negative order",
			pod:   prometheus,
			rules: []capi.MachineDrainRule{rule("monitoring-first", capi.DrainBehaviorDrain, order(-10), inMonitoring)},
			want:  PodDrain{Behavior: capi.DrainBehaviorDrain, Order: -10, DecidedBy: "MachineDrainRule monitoring-first"},
		},
		{
			name:  "wait-completed from a rule",
			pod:   prometheus,
			rules: []capi.MachineDrainRule{rule("monitoring-wait", capi.DrainBehaviorWaitCompleted, nil, inMonitoring)},
			want:  PodDrain{Behavior: capi.DrainBehaviorWaitCompleted, DecidedBy: "MachineDrainRule monitoring-wait"},
		},
		{
			name: "the first matching rule by name wins",
			pod:  prometheus,
			// RulesForMachine sorts them; DecidePodDrain takes them in order.
			rules: []capi.MachineDrainRule{rule("a-skip", capi.DrainBehaviorSkip, nil, inMonitoring), rule("b-drain", capi.DrainBehaviorDrain, order(3), inMonitoring)},
			want:  PodDrain{Behavior: capi.DrainBehaviorSkip, DecidedBy: "MachineDrainRule a-skip"},
		},
		{
			name:  "a rule whose selectors do not match is passed over",
			pod:   prometheus,
			rules: []capi.MachineDrainRule{rule("a-other-ns", capi.DrainBehaviorSkip, nil, elsewhere), rule("b-other-app", capi.DrainBehaviorSkip, nil, otherApp), rule("c-drain", capi.DrainBehaviorDrain, order(7), inMonitoring)},
			want:  PodDrain{Behavior: capi.DrainBehaviorDrain, Order: 7, DecidedBy: "MachineDrainRule c-drain"},
		},
		{
			name:  "one entry of several matching is enough",
			pod:   prometheus,
			rules: []capi.MachineDrainRule{rule("either", capi.DrainBehaviorSkip, nil, elsewhere, inMonitoring)},
			want:  PodDrain{Behavior: capi.DrainBehaviorSkip, DecidedBy: "MachineDrainRule either"},
		},
		{
			name:  "an empty selector matches everything",
			pod:   prometheus,
			rules: []capi.MachineDrainRule{rule("empty", capi.DrainBehaviorSkip, nil, capi.MachineDrainRulePodSelect{Selector: &metav1.LabelSelector{}})},
			want:  PodDrain{Behavior: capi.DrainBehaviorSkip, DecidedBy: "MachineDrainRule empty"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecidePodDrain(&tc.pod, monitoring, tc.rules)
			assert.NilError(t, err)
			assert.Equal(t, got.Warning != "", tc.warns, got.Warning)
			got.Warning = ""
			assert.DeepEqual(t, got, tc.want)
		})
	}
}

func TestDecidePodDrainStops(t *testing.T) {
	p := pod("shop", "web-1", "ReplicaSet", nil)
	_, err := DecidePodDrain(&p, nil, []capi.MachineDrainRule{rule("any", capi.DrainBehaviorSkip, nil)})
	assert.ErrorContains(t, err, "pod shop/web-1: its namespace is not found")
	_, err = DecidePodDrain(&p, namespace("shop", nil), []capi.MachineDrainRule{rule("odd", "Evict", nil)})
	assert.ErrorContains(t, err, `MachineDrainRule fleet/odd has an unknown spec.drain.behavior "Evict"`)
}

func TestRulesForMachine(t *testing.T) {
	machine := &capi.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "md-0-abc", Labels: map[string]string{"os": "linux"}}}
	cluster := &capi.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "app", Labels: map[string]string{"stage": "production"}}}
	withMachines := func(r capi.MachineDrainRule, m ...capi.MachineDrainRuleMachineSelect) capi.MachineDrainRule {
		r.Spec.Machines = m
		return r
	}
	otherNamespace := rule("z-other", capi.DrainBehaviorSkip, nil)
	otherNamespace.Namespace = "elsewhere"
	rules := []capi.MachineDrainRule{
		rule("c-all", capi.DrainBehaviorDrain, nil),
		withMachines(rule("b-linux-production", capi.DrainBehaviorSkip, nil), capi.MachineDrainRuleMachineSelect{Selector: matchLabels("os", "linux"), ClusterSelector: matchLabels("stage", "production")}),
		withMachines(rule("a-linux-staging", capi.DrainBehaviorSkip, nil), capi.MachineDrainRuleMachineSelect{Selector: matchLabels("os", "linux"), ClusterSelector: matchLabels("stage", "staging")}),
		withMachines(rule("d-windows-or-production", capi.DrainBehaviorSkip, nil),
			capi.MachineDrainRuleMachineSelect{Selector: matchLabels("os", "windows")},
			capi.MachineDrainRuleMachineSelect{ClusterSelector: matchLabels("stage", "production")}),
		otherNamespace,
	}
	got, err := RulesForMachine(rules, machine, cluster)
	assert.NilError(t, err)
	var names []string
	for _, r := range got {
		names = append(names, r.Name)
	}
	assert.DeepEqual(t, names, []string{"b-linux-production", "c-all", "d-windows-or-production"})

	bad := rule("bad", capi.DrainBehaviorSkip, nil, capi.MachineDrainRulePodSelect{Selector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}},
	}})
	_, err = RulesForMachine(append(rules, bad), machine, cluster)
	assert.ErrorContains(t, err, "MachineDrainRule fleet/bad")
}

func TestApplyDrainRules(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", Annotations: map[string]string{capi.MachineAnnotation: "md-0-abc"}}}
	web := pod("shop", "web-1", "ReplicaSet", map[string]string{"app": "web"})
	db := pod("shop", "db-0", "StatefulSet", map[string]string{"app": "db"})
	cache := pod("shop", "cache-0", "StatefulSet", map[string]string{"app": "cache", capi.PodDrainLabel: "skip"})
	job := pod("batch", "report-x", "Job", map[string]string{"app": "report"})
	lonely := pod("shop", "lonely", "", map[string]string{capi.PodDrainLabel: "wait-completed"})
	stray := pod("shop", "stray", "", nil)
	agent := pod("kube-system", "agent-x", "DaemonSet", nil)
	found := NodePods{
		Node:     node,
		All:      []corev1.Pod{agent, job, cache, db, lonely, stray, web},
		Evict:    []corev1.Pod{job, cache, db, web},
		Refusals: []error{errors.New("cannot delete Pods that declare no controller (use --force to override): shop/lonely, shop/stray")},
		Warnings: "ignoring DaemonSet-managed Pods: kube-system/agent-x",
	}
	rules := NodeRules{
		Machine: "fleet/md-0-abc",
		Source:  "2 MachineDrainRule(s) of namespace fleet apply (read from --platform-kubeconfig mgmt.kubeconfig)",
		Rules: []capi.MachineDrainRule{
			rule("batch-wait", capi.DrainBehaviorWaitCompleted, nil, capi.MachineDrainRulePodSelect{NamespaceSelector: matchLabels("team", "batch")}),
			rule("db-last", capi.DrainBehaviorDrain, order(10), capi.MachineDrainRulePodSelect{Selector: matchLabels("app", "db")}),
		},
		Namespaces: map[string]*corev1.Namespace{"shop": namespace("shop", nil), "batch": namespace("batch", map[string]string{"team": "batch"})},
	}
	got, err := ApplyDrainRules(found, rules)
	assert.NilError(t, err)
	assert.DeepEqual(t, podNames(got.Evict), []string{"shop/db-0", "shop/web-1"})
	assert.DeepEqual(t, podNames(got.Wait), []string{"batch/report-x", "shop/lonely"})
	assert.Equal(t, len(got.Refusals), 1)
	assert.Equal(t, got.Refusals[0].Error(), "cannot delete Pods that declare no controller (use --force to override): shop/stray", "a pod the rules keep is never removed, so it refuses nothing")

	batches := drainBatches(got)
	assert.Equal(t, len(batches), 2)
	assert.Equal(t, batches[0].Order, int32(0))
	assert.DeepEqual(t, podNames(deref(batches[0].Evict)), []string{"shop/web-1"})
	assert.DeepEqual(t, podNames(deref(batches[0].Wait)), []string{"batch/report-x", "shop/lonely"})
	assert.Equal(t, batches[1].Order, int32(10))
	assert.DeepEqual(t, podNames(deref(batches[1].Evict)), []string{"shop/db-0"})

	r := PlanNode(got, nil)
	assert.Check(t, is.Len(r.WaitCompleted, 2))
	report := DrainReport{ReportMeta: api.NewReportMeta("DrainReport", "nodes"), Items: []NodeReport{r}}
	var buf bytes.Buffer
	assert.NilError(t, cli.WriteTable(&buf, report.planTable(), true))
	golden.Assert(t, buf.String(), "plan-node-rules.golden")
}

func TestDrainBatchesWithoutRules(t *testing.T) {
	found := NodePods{Evict: []corev1.Pod{pod("a", "x", "ReplicaSet", nil), pod("b", "y", "ReplicaSet", nil)}}
	batches := drainBatches(found)
	assert.Equal(t, len(batches), 1)
	assert.Equal(t, len(batches[0].Evict), 2)
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, namespacedName(p.Namespace, p.Name))
	}
	return out
}

func deref(pods []*corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		out = append(out, *p)
	}
	return out
}
