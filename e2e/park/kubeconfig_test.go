//go:build e2e

package park

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/spokekit/spokekit/e2e/harness"
)

// park kubeconfig writes the cluster's admin kubeconfig, which kubectl then
// uses; refusals write nothing; --role makes (and on a re-run reuses) a
// ServiceAccount bound to view in the workload cluster, whose token may
// list nodes and may not delete one. Two users get two ServiceAccounts, and
// --revoke ends one user's tokens and leaves the other's working.
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
		_, node := workerNode(t, "kc")
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
		_, node := workerNode(t, "kc")
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
		r = workload(t, workloadKubeconfig(t, "kc"), "create", "clusterrole", "node-reader", "--verb", "get,list", "--resource", "nodes")
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
		assert.Check(t, is.Regexp(`"action": "reuse",\s+"detail": "for user [^"]+",\s+"kind": "ServiceAccount"`, r.Stdout), r)
		assert.Check(t, is.Regexp(`"action": "reuse",\s+"detail": "[^"]*",\s+"kind": "ClusterRoleBinding"`, r.Stdout), r)
		assert.Check(t, !strings.Contains(r.Stdout, "token:"), r)

		r = kubectl(t, "park", "kubeconfig", "kc", "-n", namespace, "--output-file", filepath.Join(dir, "x"), "--role", "no-such-role")
		assert.Equal(t, r.ExitCode, 3, r)
		assert.Check(t, is.Contains(r.Stderr, `no ClusterRole "no-such-role"`), r)
	})

	t.Run("--role per user, --revoke", func(t *testing.T) {
		// Two users of the management cluster, both admins there: the
		// same admin kubeconfig reaches the workload cluster for each.
		as := func(user string, args ...string) harness.Result {
			t.Helper()
			return kubectl(t, append([]string{"park", "kubeconfig", "kc", "-n", namespace, "--role", "view", "--as", user, "--as-group", "system:masters"}, args...)...)
		}
		alice, bob := filepath.Join(dir, "alice.kubeconfig"), filepath.Join(dir, "bob.kubeconfig")
		for file, user := range map[string]string{alice: "alice", bob: "bob@example.com"} {
			r := as(user, "--output-file", file)
			assert.Equal(t, r.ExitCode, 0, r)
		}
		whoami := func(file string) harness.Result {
			t.Helper()
			return workload(t, file, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		}
		a, b := whoami(alice), whoami(bob)
		assert.Check(t, is.Regexp(`^system:serviceaccount:spokekit-system:spokekit-park-view-alice-[0-9a-f]{8}$`, a.Stdout), a)
		assert.Check(t, is.Regexp(`^system:serviceaccount:spokekit-system:spokekit-park-view-bob-example-com-[0-9a-f]{8}$`, b.Stdout), b)
		assert.Check(t, a.Stdout != b.Stdout, "two users share %s", a.Stdout)

		r := as("alice", "--revoke", "--dry-run=client")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Regexp(`delete\s+ClusterRoleBinding\s+-\s+spokekit-park-view-alice-`, r.Stdout), r)
		assert.Check(t, is.Regexp(`delete\s+ServiceAccount\s+spokekit-system\s+spokekit-park-view-alice-`, r.Stdout), r)
		assert.Check(t, is.Contains(r.Stderr, "nothing was deleted"), r)
		r = workload(t, alice, "get", "pods", "-A")
		assert.Equal(t, r.ExitCode, 0, "a dry run revokes nothing: %s", r)

		r = as("alice", "--revoke")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stderr, "revoked"), r)
		// The binding goes first (forbidden), then the account: the API
		// server learns of that through its watch of ServiceAccounts, and
		// then refuses the token itself (401, which kubectl words as "You
		// must be logged in"). Bob's still works.
		err := wait.PollUntilContextTimeout(ctx(t), 200*time.Millisecond, time.Minute, true, func(cx context.Context) (bool, error) {
			var err error
			if r, err = workloadCommand(t, alice).Kubectl(cx, "get", "pods", "-A"); err != nil {
				return false, err
			}
			return r.ExitCode != 0 && strings.Contains(r.Stderr, "You must be logged in to the server"), nil
		})
		assert.NilError(t, err, "alice's token is not refused after --revoke: %s", r)
		r = workload(t, bob, "get", "pods", "-A")
		assert.Equal(t, r.ExitCode, 0, "bob's token works: %s", r)
		assert.Check(t, is.Equal(whoami(bob).Stdout, b.Stdout))

		r = as("alice", "--revoke", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stderr, `nothing left to revoke: user "alice"`), r)
		assert.Check(t, !strings.Contains(r.Stdout, `"objects"`), r)

		// An object of bob's name that is not park's any more is refused
		// and stays.
		sa := strings.TrimPrefix(b.Stdout, "system:serviceaccount:spokekit-system:")
		admin := workloadKubeconfig(t, "kc")
		r = workload(t, admin, "label", "clusterrolebinding", sa, "app.kubernetes.io/managed-by-")
		assert.Equal(t, r.ExitCode, 0, r)
		r = as("bob@example.com", "--revoke")
		assert.Equal(t, r.ExitCode, 3, r)
		assert.Check(t, is.Contains(r.Stderr, "is not kubectl-park's"), r)
		r = workload(t, bob, "get", "pods", "-A")
		assert.Equal(t, r.ExitCode, 0, "bob's token works: %s", r)
	})
}
