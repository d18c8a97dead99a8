package park

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/exitcode"
)

func TestParkRefusesPoolsAutoscaledByTheirClass(t *testing.T) {
	class := &capi.ClusterClass{}
	class.Name = "kubevirt-kubeadm"
	var autoscaled capi.WorkerClass
	autoscaled.Class = "default-worker"
	autoscaled.Metadata.Annotations = map[string]string{capi.AutoscalerMinSizeAnnotation: "1", capi.AutoscalerMaxSizeAnnotation: "5"}
	class.Spec.Workers.MachineDeployments = []capi.WorkerClass{autoscaled, {Class: "pool"}}

	err := refuseClassAutoscaled(threePools(), class)
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	assert.ErrorContains(t, err, "ClusterClass kubevirt-kubeadm gives pool(s) md-0 (class default-worker), md-1 (class default-worker) the cluster autoscaler's min/max annotations")

	// v1beta1 keeps the annotations under template.metadata.
	v1beta1 := capi.WorkerClass{Class: "default-worker"}
	v1beta1.Template.Metadata.Annotations = autoscaled.Metadata.Annotations
	class.Spec.Workers.MachineDeployments = []capi.WorkerClass{v1beta1}
	assert.ErrorContains(t, refuseClassAutoscaled(threePools(), class), "md-0")

	// Without annotations on the class, or without the class, park goes on.
	class.Spec.Workers.MachineDeployments = []capi.WorkerClass{{Class: "default-worker"}}
	assert.NilError(t, refuseClassAutoscaled(threePools(), class))
	assert.NilError(t, refuseClassAutoscaled(threePools(), nil))
}

// A ClusterClass park may not read, or that is gone, is a refusal: the
// check of its autoscaler annotations is never skipped.
func TestParkRefusesWhenTheClassCannotBeRead(t *testing.T) {
	p, dyn := fakePlatform(t, threePools(), nil)
	dyn.PrependReactor("get", capi.ClusterClassResource, func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: capi.Group, Resource: capi.ClusterClassResource}, "kubevirt-kubeadm", errors.New("RBAC"))
	})
	_, err := p.clusterClass(context.Background(), threePools())
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	assert.ErrorContains(t, err, "may not get clusterclasses.cluster.x-k8s.io kubevirt-kubeadm in namespace dynamo-prod")
	assert.ErrorContains(t, err, "kubectl create rolebinding spokekit-park -n dynamo-prod --clusterrole spokekit-park")

	p, _ = fakePlatform(t, threePools(), nil)
	_, err = p.clusterClass(context.Background(), threePools())
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	assert.ErrorContains(t, err, "ClusterClass dynamo-prod/kubevirt-kubeadm of cluster app does not exist")
}

// --wait reads the workload cluster: without a way in (no
// --cluster-kubeconfig, and the NAME-kubeconfig secret not readable) it
// refuses before anything changes, naming both ways in.
func TestWaitRefusesWithoutAWayIntoTheCluster(t *testing.T) {
	p, _ := fakePlatform(t, threePools(), nil)
	p.Kube.(*fake.Clientset).PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "app-kubeconfig", errors.New("RBAC"))
	})
	err := p.RefuseNoClusterAccess(context.Background(), "app", "")
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	assert.ErrorContains(t, err, "--wait reads the workload cluster, but no kubeconfig for the cluster: the current user may not read secret dynamo-prod/app-kubeconfig")
	assert.ErrorContains(t, err, "pass --cluster-kubeconfig FILE")
	assert.ErrorContains(t, err, "kubectl create role spokekit-park:app-kubeconfig -n dynamo-prod --verb get --resource secrets --resource-name app-kubeconfig")

	// A Secret Cluster API has not written yet (the control plane is not up)
	// is no lack of access: the wait goes on and its node phase reports it.
	q, _ := fakePlatform(t, threePools(), nil)
	assert.NilError(t, q.RefuseNoClusterAccess(context.Background(), "app", ""))

	err = p.RefuseNoClusterAccess(context.Background(), "app", filepath.Join(t.TempDir(), "missing"))
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	assert.ErrorContains(t, err, "loading --cluster-kubeconfig")
}
