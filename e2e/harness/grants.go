package harness

import (
	"context"
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
// printed; it fails when there are none.
func (cmd Command) RunGrants(ctx context.Context, stderr string) error {
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
	return nil
}
