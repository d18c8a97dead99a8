package fleetdrain

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
)

// The taint patch names the same field manager as fleetdrain's node writes.
func TestDrainTaintPatchNamesTheFieldManager(t *testing.T) {
	mc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
		"metadata": map[string]any{"name": "spoke-1", "resourceVersion": "7"},
		"spec":     map[string]any{"hubAcceptsClient": true},
	}}
	client := fake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(),
		map[schema.GroupVersionResource]string{ocm.ManagedClusterResource: "ManagedClusterList"}, mc)
	assert.NilError(t, addDrainTaint(context.Background(), client, "spoke-1", cli.DryRunNone))
	var patches int
	for _, a := range client.Actions() {
		if a.GetVerb() == "patch" {
			patches++
			assert.Check(t, is.Equal(a.(k8stesting.PatchActionImpl).PatchOptions.FieldManager, FieldManager))
		}
	}
	assert.Equal(t, patches, 1)
}
