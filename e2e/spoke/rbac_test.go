//go:build e2e

package spoke

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/e2e/harness"
)

// bindings bind the spoke plugin's roles to the ServiceAccount spokekit-ops/operator:
// the cluster-wide one everywhere, the release one in the release namespace only.
const spokeBindings = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: spokekit-spoke-operator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: spokekit-spoke}
subjects: [{kind: ServiceAccount, name: operator, namespace: spokekit-ops}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: spokekit-spoke-operator, namespace: mural-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: spokekit-spoke-release}
subjects: [{kind: ServiceAccount, name: operator, namespace: spokekit-ops}]
`

// TestLeastPrivilege runs every command as a ServiceAccount bound to only
// the roles of plugins/kubectl-spoke/rbac.yaml; then takes one verb away and
// shows the writing command refuses before it changes anything.
func TestLeastPrivilege(t *testing.T) {
	roles, err := harness.PluginRBAC("spoke")
	assert.NilError(t, err)
	assert.NilError(t, hub.ApplyYAML(ctx(t), roles+"\n---\n"+spokeBindings))
	as, err := hub.ServiceAccountCommand(ctx(t), t.TempDir(), "spokekit-ops", "operator")
	assert.NilError(t, err)
	canPatch := []string{"patch", "spokes.fleetconfig.open-cluster-management.io", "-n", releaseNamespace}
	assert.NilError(t, as.WaitCanI(ctx(t), true, canPatch...))
	run := func(args ...string) harness.Result {
		t.Helper()
		r, err := as.Kubectl(ctx(t), append([]string{"spoke", "-n", releaseNamespace}, args...)...)
		assert.NilError(t, err)
		return r
	}
	values := writeFile(t, "values.yaml", valuesFile)
	rotated := writeKubeconfig(t, signedCert(t, spoke1, "rotated-rbac", time.Now().Add(2*365*24*time.Hour)))
	for _, args := range [][]string{
		{"add", "least", "--spoke-kubeconfig", spoke1.Kubeconfig, "--values", values, "--apply", "--wait", "--timeout", "2m"},
		{"list"},
		{"get", "least", "-o", "wide"},
		{"status", "least"},
		{"set", "least", "logVerbosity=4"},
		{"rotate-kubeconfig", "least", "--spoke-kubeconfig", rotated},
		{"rotate-kubeconfig", "least", "--spoke-kubeconfig", rotated, "--secret", "least-kubeconfig-2027"},
		{"remove", "least", "--values", values, "--wait", "--timeout", "2m"},
		{"add", "least-force", "--spoke-kubeconfig", spoke1.Kubeconfig, "--apply"},
		{"force-remove", "least-force", "--yes", "--even-if-reachable", "--timeout", "2m"},
	} {
		r := run(args...)
		assert.Equal(t, r.ExitCode, 0, "%v: %s", args, r)
	}
	assert.Equal(t, readFile(t, values), valuesFile)

	// Without create on Spokes, add --apply refuses before it writes the secret.
	fewer, err := harness.WithoutVerb(roles, "verbs: [get, list, watch, create, patch, delete]", "create")
	assert.NilError(t, err)
	assert.NilError(t, hub.ApplyYAML(ctx(t), fewer))
	t.Cleanup(func() { assert.Check(t, hub.ApplyYAML(ctx(t), roles)) })
	canCreate := []string{"create", "spokes.fleetconfig.open-cluster-management.io", "-n", releaseNamespace}
	assert.NilError(t, as.WaitCanI(ctx(t), false, canCreate...))
	r := run("add", "least-2", "--spoke-kubeconfig", spoke1.Kubeconfig, "--values", values, "--apply")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "may not create spokes.fleetconfig.open-cluster-management.io in namespace mural-system; nothing was changed"), r)
	assert.Check(t, is.Contains(r.Stderr, "spokekit-spoke-release"), r)
	assert.Check(t, !secretExists(t, "least-2"))
	assert.Equal(t, readFile(t, values), valuesFile)
	assert.Check(t, spokeObject(t, "least-2") == nil)
}
