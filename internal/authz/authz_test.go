package authz

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		a    Permission
		want string
	}{
		{Permission{Verb: "patch", Resource: "nodes"}, "patch nodes"},
		{Permission{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "web"}, "create pods/eviction in namespace web"},
		{Permission{Verb: "delete", Group: "fleetconfig.open-cluster-management.io", Resource: "spokes", Namespace: "mural-system"},
			"delete spokes.fleetconfig.open-cluster-management.io in namespace mural-system"},
		{Permission{Verb: "patch", Group: "cluster.x-k8s.io", Resource: "clusters", Name: "lab", Namespace: "dynamo-prod"}, "patch clusters.cluster.x-k8s.io lab in namespace dynamo-prod"},
	} {
		assert.Equal(t, Describe(tc.a), tc.want)
	}
}

func TestUniqueSortsAndDropsRepeats(t *testing.T) {
	got := Unique([]Permission{
		{Verb: "watch", Resource: "pods"}, {Verb: "patch", Resource: "nodes"}, {Verb: "watch", Resource: "pods"},
		{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "b"},
		{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "a"},
	})
	var words []string
	for _, a := range got {
		words = append(words, Describe(a))
	}
	assert.DeepEqual(t, words, []string{"patch nodes", "watch pods", "create pods/eviction in namespace a", "create pods/eviction in namespace b"})
}
