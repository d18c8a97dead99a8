package spoke

import (
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
)

func TestSetKeysWithDots(t *testing.T) {
	want := []string{"klusterlet", "annotations", "example.com/team"}
	for _, arg := range []string{
		`klusterlet.annotations["example.com/team"]=ml`,
		`klusterlet.annotations['example.com/team']=ml`,
		`klusterlet.annotations.example\.com/team=ml`,
		`spec.klusterlet.annotations["example.com/team"]=ml`,
	} {
		as, err := ParseAssignments([]string{arg})
		assert.NilError(t, err, arg)
		assert.DeepEqual(t, as[0].Path, want)
		assert.Equal(t, as[0].Value, "ml", arg)
		assert.Equal(t, as[0].Field(), `klusterlet.annotations["example.com/team"]`, arg)
		assert.Check(t, Mutable(as[0].Path), arg)
		assert.DeepEqual(t, SetSpec(as), map[string]any{
			"klusterlet": map[string]any{"annotations": map[string]any{"example.com/team": "ml"}},
		})
	}

	as, err := ParseAssignments([]string{`klusterlet.annotations["a=b.c\"d"]=x=y`})
	assert.NilError(t, err)
	assert.DeepEqual(t, as[0].Path, []string{"klusterlet", "annotations", `a=b.c"d`})
	assert.Equal(t, as[0].Value, "x=y")

	for _, bad := range []string{`a["b"]c=1`, `a[0]=1`, `a["b=1`, `a[""]=1`, `a\`, `a.=1`, `.a=1`, `a[b=1`} {
		_, err := ParseAssignments([]string{bad})
		assert.Equal(t, exitcode.Of(err), exitcode.Usage, bad)
	}
}

func TestSetRefusesCredentials(t *testing.T) {
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Refused, "kubectl spoke rotate-kubeconfig spoke-1",
		[]string{"set", "spoke-1", "kubeconfig.secretReference.name=other-kubeconfig"},
		[]string{"set", "spoke-1", "spec.kubeconfig={inCluster: true}"},
		[]string{"set", "spoke-1", "logVerbosity=4", `kubeconfig["context"]=x`},
	)
}

// FuzzParseAssignment checks that whatever the parser accepts, it can write
// back in a form that reads the same, and that a path has no empty key.
func FuzzParseAssignment(f *testing.F) {
	for _, s := range []string{
		`logVerbosity=3`, `spec.cleanupConfig.forceClusterDrain=true`, `klusterlet.annotations["example.com/team"]=ml`,
		`klusterlet.annotations['a.b']=x`, `klusterlet.annotations.example\.com/team=ml`, `a["b\"c"]=d=e`, `a[0]=1`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		path, value, err := splitAssignment(arg)
		if err != nil {
			return
		}
		if len(path) == 0 {
			t.Fatalf("%q: no path", arg)
		}
		for _, k := range path {
			if k == "" {
				t.Fatalf("%q: an empty key in %q", arg, path)
			}
		}
		again := FormatPath(path) + "=" + value
		p2, v2, err := splitAssignment(again)
		if err != nil || !slices.Equal(p2, path) || v2 != value {
			t.Fatalf("%q read as %q=%q, written as %q, read back as %q=%q (%v)", arg, path, value, again, p2, v2, err)
		}
	})
}

// A change the API server's admission refuses (here upstream's FleetConfig
// webhook: addon mode needs the agent add-on on every spoke) is not one of
// set's own checks: it exits 1 with the server's reason, says nothing was
// changed, and sends the one patch. Before, only e2e ran it, and accepted
// any exit code but 0.
func TestSetRefusedByTheWebhookExits1WithItsReason(t *testing.T) {
	srv := clitest.NewAPIServer(t)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200,
		`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-1","namespace":"mural-system","resourceVersion":"7"},"spec":{"addOns":[{"configName":"fleetconfig-controller-agent"}]}}`)
	srv.Respond("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 201, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}`)
	const denied = `admission webhook \"vspoke-v1beta1.kb.io\" denied the request: Spoke.fleetconfig.open-cluster-management.io \"spoke-1\" is invalid: spec.addOns: Invalid value: null: Spoke must enable fleetconfig-controller-agent addon`
	srv.Respond("PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 422,
		`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Invalid","code":422,"message":"`+denied+`"}`)
	code, out, errOut := runSpoke(srv, "set", "spoke-1", "addOns=null")
	assert.Check(t, is.Equal(code, exitcode.Failed), errOut)
	assert.Check(t, is.Equal(errOut, "error: changing Spoke mural-system/spoke-1: "+strings.ReplaceAll(denied, `\"`, `"`)+"; nothing was changed\n"))
	assert.Check(t, is.Equal(out, ""))
	assert.Check(t, is.DeepEqual(writes(srv), []string{"PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1?fieldManager=kubectl-spoke"}))
	assert.Check(t, is.Contains(srv.Body("PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1"), `"addOns":null`))
}
