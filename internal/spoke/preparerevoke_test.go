package spoke

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// served is made(t) as an API server returns it: each object with a UID
// and a resourceVersion, the delete's preconditions.
func served(t *testing.T) prepareFacts {
	t.Helper()
	f := made(t)
	f.Namespace, f.ServiceAccount, f.Role, f.Binding = f.Namespace.DeepCopy(), f.ServiceAccount.DeepCopy(), f.Role.DeepCopy(), f.Binding.DeepCopy()
	for i, m := range []*metav1.ObjectMeta{&f.Namespace.ObjectMeta, &f.ServiceAccount.ObjectMeta, &f.Role.ObjectMeta, &f.Binding.ObjectMeta, &f.Token.ObjectMeta} {
		m.UID, m.ResourceVersion = types.UID("uid-"+strings.ToLower(string(rune('a'+i)))), string(rune('1'+i))
	}
	return f
}

// --revoke deletes the token first, then the binding, the ServiceAccount and
// the ClusterRole; what is gone is left out, and nothing left is an empty
// plan. The namespace is never deleted.
func TestPlanRevoke(t *testing.T) {
	tokenGone := served(t)
	tokenGone.Token = nil
	cases := []struct {
		name  string
		facts prepareFacts
	}{
		{"after prepare", served(t)},
		{"the token deleted by hand", tokenGone},
		{"only the namespace left (a second run)", prepareFacts{Namespace: served(t).Namespace}},
		{"nothing left", prepareFacts{}},
	}
	var out strings.Builder
	for _, tc := range cases {
		p, err := planRevoke(defaultPrepareNames, tc.facts)
		assert.NilError(t, err, tc.name)
		describePlan(t, &out, tc.name, p, nil, p.steps)
		out.WriteString("-- names\n" + strings.Join(p.subjects(), "\n") + "\n")
	}
	golden.Assert(t, out.String(), "prepare-revoke-plans.golden")
}

func TestPlanRevokeRefusesWhatPrepareDidNotMake(t *testing.T) {
	foreign := func(edit func(*prepareFacts)) prepareFacts { f := served(t); edit(&f); return f }
	cases := []refusal{
		{
			"someone's token Secret", foreign(func(f *prepareFacts) { f.Token.Labels = nil }),
			"secret spokekit-system/spokekit-join-token was not made by kubectl spoke prepare",
		},
		{
			"someone's ServiceAccount", foreign(func(f *prepareFacts) { f.ServiceAccount.Labels = nil }),
			"serviceaccount spokekit-system/spokekit-join was not made",
		},
		{
			"someone's ClusterRole", foreign(func(f *prepareFacts) { f.Role.Labels = map[string]string{"app.kubernetes.io/managed-by": "helm"} }),
			"clusterrole spokekit:spoke-join was not made",
		},
		{
			"someone's binding", foreign(func(f *prepareFacts) { f.Binding.Labels = nil }),
			"clusterrolebinding spokekit:spoke-join was not made",
		},
		{
			"a binding of another role", foreign(func(f *prepareFacts) { f.Binding.RoleRef.Name = "cluster-admin" }),
			"binds ClusterRole cluster-admin, not prepare's role",
		},
		{
			"a token of another ServiceAccount", foreign(func(f *prepareFacts) { f.Token.Annotations[corev1.ServiceAccountNameKey] = "default" }),
			"is not the token of serviceaccount spokekit-join",
		},
		{"an Opaque Secret", foreign(func(f *prepareFacts) { f.Token.Type = corev1.SecretTypeOpaque }), "(type Opaque)"},
	}
	assertRefused(t, cases, "nothing was deleted", func(f prepareFacts) error {
		_, err := planRevoke(defaultPrepareNames, f)
		return err
	})
}

// Only in addon mode past the pivot does the hub no longer use the prepared
// kubeconfig; a Spoke that is not there does not use it either.
func TestHubStillUses(t *testing.T) {
	spoke := func(agent bool, pivot metav1.ConditionStatus) *fleetconfig.Spoke {
		s := &fleetconfig.Spoke{ObjectMeta: metav1.ObjectMeta{Name: "spoke-2"}}
		if agent {
			s.Spec.AddOns = []fleetconfig.AddOn{{ConfigName: fleetconfig.AgentAddOn}}
		}
		if pivot != "" {
			s.Status.Conditions = []fleetconfig.Condition{{Condition: metav1.Condition{Type: fleetconfig.SpokeConditionPivotComplete, Status: pivot}}}
		}
		return s
	}
	assert.Check(t, is.Equal(hubStillUses(nil), ""))
	assert.Check(t, is.Equal(hubStillUses(spoke(true, metav1.ConditionTrue)), ""))
	assert.Check(t, is.Contains(hubStillUses(spoke(false, "")), "does not run the FleetConfig agent (unified mode"))
	assert.Check(t, is.Contains(hubStillUses(spoke(true, "")), "has not taken spoke spoke-2 over yet"))
	assert.Check(t, is.Contains(hubStillUses(spoke(true, metav1.ConditionFalse)), "has not taken spoke spoke-2 over yet"))
}

// preparedSpoke is an API server of a spoke that prepare made its objects on.
func preparedSpoke(t *testing.T) *clitest.APIServer {
	t.Helper()
	srv := clitest.NewAPIServer(t)
	f := served(t)
	respond := func(path string, obj any) {
		data, err := json.Marshal(obj)
		assert.NilError(t, err)
		srv.Respond("GET "+path, 200, string(data))
		srv.Respond("DELETE "+path, 200, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
	}
	respond("/api/v1/namespaces/spokekit-system", f.Namespace)
	respond("/api/v1/namespaces/spokekit-system/serviceaccounts/spokekit-join", f.ServiceAccount)
	respond("/api/v1/namespaces/spokekit-system/secrets/spokekit-join-token", f.Token)
	respond("/apis/rbac.authorization.k8s.io/v1/clusterroles/spokekit:spoke-join", f.Role)
	respond("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/spokekit:spoke-join", f.Binding)
	srv.Respond("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 201, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}`)
	return srv
}

func deletes(srv *clitest.APIServer) []string {
	var out []string
	for _, r := range srv.Requests() {
		if strings.HasPrefix(r, "DELETE ") {
			out = append(out, r)
		}
	}
	return out
}

// Without a Spoke to check, or with one the hub still joins and unjoins
// with the prepared kubeconfig, --revoke refuses (exit 3) and deletes
// nothing, unless --force; past the pivot it deletes, in order, each object
// under the UID and resourceVersion it read.
func TestPrepareRevokeChecksTheHub(t *testing.T) {
	hub := func(code int, spoke string) string {
		srv := clitest.NewAPIServer(t)
		srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/hubs", 200, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"HubList","metadata":{},"items":[{"metadata":{"name":"hub","namespace":"mural-system"}}]}`)
		srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-2", code, spoke)
		return srv.Kubeconfig
	}
	unified := hub(200, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-2","namespace":"mural-system"}}`)
	gone := hub(404, notFound)
	pivoted := hub(200, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-2","namespace":"mural-system"},
		"spec":{"addOns":[{"configName":"fleetconfig-controller-agent"}]},"status":{"conditions":[{"type":"PivotComplete","status":"True"}]}}`)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no Spoke named", nil, exitcode.Refused, "no Spoke was checked (--spoke NAME --hub-kubeconfig FILE names it); nothing was deleted: in unified mode"},
		{"a Spoke in unified mode", []string{"--spoke", "spoke-2", "--hub-kubeconfig", unified}, exitcode.Refused, "spoke spoke-2 does not run the FleetConfig agent"},
		{"a Spoke past the pivot", []string{"--spoke", "spoke-2", "--hub-kubeconfig", pivoted}, exitcode.OK, "took it over: the hub no longer uses the prepared kubeconfig"},
		{"a Spoke not on the hub", []string{"--spoke", "spoke-2", "--hub-kubeconfig", gone}, exitcode.OK, "spoke spoke-2 is not on the hub (namespace mural-system)"},
		{"--force", []string{"--force"}, exitcode.OK, "Warning: no Spoke was checked"},
	}
	for _, tc := range cases {
		srv := preparedSpoke(t)
		code, out, errOut := clitest.RunCommand(NewCmdSpoke, append([]string{"prepare", "--revoke", "--kubeconfig", srv.Kubeconfig}, tc.args...)...)
		assert.Check(t, is.Equal(code, tc.code), "%s: %s", tc.name, errOut)
		assert.Check(t, is.Contains(errOut, tc.want), tc.name)
		if tc.code != exitcode.OK {
			assert.Check(t, is.Len(deletes(srv), 0), tc.name)
			continue
		}
		assert.Check(t, is.DeepEqual(deletes(srv), []string{
			"DELETE /api/v1/namespaces/spokekit-system/secrets/spokekit-join-token",
			"DELETE /apis/rbac.authorization.k8s.io/v1/clusterrolebindings/spokekit:spoke-join",
			"DELETE /api/v1/namespaces/spokekit-system/serviceaccounts/spokekit-join",
			"DELETE /apis/rbac.authorization.k8s.io/v1/clusterroles/spokekit:spoke-join",
		}), tc.name)
		// DeleteOptions in protobuf: the precondition's UID and resourceVersion.
		assert.Check(t, is.Contains(srv.Body("DELETE /api/v1/namespaces/spokekit-system/secrets/spokekit-join-token"), "\n\x05uid-e\x12\x015"), tc.name)
		assert.Check(t, is.Regexp(`secret spokekit-system/spokekit-join-token +deleted \(its token stops working\)`, out), tc.name)
	}
}

// Bad input with --revoke is refused before any request.
func TestPrepareRevokeRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	hub := filepath.Join(dir, "hub.kubeconfig")
	assert.NilError(t, os.WriteFile(hub, []byte("apiVersion: v1\nkind: Config\n"), 0o600))
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Usage, "--revoke writes no kubeconfig", []string{"prepare", "--revoke", "--output-file", filepath.Join(dir, "x")})
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Usage, "--spoke NAME and --hub-kubeconfig FILE go together", []string{"prepare", "--revoke", "--spoke", "spoke-2"}, []string{"prepare", "--revoke", "--hub-kubeconfig", hub})
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Usage, "go with --revoke", []string{"prepare", "--output-file", filepath.Join(dir, "x"), "--force"}, []string{"prepare", "--output-file", filepath.Join(dir, "x"), "--spoke", "spoke-2", "--hub-kubeconfig", hub})
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Usage, "not a valid cluster name", []string{"prepare", "--revoke", "--spoke", "Spoke_2", "--hub-kubeconfig", hub})
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Refused, "--hub-kubeconfig:", []string{"prepare", "--revoke", "--spoke", "spoke-2", "--hub-kubeconfig", filepath.Join(dir, "missing")})
}
