package spoke

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
)

// made are the objects as a first prepare left them.
func made(t *testing.T) prepareFacts {
	t.Helper()
	p, err := planPrepare(defaultPrepareNames, prepareFacts{})
	assert.NilError(t, err)
	f := prepareFacts{Namespace: p.Namespace.Object, ServiceAccount: p.ServiceAccount.Object, Role: p.Role.Object, Binding: p.Binding.Object, Token: p.Token.Object.DeepCopy()}
	f.Token.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte("the-issued-token")}
	return f
}

func TestPlanPrepare(t *testing.T) {
	olderRole := made(t)
	olderRole.Role = olderRole.Role.DeepCopy()
	olderRole.Role.ResourceVersion = "7"
	olderRole.Role.Rules = olderRole.Role.Rules[:2]
	widerBinding := made(t)
	widerBinding.Binding = widerBinding.Binding.DeepCopy()
	widerBinding.Binding.Subjects = append(widerBinding.Binding.Subjects, rbacv1.Subject{Kind: "User", Name: "someone"})
	cases := []struct {
		name  string
		facts prepareFacts
	}{
		{"a new cluster", prepareFacts{}},
		{"a re-run", made(t)},
		{"an older version's role", olderRole},
		{"a binding someone widened", widerBinding},
	}
	var out strings.Builder
	for i, tc := range cases {
		p, err := planPrepare(defaultPrepareNames, tc.facts)
		assert.NilError(t, err, tc.name)
		if i == 0 {
			// The objects in full once: the role is the reference of what
			// the join needs.
			describePlan(t, &out, tc.name, p, nil, p.steps)
			continue
		}
		// Then what changes, and the objects written.
		describePlan(t, &out, tc.name, p.written(), nil, p.steps)
	}
	golden.Assert(t, out.String(), "prepare-plans.golden")
}

func TestPlanPrepareRefusesWhatItDidNotMake(t *testing.T) {
	foreign := func(f prepareFacts, edit func(*prepareFacts)) prepareFacts { edit(&f); return f }
	deleting := metav1.Now()
	cases := []refusal{
		{
			"someone's ServiceAccount", foreign(made(t), func(f *prepareFacts) { f.ServiceAccount = &corev1.ServiceAccount{} }),
			"serviceaccount spokekit-system/spokekit-join exists and was not made by kubectl spoke prepare",
		},
		{
			"someone's ClusterRole", foreign(made(t), func(f *prepareFacts) { f.Role = &rbacv1.ClusterRole{} }),
			"clusterrole spokekit:spoke-join exists and was not made",
		},
		{"a binding of another role", foreign(made(t), func(f *prepareFacts) {
			f.Binding = f.Binding.DeepCopy()
			f.Binding.RoleRef.Name = "cluster-admin"
		}), "binds ClusterRole cluster-admin, and a binding's role cannot change"},
		{"a token of another ServiceAccount", foreign(made(t), func(f *prepareFacts) {
			f.Token = f.Token.DeepCopy()
			f.Token.Annotations[corev1.ServiceAccountNameKey] = "default"
		}), "is not the token of serviceaccount spokekit-join"},
		{"an Opaque Secret", foreign(made(t), func(f *prepareFacts) {
			f.Token = f.Token.DeepCopy()
			f.Token.Type = corev1.SecretTypeOpaque
		}), "(type Opaque)"},
		// Whoever may already act in a namespace prepare did not make would
		// reach the join's privileged ServiceAccount and token in it.
		{
			"a namespace of someone else's",
			prepareFacts{Namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "spokekit-system"}}},
			"namespace spokekit-system exists and was not made by kubectl spoke prepare",
		},
		{
			"a namespace being deleted",
			prepareFacts{Namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "spokekit-system", DeletionTimestamp: &deleting}}},
			"namespace spokekit-system is being deleted",
		},
	}
	assertRefused(t, cases, "nothing was changed", func(f prepareFacts) error {
		_, err := planPrepare(defaultPrepareNames, f)
		return err
	})
}

// refusal is a state of the spoke a plan refuses, and what it says.
type refusal struct {
	name  string
	facts prepareFacts
	want  string
}

// assertRefused checks that plan refuses each case (exit 3), saying what
// and that unchanged.
func assertRefused(t *testing.T, cases []refusal, unchanged string, plan func(prepareFacts) error) {
	t.Helper()
	for _, tc := range cases {
		err := plan(tc.facts)
		assert.Check(t, exitcode.IsRefused(err), "%s: %v", tc.name, err)
		assert.Check(t, is.ErrorContains(err, tc.want), tc.name)
		assert.Check(t, is.ErrorContains(err, unchanged), tc.name)
	}
}

// The ClusterRole prepare writes allows each permission add checks with a
// SelfSubjectAccessReview before a join (kubeconfig.JoinPermissions) and
// the identity reads and health --deep's reads, and nothing they do not name. The role is read from
// the plan, not built here, so a role made from a shorter list fails.
func TestPreparedRoleIsTheJoinsNeeds(t *testing.T) {
	p, err := planPrepare(defaultPrepareNames, prepareFacts{})
	assert.NilError(t, err)
	rules := p.Role.Object.Rules
	needs := slices.Concat(kubeconfig.JoinPermissions, identityReads, deepReads)
	assert.Check(t, len(kubeconfig.JoinPermissions) > 0 && len(identityReads) > 0)
	// health --deep lists these; pods, cluster-wide, the join lists already.
	assert.Check(t, slices.ContainsFunc(kubeconfig.JoinPermissions, func(a authz.Permission) bool { return a.Resource == "pods" && a.Verb == "list" }))
	allows := func(r rbacv1.PolicyRule, a authz.Permission) bool {
		return slices.Contains(r.APIGroups, a.Group) && slices.Contains(r.Resources, a.Resource) && slices.Contains(r.Verbs, a.Verb) &&
			(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, a.Name))
	}
	for _, a := range needs {
		assert.Check(t, slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return allows(r, a) }), "not granted: %s", authz.Describe(a))
	}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					names := r.ResourceNames
					if len(names) == 0 {
						names = []string{""}
					}
					for _, n := range names {
						assert.Check(t, slices.ContainsFunc(needs, func(a authz.Permission) bool {
							return a.Group == g && a.Resource == res && a.Verb == v && a.Name == n
						}), "granted beyond the needs: %s %s.%s %q", v, res, g, n)
					}
				}
			}
		}
	}
}

func TestPlaceFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "spoke.kubeconfig")
	ok := func(string) error { return nil }

	assert.NilError(t, placeFile(path, []byte("first"), false, ok))
	info, err := os.Stat(path)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(info.Mode().Perm(), os.FileMode(0o600)))

	err = placeFile(path, []byte("second"), false, ok)
	assert.Check(t, exitcode.IsRefused(err), "%v", err)
	assert.Check(t, is.Equal(readString(t, path), "first"), "never over an existing file")

	failed := errors.New("the check failed")
	assert.Check(t, is.ErrorIs(placeFile(path, []byte("third"), true, func(string) error { return failed }), failed))
	assert.Check(t, is.Equal(readString(t, path), "first"), "an unchecked file is not put in place")

	assert.NilError(t, placeFile(path, []byte("fourth"), true, ok))
	assert.Check(t, is.Equal(readString(t, path), "fourth"))
	entries, err := os.ReadDir(dir)
	assert.NilError(t, err)
	assert.Check(t, is.Len(entries, 1), "no temporary file left")
}

func readString(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	assert.NilError(t, err)
	return string(data)
}

// Bad input is refused before any request, and no file is written.
func TestPrepareRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.kubeconfig")
	assert.NilError(t, os.WriteFile(existing, []byte("keep"), 0o600))
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Usage, "--output-file is required", []string{"prepare"})
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Refused, existing+" exists; nothing was changed: pass --overwrite", []string{"prepare", "--output-file", existing})
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Refused, "does not exist", []string{"prepare", "--output-file", filepath.Join(dir, "missing", "x")})
	assert.Check(t, is.Equal(readString(t, existing), "keep"))
}
