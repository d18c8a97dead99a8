package park

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// The --role objects are named after the role and the user: valid names
// of at most 63 characters, different for two users of one role, two
// roles of one user, and for pairs whose readable forms agree.
func TestRoleObjectNamesAreValidAndDistinct(t *testing.T) {
	assert.Check(t, is.Regexp(`^spokekit-park-view-alice-[0-9a-f]{8}$`, roleObjectName("view", "alice")))
	names := map[string][2]string{}
	for _, pair := range [][2]string{
		{"view", "alice"},
		{"view", "bob"},
		{"edit", "alice"},
		{"a-b", "c"},
		{"a", "b-c"},
		{"system:aggregate-to-view", "alice"},
		{"system-aggregate-to-view", "alice"},
		{"view", "alice@example.com"},
		{"view", "alice-example-com"},
		{"view", "Alice"},
		{"view", "system:serviceaccount:team-a:ci-robot-with-a-long-name"},
		{"view", "system:serviceaccount:team-a:ci-robot-with-a-long-name-2"},
		{"a-very-long-cluster-role-name-that-goes-on-and-on-and-on", "a-very-long-user-name-that-goes-on-and-on@example.com"},
		{"view", "-"},
		{"view", "日本"},
	} {
		name := roleObjectName(pair[0], pair[1])
		assert.Check(t, len(name) <= 63, name)
		assert.Check(t, is.Len(validation.IsDNS1123Label(name), 0), name)
		if other, seen := names[name]; seen {
			t.Errorf("%v and %v share %s", other, pair, name)
		}
		names[name] = pair
	}
}

// alices is what a first --role view run made for alice.
func alices(t *testing.T) RoleAccess {
	t.Helper()
	want := desiredRoleObjects("view", "alice")
	return RoleAccess{User: "alice", RoleExists: true, Namespace: want.Namespace, ServiceAccount: want.ServiceAccount, Binding: want.Binding}
}

// The plan of a first run makes everything, a re-run reuses everything, and
// an object of that name that is not park's, was made for another user, or
// binds something else, is refused: nothing of it is taken over.
func TestPlanRoleAccess(t *testing.T) {
	_, err := PlanRoleAccess("view", RoleAccess{User: "alice"})
	assert.Check(t, exitcode.IsRefused(err))
	assert.Check(t, is.ErrorContains(err, `no ClusterRole "view"; nothing was changed`))

	first, err := PlanRoleAccess("view", RoleAccess{User: "alice", RoleExists: true})
	assert.NilError(t, err)
	again, err := PlanRoleAccess("view", alices(t))
	assert.NilError(t, err)
	for _, o := range first {
		assert.Check(t, is.Equal(o.Action, ActionCreate), o.Kind)
	}
	for _, o := range again {
		assert.Check(t, is.Equal(o.Action, ActionReuse), o.Kind)
	}
	// Bob's run beside alice's makes his own account, in the same namespace.
	bobs := alices(t)
	bobs.User = "bob"
	bob, err := PlanRoleAccess("view", RoleAccess{User: "bob", RoleExists: true, Namespace: bobs.Namespace})
	assert.NilError(t, err)
	assert.Check(t, is.Equal(bob[0].Action, ActionReuse))
	assert.Check(t, bob[1].Name != again[1].Name && bob[1].Action == ActionCreate, "%v %v", bob, again)

	// A namespace of that name is used only when spokekit made it (park, or
	// spoke prepare on a cluster that is also a spoke): whoever acts in
	// someone else's would reach the privileged ServiceAccount put there.
	spokes := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KubeconfigNamespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "kubectl-spoke"}}}
	mixed, err := PlanRoleAccess("view", RoleAccess{User: "alice", RoleExists: true, Namespace: spokes})
	assert.NilError(t, err)
	assert.Equal(t, mixed[0].Action, ActionReuse)
	_, err = PlanRoleAccess("view", RoleAccess{User: "alice", RoleExists: true, Namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KubeconfigNamespace}}})
	assert.Check(t, exitcode.IsRefused(err))
	assert.Check(t, is.ErrorContains(err, "Namespace spokekit-system exists in the workload cluster and is not kubectl-park's"))

	for name, tc := range refusedRoleObjects(t) {
		_, err := PlanRoleAccess("view", tc.have)
		assert.Check(t, exitcode.IsRefused(err), name)
		assert.Check(t, is.ErrorContains(err, tc.want), name)
		assert.Check(t, is.ErrorContains(err, "nothing was changed"), name)
	}
}

type refusedRoleObject struct {
	have RoleAccess
	want string
}

// refusedRoleObjects are alice's objects of view as someone else left them:
// neither --role nor --revoke touches them.
func refusedRoleObjects(t *testing.T) map[string]refusedRoleObject {
	t.Helper()
	edit := func(change func(*RoleAccess)) RoleAccess {
		have := alices(t)
		have.ServiceAccount, have.Binding = have.ServiceAccount.DeepCopy(), have.Binding.DeepCopy()
		change(&have)
		return have
	}
	sa := roleObjectName("view", "alice")
	return map[string]refusedRoleObject{
		"a ServiceAccount not park's": {
			edit(func(h *RoleAccess) { h.ServiceAccount.Labels = nil }),
			"ServiceAccount spokekit-system/" + sa + " exists in the workload cluster and is not kubectl-park's",
		},
		"a binding not park's": {
			edit(func(h *RoleAccess) { h.Binding.Labels = nil }),
			"ClusterRoleBinding " + sa + " exists in the workload cluster and is not kubectl-park's",
		},
		// Two user names whose hashes agree: the record tells them apart.
		"a ServiceAccount of another user": {
			edit(func(h *RoleAccess) { h.ServiceAccount.Annotations[UserAnnotation] = "mallory" }),
			`made by kubectl park for user "mallory", not for "alice"`,
		},
		"a ServiceAccount of no user": {
			edit(func(h *RoleAccess) { h.ServiceAccount.Annotations = nil }),
			`made by kubectl park for user "", not for "alice"`,
		},
		"a binding of another user": {
			edit(func(h *RoleAccess) { h.Binding.Annotations[UserAnnotation] = "mallory" }),
			`ClusterRoleBinding ` + sa + ` in the workload cluster was made by kubectl park for user "mallory"`,
		},
		"a binding of another role": {
			edit(func(h *RoleAccess) { h.Binding.RoleRef.Name = "cluster-admin" }),
			"no longer binds only ClusterRole view",
		},
		"a binding of one more subject": {edit(func(h *RoleAccess) {
			h.Binding.Subjects = append(h.Binding.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "mallory"})
		}), "no longer binds only ClusterRole view"},
		"a binding of another subject": {
			edit(func(h *RoleAccess) { h.Binding.Subjects[0].Name = "default" }),
			"no longer binds only ClusterRole view",
		},
	}
}

// --revoke deletes the binding, then the ServiceAccount; what is gone is
// left out, and nothing left is an empty plan. It never needs the role,
// and never deletes the namespace.
func TestPlanRevokeRoleAccess(t *testing.T) {
	noRole := alices(t)
	noRole.RoleExists = false
	saOnly := alices(t)
	saOnly.Binding = nil
	cases := []struct {
		name string
		have RoleAccess
	}{
		{"after --role", alices(t)},
		{"the ClusterRole deleted since", noRole},
		{"the binding deleted by hand", saOnly},
		{"a second run", RoleAccess{User: "alice", RoleExists: true, Namespace: alices(t).Namespace}},
	}
	var out strings.Builder
	for _, tc := range cases {
		plan, err := PlanRevokeRoleAccess("view", tc.have)
		assert.NilError(t, err, tc.name)
		r := KubeconfigReport{Revoke: true, Role: "view", User: "alice", Objects: plan}
		fmt.Fprintf(&out, "# %s\n", tc.name)
		assert.NilError(t, cli.WriteTable(&out, KubeconfigTable(r), true))
		out.WriteString("\n")
	}
	golden.Assert(t, out.String(), "kubeconfig-revoke.golden")

	for name, tc := range refusedRoleObjects(t) {
		_, err := PlanRevokeRoleAccess("view", tc.have)
		assert.Check(t, exitcode.IsRefused(err), name)
		assert.Check(t, is.ErrorContains(err, tc.want), name)
		assert.Check(t, is.ErrorContains(err, "nothing was deleted"), name)
	}
}

func TestKubeconfigTable(t *testing.T) {
	plan, err := PlanRoleAccess("view", RoleAccess{User: "alice", RoleExists: true, Namespace: alices(t).Namespace})
	assert.NilError(t, err)
	expires := metav1.NewTime(parkedAt.Add(8 * time.Hour))
	role := KubeconfigReport{
		ReportMeta: api.NewNamespacedReportMeta("ClusterKubeconfig", "dynamo-prod", "app"), DryRun: "client",
		OutputFile: "app-view.kubeconfig", Source: "secret dynamo-prod/app-kubeconfig", Server: "https://app.example:6443",
		Credential: CredentialToken, Role: "view", User: "alice", ServiceAccount: "spokekit-system/" + roleObjectName("view", "alice"), Expires: &expires, Objects: plan,
	}
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
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "--revoke goes with --role ROLE", []string{"kubeconfig", "app", "--revoke"})
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "not a valid ClusterRole name", []string{"kubeconfig", "app", "--role", "a/b", "--revoke"})
	for _, extra := range [][]string{{"--output-file", file}, {"--overwrite"}, {"--duration", "1h"}} {
		clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "--revoke writes no kubeconfig", append([]string{"kubeconfig", "app", "--role", "view", "--revoke"}, extra...))
	}
	assert.NilError(t, os.WriteFile(file, []byte("mine"), 0o600))
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Refused, "already exists; nothing was written: pass --overwrite", []string{"kubeconfig", "app", "--output-file", file})
	data, err := os.ReadFile(file)
	assert.NilError(t, err)
	assert.Equal(t, string(data), "mine")
}
