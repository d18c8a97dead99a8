//go:build e2e

package park

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/e2e/harness"
)

// TestLeastPrivilege runs every command as a ServiceAccount bound, in the
// Environment namespace only, to the role of plugins/kubectl-park/rbac.yaml;
// then takes patch on Clusters away and shows park refuses before it
// changes anything.
func TestLeastPrivilege(t *testing.T) {
	roles, err := harness.PluginRBAC("park")
	assert.NilError(t, err)
	assert.NilError(t, platform.ApplyYAML(ctx(t), roles+`
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: spokekit-park-operator, namespace: `+namespace+`}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: spokekit-park}
subjects: [{kind: ServiceAccount, name: operator, namespace: spokekit-ops}]
`))
	as, err := platform.ServiceAccountCommand(ctx(t), t.TempDir(), "spokekit-ops", "operator")
	assert.NilError(t, err)
	canPatch := []string{"patch", "clusters.cluster.x-k8s.io", "-n", namespace}
	assert.NilError(t, as.WaitCanI(ctx(t), true, canPatch...))
	run := func(args ...string) harness.Result {
		t.Helper()
		r, err := as.Kubectl(ctx(t), append(args, "-n", namespace)...)
		assert.NilError(t, err)
		return r
	}
	createCluster(t, "least")
	waitRunning(t, "least", 6)
	for _, args := range [][]string{
		{"park", "cluster", "least", "--wait", "--timeout", "2m"},
		{"park", "list"},
		{"park", "status", "least"},
		{"park", "resume", "least", "--wait", "--timeout", "2m"},
	} {
		r := run(args...)
		assert.Equal(t, r.ExitCode, 0, "%v: %s", args, r)
	}

	fewer, err := harness.WithoutVerb(roles, "verbs: [get, list, patch]", "patch")
	assert.NilError(t, err)
	assert.NilError(t, platform.ApplyYAML(ctx(t), fewer))
	t.Cleanup(func() { assert.Check(t, platform.ApplyYAML(ctx(t), roles)) })
	assert.NilError(t, as.WaitCanI(ctx(t), false, canPatch...))
	before := getCluster(t, "least").Generation
	r := run("park", "cluster", "least")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "may not patch clusters.cluster.x-k8s.io least in namespace "+namespace+"; nothing was changed"), r)
	assert.Equal(t, getCluster(t, "least").Generation, before)
}
