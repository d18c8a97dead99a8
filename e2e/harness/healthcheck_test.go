package harness

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Every timeout of the health checks in upstream's in-memory ClusterClass
// (the control plane's and the worker class's, node and machine
// conditions) gets healthCheckPatience; a class without checks is an error,
// not a silent pass.
func TestInMemoryClassHealthChecksWaitLonger(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	files, err := ModuleFiles(ctx, CAPITestModule, []string{"infrastructure/docker/templates/clusterclass-in-memory.yaml"})
	assert.NilError(t, err)
	objs, err := readYAMLObjects(files[0])
	assert.NilError(t, err)
	var class *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ClusterClass" {
			class = o
		}
	}
	assert.Assert(t, class != nil)
	assert.NilError(t, slowHealthChecks(class))

	var timeouts []any
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(path+"."+k, e)
			}
		case []any:
			for _, e := range v {
				walk(path, e)
			}
		default:
			if strings.Contains(path, ".healthCheck.") && strings.HasSuffix(path, ".timeoutSeconds") {
				timeouts = append(timeouts, v)
			}
		}
	}
	walk("", class.Object)
	assert.Equal(t, len(timeouts), 8, "upstream's class: 4 conditions for the control plane, 4 for the worker class")
	for _, v := range timeouts {
		assert.Equal(t, v, healthCheckPatience)
	}

	bare := &unstructured.Unstructured{Object: map[string]any{"kind": "ClusterClass", "spec": map[string]any{}}}
	assert.ErrorContains(t, slowHealthChecks(bare), "no health checks")
}
