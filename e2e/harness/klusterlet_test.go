package harness

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The join renders OCM's pinned klusterlet chart for the cluster: the
// operator's namespace and the CRD before anything that needs them, the
// Klusterlet last, named for the cluster, and the bootstrap kubeconfig in
// the agent namespace as given.
func TestRenderKlusterletChart(t *testing.T) {
	objs, err := RenderKlusterletChart(t.Context(), "spoke-x", []byte("apiVersion: v1\nkind: Config\n"))
	assert.NilError(t, err)
	var kinds []string
	byKind := map[string][]*unstructured.Unstructured{}
	for _, o := range objs {
		if len(kinds) == 0 || kinds[len(kinds)-1] != o.GetKind() {
			kinds = append(kinds, o.GetKind())
		}
		byKind[o.GetKind()] = append(byKind[o.GetKind()], o)
	}
	assert.DeepEqual(t, kinds, []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Secret", "Deployment", "Klusterlet"})

	var namespaces []string
	for _, ns := range byKind["Namespace"] {
		namespaces = append(namespaces, ns.GetName())
	}
	assert.Check(t, is.DeepEqual(namespaces, []string{klusterletOperatorNamespace, AgentNamespace}))
	assert.Check(t, is.Equal(byKind["CustomResourceDefinition"][0].GetName(), "klusterlets.operator.open-cluster-management.io"))

	k := byKind["Klusterlet"][0]
	cluster, _, _ := unstructured.NestedString(k.Object, "spec", "clusterName")
	mode, _, _ := unstructured.NestedString(k.Object, "spec", "deployOption", "mode")
	assert.Check(t, is.Equal(cluster, "spoke-x"))
	assert.Check(t, is.Equal(mode, "Default"))

	secrets := map[string]*unstructured.Unstructured{}
	for _, s := range byKind["Secret"] {
		secrets[s.GetNamespace()+"/"+s.GetName()] = s
	}
	bootstrap := secrets[AgentNamespace+"/bootstrap-hub-kubeconfig"]
	assert.Assert(t, bootstrap != nil, "secrets: %v", secrets)
	data, _, _ := unstructured.NestedString(bootstrap.Object, "data", "kubeconfig")
	assert.Check(t, is.Equal(data, "YXBpVmVyc2lvbjogdjEKa2luZDogQ29uZmlnCg=="))
	assert.Check(t, secrets[klusterletOperatorNamespace+"/open-cluster-management-image-pull-credentials"] != nil, "clusteradm makes the image pull secret")
}
