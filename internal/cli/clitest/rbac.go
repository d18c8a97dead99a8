package clitest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/spokekit/spokekit/internal/authz"
)

// PluginRoles reads the ClusterRoles of plugins/kubectl-<plugin>/rbac.yaml,
// by name.
func PluginRoles(t *testing.T, plugin string) map[string]rbacv1.ClusterRole {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "..", "plugins", "kubectl-"+plugin, "rbac.yaml")
	data, err := os.ReadFile(path) //nolint:gosec // a plugin's rbac.yaml in this repository
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]rbacv1.ClusterRole{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var r rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if r.Kind != "ClusterRole" {
			t.Fatalf("%s: a %s; only ClusterRoles are shipped", path, r.Kind)
		}
		roles[r.Name] = r
	}
	return roles
}

// Allows tells whether one of rules grants a, as RBAC decides: group,
// resource (with its subresource), verb, and resourceNames when the rule
// has them (a request without a name never matches those).
func Allows(rules []rbacv1.PolicyRule, a authz.Permission) bool {
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	for _, r := range rules {
		if slices.Contains(r.APIGroups, a.Group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, a.Verb) &&
			(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, a.Name)) {
			return true
		}
	}
	return false
}

// SecretsByKind names each rule that grants a verb other than create on
// every Secret (no resourceNames), or create where the role is not in
// createOK: the grants that read any Secret, or rewrite one, or mint tokens.
func SecretsByKind(roles map[string]rbacv1.ClusterRole, createOK ...string) []string {
	var out []string
	for name, role := range roles {
		for _, r := range role.Rules {
			if !slices.Contains(r.APIGroups, "") || !slices.Contains(r.Resources, "secrets") && !slices.Contains(r.Resources, "*") || len(r.ResourceNames) > 0 {
				continue
			}
			for _, v := range r.Verbs {
				if v != "create" || !slices.Contains(createOK, name) {
					out = append(out, fmt.Sprintf("%s: %s secrets", name, v))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// Granted is every (group, resource, verb) the roles grant, as accesses.
func Granted(roles ...rbacv1.ClusterRole) []authz.Permission {
	var out []authz.Permission
	for _, role := range roles {
		for _, r := range role.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					resource, sub, _ := strings.Cut(res, "/")
					for _, v := range r.Verbs {
						out = append(out, authz.Permission{Group: g, Resource: resource, Subresource: sub, Verb: v})
					}
				}
			}
		}
	}
	return authz.Unique(out)
}
