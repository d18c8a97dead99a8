package harness

import (
	"testing"

	"gotest.tools/v3/assert"
)

// Two rules may share a verbs line (nodes and ManagedClusters both
// [get, list, patch]): the rule is then named by its resources too, and a
// verbs line that is not unique is refused rather than guessed.
func TestWithoutVerbTakesOneVerbOutOfOneRule(t *testing.T) {
	roles := "- apiGroups: [\"\"]\n  resources: [nodes]\n  verbs: [get, list, patch]\n" +
		"- apiGroups: [cluster.open-cluster-management.io]\n  resources: [managedclusters]\n  verbs: [get, list, patch]\n"
	out, err := WithoutVerb(roles, "resources: [managedclusters]\n  verbs: [get, list, patch]", "patch")
	assert.NilError(t, err)
	assert.Equal(t, out, "- apiGroups: [\"\"]\n  resources: [nodes]\n  verbs: [get, list, patch]\n"+
		"- apiGroups: [cluster.open-cluster-management.io]\n  resources: [managedclusters]\n  verbs: [get, list]\n")

	_, err = WithoutVerb(roles, "verbs: [get, list, patch]", "patch")
	assert.ErrorContains(t, err, "not exactly one")

	out, err = WithoutVerb("- resources: [x]\n  verbs: [get, patch]\n", "verbs: [get, patch]", "patch")
	assert.NilError(t, err)
	assert.Equal(t, out, "- resources: [x]\n  verbs: [get]\n")
}
