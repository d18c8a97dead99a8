package fleetdrain

import (
	"slices"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli/clitest"
)

func TestNodeAccessFollowsThePlan(t *testing.T) {
	report := DrainReport{Items: []NodeReport{
		{Evict: []PlannedPod{{Namespace: "web", Name: "a"}, {Namespace: "db", Name: "b"}}},
		{Evict: []PlannedPod{{Namespace: "web", Name: "c"}}},
	}}
	describe := func(needs []authz.Permission) []string {
		var out []string
		for _, a := range authz.Unique(needs) {
			out = append(out, authz.Describe(a))
		}
		return out
	}
	assert.DeepEqual(t, describe(nodeAccess(report, false)),
		[]string{"patch nodes", "watch pods", "create pods/eviction in namespace db", "create pods/eviction in namespace web", "watch poddisruptionbudgets.policy"})
	assert.DeepEqual(t, describe(nodeAccess(report, true)),
		[]string{"patch nodes", "watch pods", "delete pods in namespace db", "delete pods in namespace web", "watch poddisruptionbudgets.policy"})
}

// TestRolesGrantWhatTheCommandsNeedAndNoMore checks rbac.yaml against the
// code: each role grants what its commands check before writing and what
// they read, nothing else, no Secret, and ManifestWorks only in the role
// bound per cluster namespace.
func TestRolesGrantWhatTheCommandsNeedAndNoMore(t *testing.T) {
	roles := clitest.PluginRoles(t, "fleetdrain")
	report := DrainReport{Items: []NodeReport{{Evict: []PlannedPod{{Namespace: "web", Name: "a"}}}}}
	mc := func(verb string) authz.Permission {
		return authz.Permission{Verb: verb, Group: ocm.ManagedClusterResource.Group, Resource: ocm.ManagedClusterResource.Resource}
	}
	cases := map[string][]authz.Permission{
		"spokekit-fleetdrain-node": slices.Concat(nodeAccess(report, false), []authz.Permission{
			// What node and uncordon node read (node.go, drain.go, budgets.go).
			core("get", "nodes", "", ""), core("list", "nodes", "", ""), core("list", "pods", "", ""),
			{Verb: "list", Group: "policy", Resource: "poddisruptionbudgets"},
			{Verb: "get", Group: "apps", Resource: "daemonsets", Namespace: "web"},
			// The mark admission-policy.yaml reads.
			{Verb: "patch", Group: "spokekit.io", Resource: "fieldlimitednodes"},
			// Whether a pod's template pins its node (crossplan.go).
			{Verb: "get", Group: "apps", Resource: "replicasets", Namespace: "web"},
			{Verb: "get", Group: "apps", Resource: "statefulsets", Namespace: "web"},
			// --surge (surge.go).
			surgeAccess(map[string]string{"web/a": "web/a-deploy"})[0], surgeAccess(map[string]string{"web/a": "web/a-deploy"})[1],
		}),
		"spokekit-fleetdrain-cluster": slices.Concat(clusterAccess([]string{"a"}, false), []authz.Permission{
			mc("get"), mc("list"),
			{Verb: "list", Group: ocm.PlacementResource.Group, Resource: ocm.PlacementResource.Resource},
			// The placement guard's reads (clusterfleet.go), and --wait-for=healthy's decisions.
			{Verb: "list", Group: ocm.PlacementDecisionResource.Group, Resource: ocm.PlacementDecisionResource.Resource},
			{Verb: "list", Group: ocm.ManagedClusterSetResource.Group, Resource: ocm.ManagedClusterSetResource.Resource},
			{Verb: "list", Group: ocm.ManagedClusterSetBindingResource.Group, Resource: ocm.ManagedClusterSetBindingResource.Resource},
			// The Spoke of each cluster's name, for its Compute Pool marks (cluster.go).
			{Verb: "list", Group: "fleetconfig.open-cluster-management.io", Resource: "spokes"},
			// The mark admission-policy.yaml reads.
			{Verb: "patch", Group: "spokekit.io", Resource: "fieldlimitedmanagedclusters"},
		}),
		// What check reads (check.go): it never writes.
		"spokekit-fleetdrain-check": {
			core("get", "nodes", "", ""), core("list", "nodes", "", ""), core("list", "pods", "", ""),
			core("list", "persistentvolumeclaims", "", ""), core("list", "persistentvolumes", "", ""),
			{Verb: "list", Group: "policy", Resource: "poddisruptionbudgets"},
			{Verb: "list", Group: "apps", Resource: "deployments"},
			{Verb: "list", Group: "apps", Resource: "replicasets"},
			{Verb: "list", Group: "apps", Resource: "statefulsets"},
		},
		"spokekit-fleetdrain-works": slices.DeleteFunc(clusterAccess([]string{"a"}, true), func(a authz.Permission) bool { return a.Verb == "patch" }),
	}
	assert.Equal(t, len(roles), len(cases))
	for name, needs := range cases {
		role := roles[name]
		for _, a := range needs {
			assert.Check(t, clitest.Allows(role.Rules, a), "%s does not grant %s", name, authz.Describe(a))
		}
		for _, g := range clitest.Granted(role) {
			used := slices.ContainsFunc(needs, func(a authz.Permission) bool {
				return a.Group == g.Group && a.Resource == g.Resource && a.Subresource == g.Subresource && a.Verb == g.Verb
			})
			assert.Check(t, used, "%s grants %s, which no command needs", name, authz.Describe(g))
			assert.Check(t, g.Resource != "secrets")
			assert.Check(t, g.Resource != ocm.ManifestWorkResource.Resource || name == worksRole, "%s grants ManifestWorks", name)
		}
	}
}
