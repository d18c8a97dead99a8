package park

import (
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
)

// TestRoleGrantsWhatTheCommandsNeedAndNoMore checks rbac.yaml against the
// code: what park cluster and resume check before the patch and what the
// commands read are granted, every grant is one of those, and no Secret is
// granted (the workload cluster is read with --cluster-kubeconfig, or the
// opt-in Role for one NAME-kubeconfig Secret).
func TestRoleGrantsWhatTheCommandsNeedAndNoMore(t *testing.T) {
	roles := clitest.PluginRoles(t, "park")
	assert.DeepEqual(t, slices.Sorted(maps.Keys(roles)), []string{"spokekit-park", "spokekit-park-list"})
	role := roles["spokekit-park"]
	ns := "dynamo-prod"
	capiRead := func(verb, resource string) authz.Permission {
		return authz.Permission{Verb: verb, Group: capi.Group, Resource: resource, Namespace: ns}
	}
	needs := slices.Concat(changeAccess(ns, "app", resumeFollows), []authz.Permission{
		// What the commands read (platform.go, class.go, status.go).
		capiRead("get", capi.ClusterResource),
		capiRead("list", capi.ClusterResource),
		capiRead("get", capi.ClusterClassResource),
		capiRead("list", capi.MachineDeploymentResource),
		capiRead("list", capi.MachinePoolResource),
		capiRead("list", capi.MachineHealthCheckResource),
		{Verb: "list", Resource: "pods", Namespace: ns},
		{Verb: "list", Resource: "events", Namespace: ns},
		// The mark admission-policy.yaml reads.
		{Verb: "patch", Group: "spokekit.io", Resource: "fieldlimitedclusters", Namespace: ns},
	})
	for _, a := range needs {
		assert.Check(t, clitest.Allows(role.Rules, a), "not granted: %s", authz.Describe(a))
	}
	for _, g := range clitest.Granted(role) {
		used := slices.ContainsFunc(needs, func(a authz.Permission) bool {
			return a.Group == g.Group && a.Resource == g.Resource && a.Verb == g.Verb
		})
		assert.Check(t, used, "granted but never needed: %s", authz.Describe(g))
		assert.Check(t, g.Resource != "secrets", "granted: %s", authz.Describe(g))
	}
	// list -A reads Clusters everywhere and nothing else.
	assert.DeepEqual(t, clitest.Granted(roles["spokekit-park-list"]), []authz.Permission{{Verb: "list", Group: capi.Group, Resource: capi.ClusterResource}})
}

// park kubeconfig reads the one NAME-kubeconfig Secret: spokekit-park does
// not grant it, and the opt-in that rbac.yaml shows is the one the command
// prints when it is refused.
func TestKubeconfigSecretIsTheOptIn(t *testing.T) {
	role := clitest.PluginRoles(t, "park")["spokekit-park"]
	secret := authz.Permission{Verb: "get", Resource: "secrets", Namespace: "dynamo-prod", Name: capi.KubeconfigSecretName("app")}
	assert.Check(t, !clitest.Allows(role.Rules, secret))
	_, file, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "plugins", "kubectl-park", "rbac.yaml"))
	assert.NilError(t, err)
	for _, line := range strings.Split(cli.SecretGrant("spokekit-park", "dynamo-prod", secret.Name, []string{secret.Verb}, "alice"), "\n") {
		assert.Check(t, strings.Contains(string(data), "#     "+strings.TrimSpace(line)+"\n"), "rbac.yaml does not show: %s", line)
	}
}

// park cluster --wait follows the machines and the Cluster: its pre-check
// asks for nothing that only resume's wait watches (before, one list for
// both refused a role made for park alone).
func TestParkChecksOnlyWhatItsWaitFollows(t *testing.T) {
	var parkNeeds, resumeNeeds []string
	for _, a := range changeAccess("dynamo-prod", "app", parkFollows) {
		parkNeeds = append(parkNeeds, a.Verb+" "+a.Resource)
	}
	for _, a := range changeAccess("dynamo-prod", "app", resumeFollows) {
		resumeNeeds = append(resumeNeeds, a.Verb+" "+a.Resource)
	}
	assert.DeepEqual(t, parkNeeds, []string{"patch clusters", "list machines", "watch machines", "list clusters", "watch clusters"})
	for _, want := range []string{"watch machinehealthchecks", "watch machinedeployments", "watch machinepools"} {
		assert.Check(t, slices.Contains(resumeNeeds, want), "resume --wait checks %s", want)
	}
}
