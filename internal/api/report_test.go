package api

import (
	"testing"

	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ObjectName writes names as kubectl get -o name does, which kubectl reads back.
func TestObjectNameIsKubectls(t *testing.T) {
	assert.Equal(t, ObjectName(NodeKind, "worker-1"), "node/worker-1")
	assert.Equal(t, ObjectName(schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Cluster"}, "c1"), "cluster.cluster.x-k8s.io/c1")
	assert.Equal(t, ObjectName(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web"), "deployment.apps/web")
}
