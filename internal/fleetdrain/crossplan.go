package fleetdrain

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/spokekit/spokekit/internal/cli"
)

// planAcrossNodes adds to the nodes' plans what only all of them together
// show: the pods that would come back to a drained node (or have nowhere
// else to go), and, with --max-concurrent above 1, the budget deadlocks and
// the order that breaks them.
func (o *NodeOptions) planAcrossNodes(ctx context.Context, founds []NodePods, report *DrainReport) (BudgetOrder, error) {
	var all []*corev1.Node
	list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return o.client.CoreV1().Nodes().List(ctx, opts)
	}
	err := cli.EachInChunks(ctx, list, o.ChunkSize, metav1.ListOptions{}, func(n *corev1.Node) error {
		all = append(all, n)
		return nil
	})
	if err != nil {
		return BudgetOrder{}, fmt.Errorf("listing nodes: %w", err)
	}
	var drained []string
	for _, f := range founds {
		drained = append(drained, f.Node.Name)
	}
	templates := newTemplateReader(o.client)
	for i, found := range founds {
		item := &report.Items[i]
		for j := range found.Evict {
			pod := &found.Evict[j]
			template, warning := templates.of(ctx, pod)
			if warning != "" {
				item.Warnings = append(item.Warnings, warning)
			}
			item.Evict[j].ComesBack = ComesBack(pod, template, all, drained)
		}
	}
	order := PlanBudgetOrder(report.Items, o.drainer.Budgets.List(), o.MaxConcurrent)
	for _, d := range order.Deadlocks {
		for i := range report.Items {
			item := &report.Items[i]
			if !slices.Contains(d.Nodes, item.Metadata.Name) {
				continue
			}
			b := Blocker{Kind: BlockerDeadlock, Name: strings.Join(d.Budgets, ","), Pods: []string{}, Message: d.Message(item.Metadata.Name)}
			for _, p := range item.Evict {
				if slices.ContainsFunc(p.Budgets, func(k string) bool { return slices.Contains(d.Budgets, k) }) {
					b.Pods = append(b.Pods, namespacedName(p.Namespace, p.Name))
				}
			}
			item.Blockers = append(item.Blockers, b)
		}
	}
	return order, nil
}

// templateReader reads the pod templates of the ReplicaSets and
// StatefulSets behind pods, once each: whether they pin spec.nodeName.
type templateReader struct {
	client kubernetes.Interface
	seen   map[string]*corev1.PodSpec
}

func newTemplateReader(client kubernetes.Interface) *templateReader {
	return &templateReader{client: client, seen: map[string]*corev1.PodSpec{}}
}

// of returns the template of pod's controller (nil for another kind, or one
// gone), or, the first time, a warning when it cannot be read: the plan
// then cannot tell whether the template pins a node, and says so.
func (r *templateReader) of(ctx context.Context, pod *corev1.Pod) (*corev1.PodSpec, string) {
	c := metav1.GetControllerOf(pod)
	if c == nil || c.APIVersion != appsv1.SchemeGroupVersion.String() || c.Kind != "ReplicaSet" && c.Kind != "StatefulSet" {
		return nil, ""
	}
	key := c.Kind + "/" + namespacedName(pod.Namespace, c.Name)
	if spec, ok := r.seen[key]; ok {
		return spec, ""
	}
	var spec *corev1.PodSpec
	var err error
	switch c.Kind {
	case "ReplicaSet":
		var rs *appsv1.ReplicaSet
		if rs, err = r.client.AppsV1().ReplicaSets(pod.Namespace).Get(ctx, c.Name, metav1.GetOptions{}); err == nil {
			spec = &rs.Spec.Template.Spec
		}
	default:
		var sts *appsv1.StatefulSet
		if sts, err = r.client.AppsV1().StatefulSets(pod.Namespace).Get(ctx, c.Name, metav1.GetOptions{}); err == nil {
			spec = &sts.Spec.Template.Spec
		}
	}
	// Read once, even when it fails: one warning per controller.
	r.seen[key] = spec
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Sprintf("cannot tell whether %s pins its pods to a node: %v", key, err)
	}
	return spec, ""
}
