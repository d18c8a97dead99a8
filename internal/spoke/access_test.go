package spoke

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/spoke/hubclient"
)

// TestRolesGrantWhatTheCommandsNeedAndNoMore checks rbac.yaml against the
// code: every permission a command checks before writing, and every read
// it makes, is granted by the shipped roles or the per-Secret Role the
// commands print; every grant of the roles is one of those; and no role
// reads or updates Secrets by kind.
func TestRolesGrantWhatTheCommandsNeedAndNoMore(t *testing.T) {
	roles := clitest.PluginRoles(t, "spoke")
	assert.DeepEqual(t, clitest.SecretsByKind(roles, "spokekit-spoke-secret-writer"), []string(nil))

	hub := &HubClient{hubclient.NewForClients(nil, nil, "mural-system")}
	const secret = "s1-kubeconfig"
	perSecret := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: secretVerbs, ResourceNames: []string{secret}}
	rules := []rbacv1.PolicyRule{perSecret}
	for _, r := range roles {
		rules = append(rules, r.Rules...)
	}

	write := hubclient.SecretWrite{Namespace: hub.Namespace, Name: secret}
	existing := write
	existing.Existing = &corev1.Secret{}
	needs := slices.Concat(
		(&addPlan{Secret: write, SecretAction: secretCreate, SpokeAction: spokeCreate}).access(true, hub),
		(&addPlan{Secret: existing, SecretAction: secretUpdate}).access(false, hub),
		(&rotatePlan{Secret: write, Patch: []api.PatchOp{{}}}).access(hub),
		(&rotatePlan{Secret: existing}).access(hub),
		(&removalPlan{ForceDelete: annotationSet, Deletion: deletionDelete, Wait: true}).access(hub),
		hub.spokeAccess("patch"),
		(&JoinCommandOptions{Name: "s1", Wait: true, Accept: true}).access(),
		// What the commands read without asking first (hubclient, listed.go,
		// outofband.go, wait.go), and the marks the admission policies read.
		[]authz.Permission{
			access("get", fleetconfig.SpokeResource, hub.Namespace),
			access("list", fleetconfig.SpokeResource, ""),
			access("list", fleetconfig.HubResource, ""),
			access("get", ocm.ManagedClusterResource, ""),
			access("list", ocm.PlacementResource, ""),
			access("list", ocm.ManifestWorkResource, "s1"),
			// health: the agents' leases and the add-ons, cluster-wide.
			access("list", leaseResource, ""),
			access("list", ocm.ManagedClusterAddOnResource, ""),
			hub.secretAccess("get", secret),
			{Verb: "create", Group: "spokekit.io", Resource: "kubeconfigsecrets", Namespace: hub.Namespace},
			{Verb: "patch", Group: "spokekit.io", Resource: "fieldlimitedspokes", Namespace: hub.Namespace},
		},
	)
	for _, a := range needs {
		assert.Check(t, clitest.Allows(rules, a), "not granted: %s", authz.Describe(a))
	}
	for _, g := range clitest.Granted(slices.Collect(maps.Values(roles))...) {
		used := slices.ContainsFunc(needs, func(a authz.Permission) bool {
			return a.Group == g.Group && a.Resource == g.Resource && a.Subresource == g.Subresource && a.Verb == g.Verb
		})
		assert.Check(t, used, "granted but never needed: %s", authz.Describe(g))
	}

	// The per-Secret Role reaches that Secret alone.
	for _, other := range []string{"hub-kubeconfig", "sh.helm.release.v1.mural.v1", "s2-kubeconfig"} {
		assert.Check(t, !clitest.Allows(rules, hub.secretAccess("get", other)), other)
		assert.Check(t, !clitest.Allows(rules, hub.secretAccess("update", other)), other)
	}
}

func TestSecretGrantNamesTheOneSecret(t *testing.T) {
	got := cli.SecretGrant(grantPrefix, "mural-system", "s1-kubeconfig", secretVerbs, "system:serviceaccount:ops:alice")
	assert.Equal(t, got, "kubectl create role spokekit-spoke:s1-kubeconfig -n mural-system --verb get,update --resource secrets --resource-name s1-kubeconfig\n"+
		"  kubectl create rolebinding spokekit-spoke:s1-kubeconfig -n mural-system --role spokekit-spoke:s1-kubeconfig --user system:serviceaccount:ops:alice")
	// A user name from the server that a shell would read otherwise is not pasted in.
	got = cli.SecretGrant(grantPrefix, "mural-system", "s1-kubeconfig", secretVerbs, "alice; rm -rf ~")
	assert.Check(t, strings.HasSuffix(got, "--user USER"), got)
}
