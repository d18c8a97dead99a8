package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// PluginManifest reads a manifest the repository ships beside a plugin's
// RBAC (plugins/kubectl-<plugin>/<file>).
func PluginManifest(plugin, file string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(filepath.Join(root, "plugins", "kubectl-"+plugin, file))
	return string(data), err
}

// Grants are the `kubectl create role|rolebinding ...` lines a refused
// command printed: the narrow grants (one Secret, one namespace) the
// plugins' refusals name, each as kubectl's arguments.
func Grants(stderr string) [][]string {
	var out [][]string
	for _, line := range strings.Split(stderr, "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[0] == "kubectl" && f[1] == "create" && (f[2] == "role" || f[2] == "rolebinding") {
			out = append(out, f[1:])
		}
	}
	return out
}

// RunGrants runs, as cmd (an administrator), the grants a refused command
// printed, and waits until the API server authorizes user by them (a new
// binding reaches its authorizer a moment later); it fails when there are
// none.
func (cmd Command) RunGrants(ctx context.Context, stderr string, user Command) error {
	grants := Grants(stderr)
	if len(grants) == 0 {
		return fmt.Errorf("no grant printed in: %s", stderr)
	}
	for _, g := range grants {
		r, err := cmd.Kubectl(ctx, g...)
		if err != nil {
			return err
		}
		if r.ExitCode != 0 {
			return fmt.Errorf("kubectl %s: %s", strings.Join(g, " "), r)
		}
	}
	for _, g := range grants {
		question, err := cmd.grantQuestion(ctx, g)
		if err != nil {
			return err
		}
		if question == nil {
			continue
		}
		if err := user.WaitCanI(ctx, true, question...); err != nil {
			return fmt.Errorf("waiting until kubectl %s takes effect (auth can-i %s): %w", strings.Join(g, " "), strings.Join(question, " "), err)
		}
	}
	return nil
}

// grantQuestion is a `kubectl auth can-i` question that grant g (create
// role|rolebinding ...) answers yes once it took effect: the first verb and
// resource of the Role it creates, or of the ClusterRole the binding names.
// It is nil for a binding of a Role another grant creates (that grant's
// question needs the binding too).
func (cmd Command) grantQuestion(ctx context.Context, g []string) ([]string, error) {
	flags := map[string]string{}
	for i := 2; i < len(g); i++ {
		if k, v, ok := strings.Cut(g[i], "="); ok && strings.HasPrefix(k, "-") {
			flags[k] = v
		} else if strings.HasPrefix(g[i], "-") && i+1 < len(g) {
			flags[g[i]] = g[i+1]
			i++
		}
	}
	var verb, resource, name string
	switch {
	case g[1] == "role":
		verb, _, _ = strings.Cut(flags["--verb"], ",")
		resource, name = flags["--resource"], flags["--resource-name"]
	case flags["--clusterrole"] != "":
		r, err := cmd.Kubectl(ctx, "get", "clusterrole", flags["--clusterrole"], "-o", "json")
		if err != nil {
			return nil, err
		}
		var role struct {
			Rules []struct{ Verbs, APIGroups, Resources, ResourceNames []string }
		}
		if r.ExitCode != 0 || json.Unmarshal([]byte(r.Stdout), &role) != nil || len(role.Rules) == 0 ||
			len(role.Rules[0].Verbs) == 0 || len(role.Rules[0].Resources) == 0 {
			return nil, fmt.Errorf("clusterrole %s has no first rule with a verb and a resource to ask about: %s", flags["--clusterrole"], r)
		}
		rule := role.Rules[0]
		verb, resource = rule.Verbs[0], rule.Resources[0]
		if len(rule.APIGroups) > 0 && rule.APIGroups[0] != "" {
			resource += "." + rule.APIGroups[0]
		}
		if len(rule.ResourceNames) > 0 {
			name = rule.ResourceNames[0]
		}
	default:
		return nil, nil
	}
	if name != "" {
		resource += "/" + name
	}
	return []string{verb, resource, "-n", flags["-n"]}, nil
}
