package park

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
)

func TestRoleObjectNamesAreValidAndDistinct(t *testing.T) {
	assert.Equal(t, roleObjectName("view"), "spokekit-park-view")
	a, b := roleObjectName("system:aggregate-to-view"), roleObjectName("system-aggregate-to-view")
	assert.Check(t, a != b, "two roles share %s", a)
	assert.Check(t, is.Regexp(`^spokekit-park-system-aggregate-to-view-[0-9a-f]{8}$`, a))
	long := roleObjectName("a-very-long-cluster-role-name-that-goes-on-and-on-and-on")
	assert.Check(t, len(long) <= 63, long)
}

// The plan of a first run makes everything, a re-run reuses everything, and
// an object of that name that is not park's, or binds something else, is
// refused: nothing of it is taken over.
func TestPlanRoleAccess(t *testing.T) {
	_, err := PlanRoleAccess("view", RoleAccess{})
	assert.Check(t, exitcode.IsRefused(err))
	assert.Check(t, is.ErrorContains(err, `no ClusterRole "view"; nothing was changed`))

	first, err := PlanRoleAccess("view", RoleAccess{RoleExists: true})
	assert.NilError(t, err)
	want := desiredRoleObjects("view")
	again, err := PlanRoleAccess("view", RoleAccess{RoleExists: true, Namespace: want.Namespace, ServiceAccount: want.ServiceAccount, Binding: want.Binding})
	assert.NilError(t, err)
	for _, o := range first {
		assert.Check(t, is.Equal(o.Action, ActionCreate), o.Kind)
	}
	for _, o := range again {
		assert.Check(t, is.Equal(o.Action, ActionReuse), o.Kind)
	}
	// A namespace of that name is used only when spokekit made it (park, or
	// spoke prepare on a cluster that is also a spoke): whoever acts in
	// someone else's would reach the privileged ServiceAccount put there.
	spokes := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KubeconfigNamespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "kubectl-spoke"}}}
	mixed, err := PlanRoleAccess("view", RoleAccess{RoleExists: true, Namespace: spokes})
	assert.NilError(t, err)
	assert.Equal(t, mixed[0].Action, ActionReuse)
	_, err = PlanRoleAccess("view", RoleAccess{RoleExists: true, Namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KubeconfigNamespace}}})
	assert.Check(t, exitcode.IsRefused(err))
	assert.Check(t, is.ErrorContains(err, "Namespace spokekit-system exists in the workload cluster and is not kubectl-park's"))

	theirs := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: KubeconfigNamespace, Name: "spokekit-park-view"}}
	_, err = PlanRoleAccess("view", RoleAccess{RoleExists: true, ServiceAccount: theirs})
	assert.Check(t, exitcode.IsRefused(err))
	assert.Check(t, is.ErrorContains(err, "ServiceAccount spokekit-system/spokekit-park-view exists in the workload cluster and is not kubectl-park's"))

	other := want.Binding.DeepCopy()
	other.RoleRef.Name = "cluster-admin"
	_, err = PlanRoleAccess("view", RoleAccess{RoleExists: true, Binding: other})
	assert.Check(t, is.ErrorContains(err, "no longer binds only ClusterRole view"))
	more := want.Binding.DeepCopy()
	more.Subjects = append(more.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "mallory"})
	_, err = PlanRoleAccess("view", RoleAccess{RoleExists: true, Binding: more})
	assert.Check(t, exitcode.IsRefused(err))
}

func TestKubeconfigTable(t *testing.T) {
	plan, err := PlanRoleAccess("view", RoleAccess{RoleExists: true, Namespace: desiredRoleObjects("view").Namespace})
	assert.NilError(t, err)
	expires := metav1.NewTime(parkedAt.Add(8 * time.Hour))
	role := KubeconfigReport{ReportMeta: api.NewNamespacedReportMeta("ClusterKubeconfig", "dynamo-prod", "app"), DryRun: "client",
		OutputFile: "app-view.kubeconfig", Source: "secret dynamo-prod/app-kubeconfig", Server: "https://app.example:6443",
		Credential: CredentialToken, Role: "view", ServiceAccount: "spokekit-system/spokekit-park-view", Expires: &expires, Objects: plan}
	admin := KubeconfigReport{ReportMeta: role.ReportMeta, OutputFile: "app.kubeconfig", Source: role.Source, Server: role.Server, Credential: CredentialAdmin}
	var out string
	for _, r := range []KubeconfigReport{role, admin} {
		var buf bytes.Buffer
		assert.NilError(t, cli.WriteTable(&buf, KubeconfigTable(r), true))
		out += buf.String() + "\n"
	}
	golden.Assert(t, out, "kubeconfig.golden")
	clitest.AssertPrintsInEveryFormat(t, role, func() cli.Table { return KubeconfigTable(role) })
	assert.Check(t, is.Equal(clitest.PrintName(t, role), "cluster.cluster.x-k8s.io/app\n"))
}

// Bad input is refused before any request: a name, a role, a duration, a
// missing --output-file, and a file that is there without --overwrite
// (exit 3, the file untouched).
func TestKubeconfigRefusesBadInputBeforeAnyRequest(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "app.kubeconfig")
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "RFC 1123 subdomain", []string{"kubeconfig", "../x", "--output-file", file})
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "--output-file is required", []string{"kubeconfig", "app"})
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "not a valid ClusterRole name", []string{"kubeconfig", "app", "--output-file", file, "--role", "a/b"})
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "--duration must be between", []string{"kubeconfig", "app", "--output-file", file, "--role", "view", "--duration", "1m"})
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "--duration goes with --role", []string{"kubeconfig", "app", "--output-file", file, "--duration", "1h"})
	assert.NilError(t, os.WriteFile(file, []byte("mine"), 0o600))
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Refused, "already exists; nothing was written: pass --overwrite", []string{"kubeconfig", "app", "--output-file", file})
	data, err := os.ReadFile(file)
	assert.NilError(t, err)
	assert.Equal(t, string(data), "mine")
}
