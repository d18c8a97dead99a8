//go:build e2e

package park

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/e2e/harness"
)

// TestLeastPrivilege runs every command as a ServiceAccount bound to the
// roles of plugins/kubectl-park/rbac.yaml as it says (spokekit-park in the
// Environment namespace only, spokekit-park-list cluster-wide), with
// admission-policy.yaml applied. spokekit-park grants no Secret: the
// workload cluster is read with the user's own kubeconfig for it
// (--cluster-kubeconfig), or not at all (status says so, --wait refuses), or
// through the opt-in Role for its one kubeconfig Secret that the refusal
// prints. Reading the cluster's admin kubeconfig or CA Secret without that
// opt-in is tried and denied, and so is each Cluster write park never makes.
// Then patch on Clusters is taken away and park refuses before it changes
// anything.
func TestLeastPrivilege(t *testing.T) {
	t.Parallel()
	roles, err := harness.PluginRBAC("park")
	assert.NilError(t, err)
	policy, err := harness.PluginManifest("park", "admission-policy.yaml")
	assert.NilError(t, err)
	assert.NilError(t, platform.ApplyYAML(ctx(t), policy+"\n---\n"+roles+`
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: spokekit-park-operator, namespace: `+namespace+`}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: spokekit-park}
subjects: [{kind: ServiceAccount, name: operator, namespace: spokekit-ops}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: spokekit-park-list-operator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: spokekit-park-list}
subjects:
- {kind: ServiceAccount, name: operator, namespace: spokekit-ops}
- {kind: ServiceAccount, name: lister, namespace: spokekit-ops}
`))
	t.Cleanup(func() {
		err := platform.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), "spokekit-park-list-operator", metav1.DeleteOptions{})
		assert.Check(t, err)
	})
	as, err := platform.ServiceAccountCommand(ctx(t), t.TempDir(), "spokekit-ops", "operator")
	assert.NilError(t, err)
	canPatch := []string{"patch", "clusters.cluster.x-k8s.io", "-n", namespace}
	assert.NilError(t, as.WaitCanI(ctx(t), true, canPatch...))
	assert.NilError(t, as.WaitCanI(ctx(t), true, "list", "clusters.cluster.x-k8s.io", "-A"))
	run := func(args ...string) harness.Result {
		t.Helper()
		r := harness.Kubectl(t, as, append(args, "-n", namespace)...)
		return r
	}
	// A class of its own that defines a variable, so a write of the
	// Cluster's variables passes Cluster API's webhook and meets the policy.
	assert.NilError(t, platform.InstallInMemoryClass(ctx(t), namespace, "least-class", nil))
	admin := platform.For(t.TempDir())
	r := harness.Kubectl(t, admin, "patch", "clusterclass", "least-class", "-n", namespace, "--type", "merge", "-p",
		`{"spec":{"variables":[{"name":"imageRepository","required":false,"schema":{"openAPIV3Schema":{"type":"string"}}}]}}`)
	assert.Equal(t, r.ExitCode, 0, r)
	r = harness.Kubectl(t, admin, "wait", "clusterclass", "least-class", "-n", namespace, "--timeout", finishBound,
		"--for", "jsonpath={.status.variables[0].name}=imageRepository")
	assert.Equal(t, r.ExitCode, 0, r)
	createCluster(t, namespace, "least", "least-class", "{class: default-worker, name: md-0, replicas: 2}")
	waitRunningWorkers(t, namespace, "least", 2)
	// The user's own access to the workload cluster, as a file.
	own := workloadKubeconfig(t, "least")

	// Neither --cluster-kubeconfig nor the opt-in: --wait refuses before the
	// patch, and names both ways in.
	before := parkWrites(t, namespace, "least")
	refused := run("park", "cluster", "least", "--wait", "--timeout", "3m")
	assert.Equal(t, refused.ExitCode, 3, refused)
	assert.Check(t, is.Contains(refused.Stderr, "--wait reads the workload cluster"), refused)
	assert.Check(t, is.Contains(refused.Stderr, "pass --cluster-kubeconfig FILE"), refused)
	assert.Check(t, is.Contains(refused.Stderr, "kubectl create role spokekit-park:least-kubeconfig -n "+namespace+" --verb get --resource secrets --resource-name least-kubeconfig"), refused)
	assert.Equal(t, parkWrites(t, namespace, "least"), before, "nothing written")
	r = run("park", "resume", "least", "--wait", "--timeout", "3m")
	assert.Equal(t, r.ExitCode, 3, r)
	// status shows the platform's view and says the cluster's was not checked.
	r = run("park", "status", "least")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "not available: not checked: no kubeconfig for the cluster"), r)

	for _, args := range [][]string{
		{"park", "cluster", "least", "--wait", "--timeout", finishBound, "--cluster-kubeconfig", own},
		{"park", "list", "-A"},
		{"park", "status", "least", "--cluster-kubeconfig", own},
		{"park", "resume", "least", "--wait", "--timeout", finishBound, "--cluster-kubeconfig", own},
	} {
		r := run(args...)
		assert.Equal(t, r.ExitCode, 0, "%v: %s", args, r)
		assert.Check(t, !strings.Contains(r.Stdout+r.Stderr, "no kubeconfig for the cluster"), "%v: %s", args, r)
	}

	// park's patch reaches no other field of a Cluster.
	cluster := getCluster(t, "least")
	wantDenied(t, as, "spokekit-park-cluster-fields", map[string][]string{
		"topology.version":       {"--type", "merge", "-p", `{"spec":{"topology":{"version":"v1.37.1"}}}`},
		"topology.classRef":      {"--type", "merge", "-p", `{"spec":{"topology":{"classRef":{"name":"other-class"}}}}`},
		"topology.variables":     {"--type", "merge", "-p", `{"spec":{"topology":{"variables":[{"name":"imageRepository","value":"evil.example/k8s"}]}}}`},
		"paused":                 {"--type", "merge", "-p", `{"spec":{"paused":true}}`},
		"control-plane replicas": {"--type", "merge", "-p", `{"spec":{"topology":{"controlPlane":{"replicas":3}}}}`},
	})
	assert.DeepEqual(t, getCluster(t, "least").Spec, cluster.Spec)

	// spokekit-park-list lists every namespace and writes nothing.
	lister, err := platform.ServiceAccountCommand(ctx(t), t.TempDir(), "spokekit-ops", "lister")
	assert.NilError(t, err)
	assert.NilError(t, lister.WaitCanI(ctx(t), true, "list", "clusters.cluster.x-k8s.io", "-A"))
	r = harness.Kubectl(t, lister, "park", "list", "-A")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "least"), r)
	r = harness.Kubectl(t, lister, "patch", "clusters.cluster.x-k8s.io", "least", "-n", namespace, "--type", "merge", "-p", `{"spec":{"paused":true}}`)
	assert.Check(t, r.ExitCode != 0 && strings.Contains(r.Stderr, "forbidden"), r)
	before = parkWrites(t, namespace, "least")
	r = harness.Kubectl(t, lister, "park", "cluster", "least", "-n", namespace)
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "nothing was changed"), r)
	assert.Equal(t, parkWrites(t, namespace, "least"), before, "nothing written")
	assert.DeepEqual(t, getCluster(t, "least").Spec, cluster.Spec)

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

// wantDenied tries each patch of the Cluster least as the user and sees the
// admission policy deny it, as the user would read it from kubectl.
func wantDenied(t *testing.T, as harness.Command, policy string, patches map[string][]string) {
	t.Helper()
	patch := func(args []string) []string {
		return append([]string{"patch", "clusters.cluster.x-k8s.io", "least", "-n", namespace}, args...)
	}
	for what, args := range patches {
		assert.NilError(t, as.WaitDenied(ctx(t), policy, patch(args)...))
		r := harness.Kubectl(t, as, patch(args)...)
		assert.Check(t, r.ExitCode != 0 && strings.Contains(r.Stderr, "denied request") && strings.Contains(r.Stderr, policy), "%s: %s", what, r)
		t.Logf("%s: denied: %s", what, strings.TrimSpace(r.Stderr))
	}
}
