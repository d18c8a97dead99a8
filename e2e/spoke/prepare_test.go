//go:build e2e

package spoke

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/e2e/standin/fleet"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
)

// prepare on the new spoke, then add with the file it wrote: every check of
// add passes with the prepared identity alone, and the join, which applies
// the klusterlet chart with that identity (as clusteradm join does), too;
// the real agent then joins.
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

// The join applies the klusterlet chart with the stored kubeconfig's
// identity, so what prepare grants is what a join needs: prepare's role
// less get on the klusterlet operator's Deployment makes add refuse, and a
// Spoke written without add (as a chart would write it) never joins, its
// Joined condition naming the refused request.
func TestJoinNeedsWhatPrepareGrants(t *testing.T) {
	if mode != fleet.ModeAddon {
		// The join is the same in both modes; in unified mode a Spoke that
		// never joined keeps spoke-cleanup (the hub drops hub-cleanup
		// first, and only then would its spoke part unjoin).
		t.Skip("addon mode: the join is the same in both, and unified mode keeps a never-joined Spoke")
	}
	const name, ns, sa = "lacking", "e2e-lacking", "joiner"
	home := t.TempDir()
	r, err := spoke2.For(home).Kubectl(ctx(t), "spoke", "prepare", "--output-file", filepath.Join(home, "unused"), "--dry-run=client", "-o", "json")
	assert.NilError(t, err)
	assert.Equal(t, r.ExitCode, 0, r)
	// prepare's role: in what its dry run would write, or as an earlier
	// prepare left it on the cluster (then the dry run writes no role).
	var plan struct{ Objects []json.RawMessage }
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &plan))
	var role *rbacv1.ClusterRole
	for _, raw := range plan.Objects {
		var o rbacv1.ClusterRole
		assert.NilError(t, json.Unmarshal(raw, &o))
		if o.Kind == "ClusterRole" {
			role = &o
		}
	}
	if role == nil {
		role, err = spoke2.Kube.RbacV1().ClusterRoles().Get(ctx(t), "spokekit:spoke-join", metav1.GetOptions{})
		assert.NilError(t, err, "prepare's dry run writes no role, and there is none: %s", r.Stdout)
	}
	cut := 0
	for i, rule := range role.Rules {
		if slices.Equal(rule.Resources, []string{"deployments"}) && slices.Equal(rule.ResourceNames, []string{"klusterlet"}) {
			role.Rules[i].Verbs = slices.DeleteFunc(slices.Clone(rule.Verbs), func(v string) bool { return v == "get" })
			cut++
		}
	}
	assert.Equal(t, cut, 1, "prepare's role has one rule for the operator's Deployment: %+v", role.Rules)
	role.ObjectMeta = metav1.ObjectMeta{Name: "e2e:join-lacking"}

	user, err := spoke2.ServiceAccountCommand(ctx(t), home, ns, sa)
	assert.NilError(t, err)
	rbac := spoke2.Kube.RbacV1()
	_, err = rbac.ClusterRoles().Create(ctx(t), role, metav1.CreateOptions{})
	assert.NilError(t, err)
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
	}
	_, err = rbac.ClusterRoleBindings().Create(ctx(t), binding, metav1.CreateOptions{})
	assert.NilError(t, err)
	t.Cleanup(func() {
		assert.Check(t, rbac.ClusterRoleBindings().Delete(ctx(t), binding.Name, metav1.DeleteOptions{}))
		assert.Check(t, rbac.ClusterRoles().Delete(ctx(t), role.Name, metav1.DeleteOptions{}))
		assert.Check(t, spoke2.Kube.CoreV1().Namespaces().Delete(ctx(t), ns, metav1.DeleteOptions{}))
	})
	assert.NilError(t, user.WaitCanI(ctx(t), true, "patch", "deployments/klusterlet", "-n", "open-cluster-management"))
	kubeconfig := user.Kubeconfig()

	// The token lives an hour: add's lifetime check is not the one shown here.
	r = spoke(t, "add", name, "--spoke-kubeconfig", kubeconfig, "--min-credential-lifetime", "30m")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "get deployments.apps klusterlet in namespace open-cluster-management"), r)
	assert.Check(t, spokeObject(t, name) == nil, "add wrote no Spoke")

	createSpoke(t, name, &harness.Cluster{Kubeconfig: kubeconfig}, nil)
	t.Cleanup(func() {
		spokes := hub.Dynamic.Resource(fleetconfig.SpokeResource).Namespace(releaseNamespace)
		assert.Check(t, spokes.Delete(ctx(t), name, metav1.DeleteOptions{}))
		waitSpoke(t, name, "gone", func(u *unstructured.Unstructured) bool { return u == nil })
		assert.Check(t, hub.Kube.CoreV1().Secrets(releaseNamespace).Delete(ctx(t), name+"-kubeconfig", metav1.DeleteOptions{}))
	})
	refused := `deployments.apps "klusterlet" is forbidden: User "system:serviceaccount:` + ns + ":" + sa + `" cannot get resource "deployments"`
	waitSpoke(t, name, "the join refused for want of get on the operator's Deployment", func(u *unstructured.Unstructured) bool {
		return u != nil && strings.Contains(spokeConditionMessage(u, fleetconfig.SpokeConditionJoined), refused)
	})
	assert.Check(t, managedCluster(t, name) == nil, "no ManagedCluster: the klusterlet never started")
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
