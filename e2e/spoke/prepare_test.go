//go:build e2e

package spoke

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
	"github.com/spokekit/spokekit/e2e/standin/fleet"
)

// agentStandIn gives the prepared ServiceAccount what the klusterlet
// operator would give its own agents: the harness runs the klusterlet agent
// with the kubeconfig the join used, where a real cluster runs it under the
// operator's ServiceAccounts. It is bound only after add's checks passed
// with prepare's role alone.
const agentStandIn = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-prepared-agent-stand-in}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: spokekit-join, namespace: spokekit-system}]
`

// prepare on the new spoke, then add with the file it wrote: every check of
// add passes with the prepared identity alone; the real agent then joins.
// A re-run reuses the token; an existing file is refused and kept.
func TestPrepareThenAdd(t *testing.T) {
	const name = "prepared"
	file := filepath.Join(t.TempDir(), "prepared.kubeconfig")
	prepare := func(args ...string) (int, string, string) {
		t.Helper()
		r, err := spoke2.For(t.TempDir()).Kubectl(ctx(t), append([]string{"spoke", "prepare", "--output-file", file}, args...)...)
		assert.NilError(t, err)
		return r.ExitCode, r.Stdout, r.Stderr
	}
	code, out, errOut := prepare("--dry-run=client", "-o", "yaml")
	assert.Equal(t, code, 0, errOut)
	assert.Check(t, is.Contains(out, "name: spokekit:spoke-join"))
	_, err := os.Stat(file)
	assert.Check(t, os.IsNotExist(err), "a dry run writes no file")

	code, out, errOut = prepare()
	assert.Equal(t, code, 0, "%s\n%s", out, errOut)
	assert.Check(t, is.Contains(out, "passes add's checks"), out)
	info, err := os.Stat(file)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(info.Mode().Perm(), os.FileMode(0o600)))
	first := readFile(t, file)

	code, _, errOut = prepare()
	assert.Equal(t, code, 3, errOut)
	assert.Check(t, is.Contains(errOut, "exists; nothing was changed: pass --overwrite"))
	code, out, errOut = prepare("--overwrite")
	assert.Equal(t, code, 0, errOut)
	assert.Check(t, is.Contains(out, "reused (its token stays valid)"), out)
	assert.Check(t, is.Equal(readFile(t, file), first), "the same token")

	// add's checks (long-lived credential, each permission of the join) with
	// prepare's role alone.
	r := spoke(t, "add", name, "--spoke-kubeconfig", file)
	assert.Equal(t, r.ExitCode, 0, r)

	assert.NilError(t, spoke2.ApplyYAML(ctx(t), agentStandIn))
	t.Cleanup(func() {
		r := spoke(t, "remove", name, "--wait", "--timeout", "2m")
		assert.Check(t, r.ExitCode == 0, r)
	})
	r = spoke(t, "add", name, "--spoke-kubeconfig", file, "--apply", "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	waitAvailable(t, name)

	// health --deep with the prepared identity checks the spoke whole (the
	// role once lacked nodes and CSRs: exit 3, both unchecked), where the
	// stored kubeconfig is still there to read.
	r, rows := health(t, name, "--deep")
	deep := rows[name].Deep
	assert.Assert(t, deep != nil, r)
	if mode == fleet.ModeUnified {
		assert.Check(t, is.Equal(deep.Skipped, ""), "%+v", deep)
	}
	if deep.Skipped == "" {
		assert.Check(t, is.Len(deep.Unchecked, 0), "%+v", deep)
		assert.Equal(t, r.ExitCode, 0, r)
	}
}

// A kubeconfig that cannot be read is refused, and nothing is written.
func TestPrepareRefusesAnUnreadableKubeconfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "out.kubeconfig")
	r, err := spoke2.For(t.TempDir()).Kubectl(ctx(t), "spoke", "prepare", "--output-file", file, "--kubeconfig", filepath.Join(t.TempDir(), "missing"))
	assert.NilError(t, err)
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "nothing was changed"), r)
	_, err = os.Stat(file)
	assert.Check(t, os.IsNotExist(err))
}

// prepare --revoke deletes what prepare made, and the token it wrote is
// refused afterwards. Without a Spoke to check (or --force) it refuses and
// changes nothing; a Spoke that is not on the hub uses nothing; a second
// run finds nothing left.
func TestPrepareRevoke(t *testing.T) {
	file := filepath.Join(t.TempDir(), "revoked.kubeconfig")
	onSpoke := func(args ...string) harness.Result {
		t.Helper()
		r, err := spoke2.For(t.TempDir()).Kubectl(ctx(t), append([]string{"spoke", "prepare"}, args...)...)
		assert.NilError(t, err)
		return r
	}
	// The prepared token, used as the hub would use it.
	withToken := func() harness.Result {
		t.Helper()
		r, err := spoke2.For(t.TempDir()).Kubectl(ctx(t), "--kubeconfig", file, "get", "namespace", "kube-system")
		assert.NilError(t, err)
		return r
	}
	r := onSpoke("--output-file", file)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Equal(t, withToken().ExitCode, 0)

	r = onSpoke("--revoke")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "no Spoke was checked"), r)
	assert.Check(t, is.Contains(r.Stderr, "kubectl spoke remove cannot unjoin the cluster"), r)
	assert.Check(t, is.Contains(r.Stderr, "nothing was deleted"), r)
	assert.Equal(t, withToken().ExitCode, 0, "refused: the token still works")

	check := []string{"--revoke", "--spoke", "never-added", "--hub-kubeconfig", hub.Kubeconfig}
	r = onSpoke(append(check, "--dry-run=client")...)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Regexp(`secret spokekit-system/spokekit-join-token\s+would be deleted`, r.Stdout), r)
	assert.Equal(t, withToken().ExitCode, 0, "a dry run: the token still works")

	r = onSpoke(check...)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stderr, "spoke never-added is not on the hub"), r)
	assert.Check(t, is.Regexp(`secret spokekit-system/spokekit-join-token\s+deleted`, r.Stdout), r)
	assert.Check(t, is.Regexp(`namespace spokekit-system\s+kept`, r.Stdout), r)
	// The API server learns of the deletion through its watch: wait for it.
	err := wait.PollUntilContextTimeout(ctx(t), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		r = withToken()
		return r.ExitCode != 0 && strings.Contains(r.Stderr, "You must be logged in to the server"), nil
	})
	assert.NilError(t, err, "the token is not refused after --revoke: %s", r)

	r = onSpoke(check...)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "nothing of prepare's left to revoke"), r)
}
