//go:build e2e

package spoke

import (
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
)

// spokeConditionMessage is the message of a Spoke's condition.
func spokeConditionMessage(u *unstructured.Unstructured, t string) string {
	return spokeConditionField(u, t, "message")
}

// Upstream joins a spoke only to the Hub its hubRef names, once that Hub is
// initialized: a Spoke naming another Hub never joins, so a plugin that
// writes a wrong hubRef cannot pass for one that writes the right one.
func TestHubRefNamesTheHubThatJoins(t *testing.T) {
	hubs := hub.Dynamic.Resource(fleetconfig.HubResource).Namespace(releaseNamespace)
	cold := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": fleetconfig.HubResource.GroupVersion().String(), "kind": "Hub",
		"metadata": map[string]any{"name": "cold"},
		"spec":     map[string]any{"kubeconfig": map[string]any{"inCluster": true}, "clusterManager": map[string]any{}},
	}}
	_, err := hubs.Create(ctx(t), cold, metav1.CreateOptions{})
	assert.NilError(t, err)
	t.Cleanup(func() { assert.Check(t, hubs.Delete(ctx(t), "cold", metav1.DeleteOptions{})) })

	for _, tc := range []struct{ spoke, hubRef, message string }{
		{"hubref-missing", "no-such-hub", "hub not found"},
		{"hubref-cold", "cold", "hub does not have initialized condition"},
	} {
		t.Run(tc.hubRef, func(t *testing.T) {
			createSpoke(t, tc.spoke, spoke1, func(spec map[string]any) {
				spec["hubRef"] = map[string]any{"name": tc.hubRef, "namespace": releaseNamespace}
			})
			waitSpoke(t, tc.spoke, "the join refused: "+tc.message, func(u *unstructured.Unstructured) bool {
				return u != nil && spokeConditionMessage(u, fleetconfig.SpokeConditionJoined) == tc.message
			})
			// The join is tried at every reconcile: one more, after which
			// still nothing joined.
			assert.NilError(t, standin.WaitReconcile(ctx(t), tc.spoke))
			u := spokeObject(t, tc.spoke)
			phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
			assert.Check(t, phase == "Unhealthy", "phase %q", phase)
			assert.Check(t, spokeCondition(u, fleetconfig.SpokeConditionJoined) == "False")
			assert.Check(t, managedCluster(t, tc.spoke) == nil, "no ManagedCluster: the klusterlet never started")

			spokes := hub.Dynamic.Resource(fleetconfig.SpokeResource).Namespace(releaseNamespace)
			assert.NilError(t, spokes.Delete(ctx(t), tc.spoke, metav1.DeleteOptions{}))
			waitSpoke(t, tc.spoke, "gone", func(u *unstructured.Unstructured) bool { return u == nil })
			assert.NilError(t, hub.Kube.CoreV1().Secrets(releaseNamespace).Delete(ctx(t), tc.spoke+"-kubeconfig", metav1.DeleteOptions{}))
		})
	}
}
