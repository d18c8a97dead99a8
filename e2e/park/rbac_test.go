//go:build e2e

package park

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/e2e/harness"
)

// TestLeastPrivilege runs every command as a ServiceAccount bound, in the
// Environment namespace only, to the role of plugins/kubectl-park/rbac.yaml,
// which grants no Secret: the workload cluster is read with the user's own
// kubeconfig for it (--cluster-kubeconfig), or not at all (status says so,
// --wait refuses), or through the opt-in Role for its one kubeconfig Secret
// that the refusal prints. Reading the cluster's admin kubeconfig or CA
// Secret without that opt-in is tried and denied. Then patch on Clusters is
// taken away and park refuses before it changes anything.
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
		r := harness.Kubectl(t, as, append(args, "-n", namespace)...)
		return r
	}
	createCluster(t, namespace, "least", "in-memory", "{class: default-worker, name: md-0, replicas: 2}")
	waitRunningWorkers(t, namespace, "least", 2)
	// The user's own access to the workload cluster, as a file.
	own := workloadKubeconfig(t, namespace, "least")

	// Neither --cluster-kubeconfig nor the opt-in: --wait refuses before the
	// patch, and names both ways in.
	before := parkWrites(t, namespace, "least")
	refused := run("park", "cluster", "least", "--wait", "--timeout", "3m")
	assert.Equal(t, refused.ExitCode, 3, refused)
	assert.Check(t, is.Contains(refused.Stderr, "--wait reads the workload cluster"), refused)
	assert.Check(t, is.Contains(refused.Stderr, "pass --cluster-kubeconfig FILE"), refused)
	assert.Check(t, is.Contains(refused.Stderr, "kubectl create role spokekit-park:least-kubeconfig -n "+namespace+" --verb get --resource secrets --resource-name least-kubeconfig"), refused)
	assert.Equal(t, parkWrites(t, namespace, "least"), before, "nothing written")
	r := run("park", "resume", "least", "--wait", "--timeout", "3m")
	assert.Equal(t, r.ExitCode, 3, r)
	// status shows the platform's view and says the cluster's was not checked.
	r = run("park", "status", "least")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "not available: not checked: no kubeconfig for the cluster"), r)

	for _, args := range [][]string{
		{"park", "cluster", "least", "--wait", "--timeout", "3m", "--cluster-kubeconfig", own},
		{"park", "list"},
		{"park", "status", "least", "--cluster-kubeconfig", own},
		{"park", "resume", "least", "--wait", "--timeout", "3m", "--cluster-kubeconfig", own},
	} {
		r := run(args...)
		assert.Equal(t, r.ExitCode, 0, "%v: %s", args, r)
		assert.Check(t, !strings.Contains(r.Stdout+r.Stderr, "no kubeconfig for the cluster"), "%v: %s", args, r)
	}

	// The role reads no Secret: the cluster's admin kubeconfig and CA keys
	// stay out of reach without the opt-in.
	denied := func(why string, args ...string) {
		t.Helper()
		r := harness.Kubectl(t, as, args...)
		assert.Check(t, r.ExitCode != 0 && strings.Contains(r.Stderr, "forbidden"), "%s: %s", why, r)
		t.Logf("%s: denied: %s", why, strings.TrimSpace(r.Stderr))
	}
	denied("read the admin kubeconfig", "get", "secret", "least-kubeconfig", "-n", namespace)
	denied("read the CA", "get", "secret", "least-ca", "-n", namespace)
	denied("list the Environment's Secrets", "get", "secrets", "-n", namespace)

	// The opt-in, as the refusal printed it: that one Secret, and status
	// reads the cluster with it.
	admin := platform.For(t.TempDir())
	assert.NilError(t, admin.RunGrants(ctx(t), refused.Stderr, as))
	r = run("park", "status", "least")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "kubeconfig from secret "+namespace+"/least-kubeconfig"), r)
	assert.Check(t, !strings.Contains(r.Stdout, "not checked"), r)
	denied("read the CA with the opt-in", "get", "secret", "least-ca", "-n", namespace)

	fewer, err := harness.WithoutVerb(roles, "verbs: [get, list, watch, patch]", "patch")
	assert.NilError(t, err)
	assert.NilError(t, platform.ApplyYAML(ctx(t), fewer))
	t.Cleanup(func() { assert.Check(t, platform.ApplyYAML(ctx(t), roles)) })
	assert.NilError(t, as.WaitCanI(ctx(t), false, canPatch...))
	before = parkWrites(t, namespace, "least")
	r = run("park", "cluster", "least")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "may not patch clusters.cluster.x-k8s.io least in namespace "+namespace+"; nothing was changed"), r)
	assert.Equal(t, parkWrites(t, namespace, "least"), before, "nothing written")
}
