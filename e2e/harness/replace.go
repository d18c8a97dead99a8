package harness

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
)

// Replacement is what ReplaceFirstDrained saw and did: the node found
// drained first, and the error of registering its replacement.
type Replacement struct {
	Drained string
	Err     error
}

// ReplaceFirstDrained plays the platform that replaces a drained Machine:
// once one of nodes has no pod of ns left that is not terminating, it
// registers a kwok node named replacement with labels (kwok plays it), and
// sends which node was drained first. It watches until ctx ends.
func (c *Cluster) ReplaceFirstDrained(ctx context.Context, ns string, nodes []string, replacement string, labels map[string]string) (<-chan Replacement, error) {
	out := make(chan Replacement, 1)
	lw := cache.NewListWatchFromClient(c.Kube.CoreV1().RESTClient(), "pods", ns, fields.Everything())
	var (
		store        cache.Store
		mu           sync.Mutex
		synced, done bool
	)
	// check runs on every pod event once the first list is complete (a
	// partial list would show a node empty).
	check := func() {
		mu.Lock()
		defer mu.Unlock()
		if !synced || done {
			return
		}
		left := map[string]int{}
		for _, o := range store.List() {
			if p := o.(*corev1.Pod); p.DeletionTimestamp == nil {
				left[p.Spec.NodeName]++
			}
		}
		for _, n := range nodes {
			if left[n] > 0 {
				continue
			}
			done = true
			_, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
				Name: replacement, Labels: labels, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			}}, metav1.CreateOptions{})
			if err != nil {
				err = fmt.Errorf("registering the replacement node %s: %w", replacement, err)
			}
			out <- Replacement{Drained: n, Err: err}
			return
		}
	}
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw, ObjectType: &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { check() },
			UpdateFunc: func(any, any) { check() },
			DeleteFunc: func(any) { check() },
		},
	})
	go ctrl.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), ctrl.HasSynced) {
		return nil, fmt.Errorf("the watch of the pods of %s did not sync", ns)
	}
	mu.Lock()
	synced = true
	mu.Unlock()
	check()
	return out, nil
}

// WaitUnreachable waits until the node lifecycle controller marks node
// Ready Unknown, as it does a node whose kubelet stopped answering (or, for
// a node kwok does not play, never answered).
func (c *Cluster) WaitUnreachable(ctx context.Context, node string) error {
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionUnknown, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for node %s to be Ready Unknown: %w", node, err)
	}
	return nil
}
