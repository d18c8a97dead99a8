package fleetdrain

import (
	"context"
	"errors"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// The taint patch names the same field manager as fleetdrain's node writes.
func TestDrainTaintPatchNamesTheFieldManager(t *testing.T) {
	mc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
		"metadata": map[string]any{"name": "spoke-1", "resourceVersion": "7"},
		"spec":     map[string]any{"hubAcceptsClient": true},
	}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(),
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

func managedCluster(name string, labels map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
		"metadata": map[string]any{"name": name, "resourceVersion": "7", "labels": labels},
		"spec":     map[string]any{"hubAcceptsClient": true},
	}}
}

// A spoke a Compute Pool owns is refused by `fleetdrain cluster` as by
// every `kubectl spoke` command (exit 3, naming the mark), before any
// change: the mark on its Spoke (any namespace) or on the ManagedCluster.
// A Spoke list that fails is a check not made, and refuses too.
func TestClusterRefusesWhatAComputePoolOwns(t *testing.T) {
	spoke := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fleetconfig.open-cluster-management.io/v1beta1", "kind": "Spoke",
		"metadata": map[string]any{"name": "pooled", "namespace": "fleet", "labels": map[string]any{fleetconfig.ComputePoolLabel: "gpu-a"}},
	}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(), map[schema.GroupVersionResource]string{
		ocm.ManagedClusterResource: "ManagedClusterList", fleetconfig.SpokeResource: "SpokeList",
		ocm.ManifestWorkResource: "ManifestWorkList", ocm.PlacementResource: "PlacementList",
	}, managedCluster("pooled", nil), managedCluster("labelled", map[string]any{fleetconfig.ComputePoolLabel: "gpu-b"}), managedCluster("plain", nil), spoke)
	o := &ClusterOptions{clusterTargets: clusterTargets{dynamic: client}}
	for name, pool := range map[string]string{"pooled": "gpu-a", "labelled": "gpu-b"} {
		o.Clusters = []string{"plain", name}
		_, err := o.planClusters(context.Background(), nil)
		assert.Check(t, is.Equal(exitcode.Of(err), exitcode.Refused), "%s: %v", name, err)
		assert.Check(t, is.ErrorContains(err, `Compute Pool "`+pool+`"`), name)
		assert.Check(t, is.ErrorContains(err, fleetconfig.ComputePoolLabel), name)
	}
	o.Clusters = []string{"plain"}
	_, err := o.planClusters(context.Background(), nil)
	assert.NilError(t, err)

	client.PrependReactor("list", "spokes", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, errors.New("spokes.fleetconfig.open-cluster-management.io is forbidden")
	})
	_, err = o.planClusters(context.Background(), nil)
	assert.Check(t, is.Equal(exitcode.Of(err), exitcode.Refused), "%v", err)
	assert.Check(t, is.ErrorContains(err, "cannot tell whether a Compute Pool owns cluster plain"))
	for _, a := range client.Actions() {
		assert.Check(t, a.GetVerb() != "patch", "nothing is changed")
	}
}

// A cluster whose ManifestWorks cannot be listed, the hub not serving them
// (404) or the list failing, has no plan: what the drain moves and what
// stays cannot be told, so it refuses (exit 3) before any change, and an
// unserved API never reads as a cluster without works.
func TestClusterRefusesWhatItCannotPlan(t *testing.T) {
	for name, listErr := range map[string]error{
		"not served":  apierrors.NewNotFound(schema.GroupResource{Group: ocm.ManifestWorkResource.Group, Resource: ocm.ManifestWorkResource.Resource}, ""),
		"list failed": apierrors.NewServiceUnavailable("etcd is away"),
	} {
		t.Run(name, func(t *testing.T) {
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(), map[schema.GroupVersionResource]string{
				ocm.ManagedClusterResource: "ManagedClusterList", fleetconfig.SpokeResource: "SpokeList", ocm.ManifestWorkResource: "ManifestWorkList",
			}, managedCluster("spoke-1", nil))
			client.PrependReactor("list", "manifestworks", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
				return true, nil, listErr
			})
			o := &ClusterOptions{clusterTargets: clusterTargets{dynamic: client, Clusters: []string{"spoke-1"}}}
			_, err := o.planClusters(context.Background(), nil)
			assert.Check(t, is.Equal(exitcode.Of(err), exitcode.Refused), "%v", err)
			assert.Check(t, is.ErrorContains(err, "cannot tell what draining cluster spoke-1 would move: listing its ManifestWorks: "+listErr.Error()))
		})
	}
}
