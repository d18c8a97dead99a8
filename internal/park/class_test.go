package park

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
)

func TestParkRefusesPoolsAutoscaledByTheirClass(t *testing.T) {
	class := &capi.ClusterClass{}
	class.Name = "kubevirt-kubeadm"
	var autoscaled capi.WorkerClass
	autoscaled.Class = "default-worker"
	autoscaled.Metadata.Annotations = map[string]string{capi.AutoscalerMinSizeAnnotation: "1", capi.AutoscalerMaxSizeAnnotation: "5"}
	class.Spec.Workers.MachineDeployments = []capi.WorkerClass{autoscaled, {Class: "pool"}}

	err := refuseClassAutoscaled(threePools(), class)
	assert.Equal(t, cli.ExitCode(err), cli.ExitRefused)
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
