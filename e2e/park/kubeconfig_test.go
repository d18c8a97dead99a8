//go:build e2e

package park

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// park kubeconfig writes the cluster's admin kubeconfig, which kubectl then
// uses; refusals write nothing; --role makes (and on a re-run reuses) a
// ServiceAccount bound to view in the workload cluster, whose token may
// list nodes and may not delete one.
func TestKubeconfigFetchedAndUsed(t *testing.T) {
	createCluster(t, namespace, "kc", "in-memory", "{class: default-worker, name: md-0, replicas: 1}")
	waitRunningWorkers(t, namespace, "kc", 1)
	dir := t.TempDir()
	admin := filepath.Join(dir, "kc.kubeconfig")

	t.Run("refusals write nothing", func(t *testing.T) {
		r := kubectl(t, "park", "kubeconfig", "Bad_Name", "-n", namespace, "--output-file", admin)
		assert.Equal(t, r.ExitCode, 2, r)
		r = kubectl(t, "park", "kubeconfig", "nope", "-n", namespace, "--output-file", admin)
		assert.Equal(t, r.ExitCode, 3, r)
		_, err := os.Stat(admin)
		assert.Check(t, os.IsNotExist(err), "nothing written: %v", err)
	})

	t.Run("the admin kubeconfig, 0600, used by kubectl", func(t *testing.T) {
		r := kubectl(t, "park", "kubeconfig", "kc", "-n", namespace, "--output-file", admin)
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stderr, "holds the admin credential of cluster "+namespace+"/kc"), r)
		assert.Check(t, !strings.Contains(r.Stdout+r.Stderr, "client-key-data"), r)
		info, err := os.Stat(admin)
		assert.NilError(t, err)
		assert.Equal(t, info.Mode().Perm(), os.FileMode(0o600))
		_, node := workerNode(t, namespace, "kc")
		r = workload(t, admin, "get", "nodes")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, node), r)

		before, err := os.ReadFile(admin)
		assert.NilError(t, err)
		assert.NilError(t, os.WriteFile(admin, []byte("mine"), 0o600))
		r = kubectl(t, "park", "kubeconfig", "kc", "-n", namespace, "--output-file", admin)
		assert.Equal(t, r.ExitCode, 3, r)
		assert.Check(t, is.Contains(r.Stderr, "pass --overwrite"), r)
		now, err := os.ReadFile(admin)
		assert.NilError(t, err)
		assert.Equal(t, string(now), "mine")
		r = kubectl(t, "park", "kubeconfig", "kc", "-n", namespace, "--output-file", admin, "--overwrite")
		assert.Equal(t, r.ExitCode, 0, r)
		now, err = os.ReadFile(admin)
		assert.NilError(t, err)
		assert.Equal(t, string(now), string(before))
	})

	t.Run("--role: tokens that may read, not delete", func(t *testing.T) {
		// The simulated API server has no RBAC or TokenRequest: a real one.
		moveToTenant(t, namespace, "kc")
		_, node := workerNode(t, namespace, "kc")
		view := filepath.Join(dir, "kc-view.kubeconfig")
		r := kubectl(t, "park", "kubeconfig", "kc", "-n", namespace, "--output-file", view, "--role", "view", "--dry-run=client")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Regexp(`create\s+ServiceAccount\s+spokekit-system\s+spokekit-park-view`, r.Stdout), r)
		_, err := os.Stat(view)
		assert.Check(t, os.IsNotExist(err), "dry run writes nothing: %v", err)

		r = kubectl(t, "park", "kubeconfig", "kc", "-n", namespace, "--output-file", view, "--role", "view", "--duration", "1h")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, !strings.Contains(r.Stderr, "admin credential"), r)
		// Kubernetes' view reads namespaced objects (not nodes) and changes nothing.
		r = workload(t, view, "get", "pods", "-A")
		assert.Equal(t, r.ExitCode, 0, r)
		r = workload(t, view, "delete", "node", node, "--dry-run=server")
		assert.Check(t, r.ExitCode != 0 && strings.Contains(r.Stderr, "forbidden"), r)
		// A role that reads nodes, made by the cluster's admin: its token
		// lists them.
		r = workload(t, workloadKubeconfig(t, namespace, "kc"), "create", "clusterrole", "node-reader", "--verb", "get,list", "--resource", "nodes")
		assert.Equal(t, r.ExitCode, 0, r)
		reader := filepath.Join(dir, "kc-reader.kubeconfig")
		r = kubectl(t, "park", "kubeconfig", "kc", "-n", namespace, "--output-file", reader, "--role", "node-reader")
		assert.Equal(t, r.ExitCode, 0, r)
		r = workload(t, reader, "get", "nodes")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, node), r)
		r = workload(t, reader, "delete", "node", node, "--dry-run=server")
		assert.Check(t, r.ExitCode != 0 && strings.Contains(r.Stderr, "forbidden"), r)
		r = workload(t, view, "auth", "whoami")
		assert.Check(t, is.Contains(r.Stdout, "system:serviceaccount:spokekit-system:spokekit-park-view"), r)

		r = kubectl(t, "park", "kubeconfig", "kc", "-n", namespace, "--output-file", view, "--role", "view", "--overwrite", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Regexp(`"action": "reuse",\s+"kind": "ServiceAccount"`, r.Stdout), r)
		assert.Check(t, is.Regexp(`"action": "reuse",\s+"detail": "[^"]*",\s+"kind": "ClusterRoleBinding"`, r.Stdout), r)
		assert.Check(t, !strings.Contains(r.Stdout, "token:"), r)

		r = kubectl(t, "park", "kubeconfig", "kc", "-n", namespace, "--output-file", filepath.Join(dir, "x"), "--role", "no-such-role")
		assert.Equal(t, r.ExitCode, 3, r)
		assert.Check(t, is.Contains(r.Stderr, `no ClusterRole "no-such-role"`), r)
	})
}
