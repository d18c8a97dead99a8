//go:build e2e

package spoke

import (
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/e2e/fixture"
	"github.com/spokekit/spokekit/e2e/harness"
)

// bindings bind the spoke plugin's roles to the ServiceAccount spokekit-ops/operator:
// the cluster-wide one everywhere, the release one and the opt-in Secret
// writer in the release namespace only. The per-Secret Roles and the
// per-cluster ManifestWork bindings are made as the refused commands say.
var spokeBindings = fixture.Docs(
	fixture.Binding("", "spokekit-spoke-operator", "spokekit-spoke", "spokekit-ops/operator"),
	fixture.Binding(releaseNamespace, "spokekit-spoke-operator", "spokekit-spoke-release", "spokekit-ops/operator"),
	fixture.Binding(releaseNamespace, "spokekit-spoke-secret-writer-operator", "spokekit-spoke-secret-writer", "spokekit-ops/operator"),
)

// otherSecrets are Secrets of the release namespace the plugin did not
// write for the operator: the Hub's kubeconfig, a Helm release record and
// another cluster's kubeconfig.
const otherSecrets = `
apiVersion: v1
kind: Secret
metadata: {name: least-hub-kubeconfig, namespace: mural-system}
stringData: {kubeconfig: the hub's}
---
apiVersion: v1
kind: Secret
metadata: {name: sh.helm.release.v1.least.v1, namespace: mural-system, labels: {owner: helm, name: least}}
type: helm.sh/release.v1
stringData: {release: the release record}
---
apiVersion: v1
kind: Secret
metadata: {name: least-other-kubeconfig, namespace: mural-system}
stringData: {kubeconfig: another cluster's}
`

// TestLeastPrivilege runs every command as a ServiceAccount bound to only
// the roles of plugins/kubectl-spoke/rbac.yaml (with its admission policy),
// granting the one Secret or namespace a command asks for when it refuses;
// tries each escalation the roles once allowed and sees it denied; then
// takes one verb away and shows the writing command refuses before it
// changes anything.
func TestLeastPrivilege(t *testing.T) {
	roles, err := harness.PluginRBAC("spoke")
	assert.NilError(t, err)
	policy, err := harness.PluginManifest("spoke", "admission-policy.yaml")
	assert.NilError(t, err)
	assert.NilError(t, hub.ApplyYAML(ctx(t), policy+"\n---\n"+roles+"\n---\n"+spokeBindings+"\n---\n"+otherSecrets))
	as, err := hub.ServiceAccountCommand(ctx(t), t.TempDir(), "spokekit-ops", "operator")
	assert.NilError(t, err)
	admin := hub.For(t.TempDir())
	canPatch := []string{"patch", "spokes.fleetconfig.open-cluster-management.io", "-n", releaseNamespace}
	assert.NilError(t, as.WaitCanI(ctx(t), true, canPatch...))
	run := func(args ...string) harness.Result {
		t.Helper()
		r := harness.Kubectl(t, as, append([]string{"spoke", "-n", releaseNamespace}, args...)...)
		return r
	}
	// granted runs a command that first refuses for want of a narrow grant,
	// makes the grant it prints as an administrator, and runs it again.
	var asked []string
	granted := func(args ...string) {
		t.Helper()
		r := run(args...)
		if r.ExitCode == 3 && len(harness.Grants(r.Stderr)) > 0 {
			asked = append(asked, harness.Grants(r.Stderr)[0][2])
			assert.NilError(t, admin.RunGrants(ctx(t), r.Stderr, as))
			r = run(args...)
		}
		assert.Equal(t, r.ExitCode, 0, "%v: %s", args, r)
	}
	values := writeFile(t, "values.yaml", valuesFile)
	rotated := writeKubeconfig(t, signedCert(t, spoke1, "rotated-rbac", time.Now().Add(2*365*24*time.Hour)))

	// No grant for the Secret yet: add refuses before it writes anything.
	r := run("add", "least", "--spoke-kubeconfig", spoke1.Kubeconfig, "--values", values, "--apply")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "may not read secret mural-system/least-kubeconfig"), r)
	assert.Check(t, is.Contains(r.Stderr, "kubectl create role spokekit-spoke:least-kubeconfig -n mural-system --verb get,update --resource secrets --resource-name least-kubeconfig"), r)
	assert.Check(t, !secretExists(t, "least"))
	assert.Check(t, spokeObject(t, "least") == nil)
	assert.Equal(t, readFile(t, values), valuesFile)

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
		granted(args...)
	}
	assert.Equal(t, readFile(t, values), valuesFile)
	// Each narrow grant was asked for by the command that needed it.
	assert.DeepEqual(t, asked, []string{"spokekit-spoke:least-kubeconfig", "spokekit-spoke-works", "spokekit-spoke:least-kubeconfig-2027", "spokekit-spoke:least-force-kubeconfig"})

	t.Run("escalations are denied", func(t *testing.T) {
		denied := func(why string, args ...string) {
			t.Helper()
			r := harness.Kubectl(t, as, args...)
			assert.Check(t, r.ExitCode != 0, "%s: allowed: %s", why, r)
			assert.Check(t, strings.Contains(r.Stderr, "forbidden") || strings.Contains(r.Stderr, "denied request"), "%s: %s", why, r)
			t.Logf("%s: denied: %s", why, strings.TrimSpace(r.Stderr))
		}
		token := writeFile(t, "token.yaml", `apiVersion: v1
kind: Secret
metadata:
  name: least-token
  namespace: mural-system
  annotations: {kubernetes.io/service-account.name: default}
type: kubernetes.io/service-account-token
`)
		denied("mint a token: create a service-account-token Secret", "create", "-f", token)
		r := harness.Kubectl(t, admin, "get", "secret", "least-token", "-n", releaseNamespace)
		assert.Check(t, r.ExitCode != 0, "the token Secret was created: %s", r)
		denied("read a token Secret", "get", "secret", "least-token", "-n", releaseNamespace)
		denied("ask for a token", "create", "token", "default", "-n", releaseNamespace)
		denied("list the release namespace's Secrets", "get", "secrets", "-n", releaseNamespace)
		denied("list every Secret", "get", "secrets", "-A")
		denied("read the Hub's kubeconfig Secret", "get", "secret", "least-hub-kubeconfig", "-n", releaseNamespace)
		denied("read Helm's release Secret", "get", "secret", "sh.helm.release.v1.least.v1", "-n", releaseNamespace)
		denied("read another cluster's kubeconfig Secret", "get", "secret", "least-other-kubeconfig", "-n", releaseNamespace)
		helm := writeFile(t, "helm.yaml", `apiVersion: v1
kind: Secret
metadata: {name: sh.helm.release.v1.least.v1, namespace: mural-system, labels: {owner: helm, name: least}}
type: helm.sh/release.v1
stringData: {release: rewritten}
`)
		denied("update Helm's release Secret", "replace", "-f", helm)
		denied("patch Helm's release Secret", "label", "secret", "sh.helm.release.v1.least.v1", "-n", releaseNamespace, "status=deployed", "--overwrite")
		denied("plant the next Helm release record", "create", "secret", "generic", "sh.helm.release.v1.least.v2", "-n", releaseNamespace, "--type", "helm.sh/release.v1", "--from-literal", "release=planted")
		denied("create an unlabelled Secret", "create", "secret", "generic", "least-planted", "-n", releaseNamespace, "--from-literal", "a=b")
		denied("list ManifestWorks everywhere", "get", "manifestworks.work.open-cluster-management.io", "-A")
		denied("list ManifestWorks of an unbound cluster namespace", "get", "manifestworks.work.open-cluster-management.io", "-n", "spokekit-ops")
	})

	// Without create on Spokes, add --apply refuses before it writes the secret.
	fewer, err := harness.WithoutVerb(roles, "verbs: [get, list, watch, create, patch, delete]", "create")
	assert.NilError(t, err)
	assert.NilError(t, hub.ApplyYAML(ctx(t), fewer))
	t.Cleanup(func() { assert.Check(t, hub.ApplyYAML(ctx(t), roles)) })
	canCreate := []string{"create", "spokes.fleetconfig.open-cluster-management.io", "-n", releaseNamespace}
	assert.NilError(t, as.WaitCanI(ctx(t), false, canCreate...))
	r = run("add", "least-2", "--spoke-kubeconfig", spoke1.Kubeconfig, "--values", values, "--apply")
	if r.ExitCode == 3 && len(harness.Grants(r.Stderr)) > 0 {
		assert.NilError(t, admin.RunGrants(ctx(t), r.Stderr, as))
		r = run("add", "least-2", "--spoke-kubeconfig", spoke1.Kubeconfig, "--values", values, "--apply")
	}
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "may not create spokes.fleetconfig.open-cluster-management.io in namespace mural-system; nothing was changed"), r)
	assert.Check(t, is.Contains(r.Stderr, "spokekit-spoke-release"), r)
	assert.Check(t, !secretExists(t, "least-2"))
	assert.Equal(t, readFile(t, values), valuesFile)
	assert.Check(t, spokeObject(t, "least-2") == nil)
}
