//go:build e2e

package foundation

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/spokekit/spokekit/e2e/harness"
)

// Every test here leans on the test clusters' controller manager and
// scheduler. A busy machine that stalls the API server past their lease
// renewal must not take them down for the rest of the run: after the stall,
// a Deployment still gets its ReplicaSet (controller manager), its pod a
// node (scheduler), and the pod turns Ready (kwok).
func TestControlPlaneOutlivesAStalledAPIServer(t *testing.T) {
	ctx := harness.Context(t, 8*time.Minute)
	kube := spoke.Kube
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "stall-node", Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}}}
	_, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	assert.NilError(t, err)
	t.Cleanup(func() { _ = kube.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })

	// Past kube-controller-manager's and kube-scheduler's renew deadline (10 s)
	// and lease (15 s).
	assert.NilError(t, spoke.StallAPIServer(ctx, 20*time.Second))

	labels, replicas := map[string]string{"app": "after-stall"}, int32(1)
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "after-stall", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "app", Image: "app"}},
				},
			},
		},
	}
	// The first request after the stall may still meet a server catching up.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.AppsV1().Deployments("default").Create(ctx, deploy, metav1.CreateOptions{})
		return err == nil, nil
	})
	assert.NilError(t, err, "creating the Deployment after the stall")
	t.Cleanup(func() {
		_ = kube.AppsV1().Deployments("default").Delete(context.Background(), deploy.Name, metav1.DeleteOptions{})
	})
	// Generous: after the stall the ReplicaSet controller's cache may lag
	// what it wrote ("read version ... is not as new as written version"),
	// and each failed sync backs off exponentially; in one CI run on a
	// loaded machine 2 minutes were not enough. A controller manager that is
	// gone never makes the pod Ready however long the wait.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 6*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := kube.AppsV1().Deployments("default").Get(ctx, deploy.Name, metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == 1, nil
	})
	assert.NilError(t, err, "the Deployment's pod did not turn Ready after the API server's stall: is the controller manager or the scheduler gone? (their logs are in the cluster's logs directory)")
}
