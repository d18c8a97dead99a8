package spoke

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// The line and report join-command prints for each combination of flags,
// and every refusal, with its exit code.
func TestJoinCommandPlans(t *testing.T) {
	expires := metav1.NewTime(time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC))
	token := joinToken{Value: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln-_x", Source: "ServiceAccount open-cluster-management/agent-registration-bootstrap", Expires: &expires}
	facts := joinFacts{HubAPIServer: "https://hub.example.com:6443", Token: token}
	var out strings.Builder
	for _, c := range []struct {
		name string
		s    joinSettings
		f    joinFacts
	}{
		{"token redacted", joinSettings{Name: "edge-1"}, facts},
		{"--show-token --brush-ignore", joinSettings{Name: "edge-1", ShowToken: true, BrushIgnore: true}, facts},
		{"--dry-run=client: no token minted", joinSettings{Name: "edge-1", ShowToken: true, DryRun: cli.DryRunClient}, joinFacts{HubAPIServer: facts.HubAPIServer, Token: joinToken{Source: token.Source}}},
		{"a URL a shell would split is quoted", joinSettings{Name: "edge-1", ShowToken: true}, joinFacts{HubAPIServer: "https://hub.example.com/it's here", Token: token}},
		{"a token with a shell character is not printed", joinSettings{Name: "edge-1"}, joinFacts{HubAPIServer: facts.HubAPIServer, Token: joinToken{Value: "abc;rm -rf ~", Source: token.Source}}},
		{"a URL without a host", joinSettings{Name: "edge-1"}, joinFacts{HubAPIServer: "hub:6443", Token: token}},
		{"a URL with a credential", joinSettings{Name: "edge-1"}, joinFacts{HubAPIServer: "https://admin:secret@hub.example.com", Token: token}},
	} {
		fmt.Fprintf(&out, "== %s\n", c.name)
		r, err := planJoin(c.s, c.f)
		if err != nil {
			fmt.Fprintf(&out, "exit %d: %v\n", exitcode.Of(err), err)
			continue
		}
		data, err := json.MarshalIndent(r, "", "  ")
		assert.NilError(t, err)
		fmt.Fprintf(&out, "%s\n%s\n", r.Command, data)
	}
	for _, c := range []struct {
		name string
		f    joinFacts
	}{
		{"a Spoke of that name, in another namespace", joinFacts{SpokeNamespace: "other-fleet"}},
		{"a ManagedCluster not accepted yet", joinFacts{Cluster: &ocm.ManagedCluster{}}},
		{"a ManagedCluster accepted", joinFacts{Cluster: &ocm.ManagedCluster{Spec: ocm.ManagedClusterSpec{HubAcceptsClient: true}}}},
		{"a free name", joinFacts{}},
	} {
		err := refuseTakenName("edge-1", &c.f)
		fmt.Fprintf(&out, "== taken: %s\nexit %d: %v\n", c.name, exitcode.Of(err), err)
	}
	golden.Assert(t, out.String(), "joincommand-plans.golden")
}

// joinHub is a hub where edge-1 is free, the user may do everything, and
// the bootstrap ServiceAccount mints tokens.
func joinHub(t *testing.T) *clitest.APIServer {
	t.Helper()
	srv := clitest.NewAPIServer(t)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/spokes", 200, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"SpokeList","metadata":{},"items":[]}`)
	srv.Respond("GET /apis/cluster.open-cluster-management.io/v1/managedclusters/edge-1", 404, notFound)
	srv.Respond("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 201, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}`)
	srv.Respond("POST /api/v1/namespaces/open-cluster-management/serviceaccounts/agent-registration-bootstrap/token", 201,
		`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","status":{"token":"eyJhbGciOiJSUzI1NiJ9.e30.c2ln","expirationTimestamp":"2026-12-02T15:00:00Z"}}`)
	return srv
}

const tokenRequest = "POST /api/v1/namespaces/open-cluster-management/serviceaccounts/agent-registration-bootstrap/token"

func minted(srv *clitest.APIServer) bool {
	for _, r := range srv.Requests() {
		if r == tokenRequest || strings.Contains(r, "/secrets") {
			return true
		}
	}
	return false
}

func TestJoinCommandPrintsTheLine(t *testing.T) {
	srv := joinHub(t)
	code, stdout, stderr := runSpoke(srv, "join-command", "edge-1", "--brush-ignore", "--hub-apiserver", "https://hub.example.com:6443")
	assert.Equal(t, code, 0, stderr)
	assert.Equal(t, stdout, "clusteradm join --hub-token REDACTED --hub-apiserver https://hub.example.com:6443 --cluster-name edge-1 --klusterlet-annotation agent.open-cluster-management.io/brush-ignore=true\n")
	assert.Check(t, is.Contains(stderr, "run again with --show-token"))
	assert.Check(t, is.Contains(stderr, "expires at 2026-12-02T15:00:00Z"))
	assert.Check(t, is.Contains(stderr, "clusteradm accept --clusters edge-1"))

	code, stdout, stderr = runSpoke(srv, "join-command", "edge-1", "--show-token", "-o", "json")
	assert.Equal(t, code, 0, stderr)
	var r JoinCommandReport
	assert.NilError(t, json.Unmarshal([]byte(stdout), &r))
	assert.Equal(t, r.Token, "eyJhbGciOiJSUzI1NiJ9.e30.c2ln")
	assert.Check(t, is.Contains(r.Command, "--hub-token eyJhbGciOiJSUzI1NiJ9.e30.c2ln --hub-apiserver https://127.0.0.1:"), "the kubeconfig's server, as clusteradm prints it")
	// The kubeconfig's server is this machine: the cluster may not reach it.
	assert.Equal(t, stderr, "")
	code, _, stderr = runSpoke(srv, "join-command", "edge-1")
	assert.Equal(t, code, 0, stderr)
	assert.Check(t, is.Contains(stderr, "is this machine's own address; give the URL the cluster reaches the hub at with --hub-apiserver"))
}

func TestJoinCommandBootstrapTokenSecret(t *testing.T) {
	srv := joinHub(t)
	srv.Respond("GET /api/v1/namespaces/kube-system/secrets", 200, `{"apiVersion":"v1","kind":"SecretList","metadata":{},"items":[
		{"metadata":{"name":"bootstrap-token-old123","creationTimestamp":"2026-01-01T00:00:00Z"},"data":{"token-id":"b2xkMTIz","token-secret":"b2xkb2xkb2xkb2xkb2xk"}},
		{"metadata":{"name":"bootstrap-token-ocmhub","creationTimestamp":"2026-06-01T00:00:00Z"},"data":{"token-id":"b2NtaHVi","token-secret":"MDEyMzQ1Njc4OWFiY2RlZg=="}},
		{"metadata":{"name":"other","creationTimestamp":"2026-12-01T00:00:00Z"},"data":{}}]}`)
	code, stdout, stderr := runSpoke(srv, "join-command", "edge-1", "--use-bootstrap-token", "--show-token")
	assert.Equal(t, code, 0, stderr)
	assert.Check(t, is.Contains(stdout, "--hub-token ocmhub.0123456789abcdef "), "the newest bootstrap-token-* Secret")
	assert.Check(t, !strings.Contains(strings.Join(srv.Requests(), "\n"), "/token"))
	assert.Check(t, is.Contains(strings.Join(srv.Requests(), "\n"), "GET /api/v1/namespaces/kube-system/secrets?labelSelector=app%3Dcluster-manager"))
}

// A name in use, a missing permission or a hub without the bootstrap
// ServiceAccount is refused (exit 3) before any token is minted.
func TestJoinCommandRefusesBeforeMinting(t *testing.T) {
	srv := joinHub(t)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/spokes", 200,
		`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"SpokeList","metadata":{},"items":[{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"edge-1","namespace":"other-fleet"}}]}`)
	code, stdout, stderr := runSpoke(srv, "join-command", "edge-1", "--accept")
	assert.Equal(t, code, exitcode.Refused, stderr)
	assert.Check(t, is.Contains(stderr, "the Spoke other-fleet/edge-1 registers a cluster under that name; nothing was changed"))
	assert.Equal(t, stdout, "")
	assert.Check(t, !minted(srv))

	srv = joinHub(t)
	srv.Respond("GET /apis/cluster.open-cluster-management.io/v1/managedclusters/edge-1", 200,
		`{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedCluster","metadata":{"name":"edge-1"},"spec":{"hubAcceptsClient":true}}`)
	code, _, stderr = runSpoke(srv, "join-command", "edge-1")
	assert.Equal(t, code, exitcode.Refused, stderr)
	assert.Check(t, is.Contains(stderr, "a ManagedCluster edge-1 already exists"))
	assert.Check(t, !minted(srv))

	srv = joinHub(t)
	srv.Respond("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 201, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":false}}`)
	code, _, stderr = runSpoke(srv, "join-command", "edge-1")
	assert.Equal(t, code, exitcode.Refused, stderr)
	assert.Check(t, is.Contains(stderr, "may not create serviceaccounts/token agent-registration-bootstrap in namespace open-cluster-management; nothing was changed"))
	assert.Check(t, is.Contains(stderr, "spokekit-spoke-join"))
	assert.Check(t, !minted(srv))

	srv = joinHub(t)
	srv.Respond("POST "+strings.TrimPrefix(tokenRequest, "POST "), 404, notFound)
	code, _, stderr = runSpoke(srv, "join-command", "edge-1")
	assert.Equal(t, code, exitcode.Refused, stderr)
	assert.Check(t, is.Contains(stderr, "run again with --use-bootstrap-token"))

	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Usage, "RFC 1123 label", []string{"join-command", "Edge_1"})
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Usage, "--dry-run mints no token", []string{"join-command", "edge-1", "--accept", "--dry-run=client"})
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Usage, "not an http(s) URL", []string{"join-command", "edge-1", "--hub-apiserver", "hub:6443"})
}

func TestJoinCommandReportPrintsInEveryFormat(t *testing.T) {
	r, err := planJoin(joinSettings{Name: "edge-1"}, joinFacts{HubAPIServer: "https://hub:6443", Token: joinToken{Value: "a.b", Source: "x"}})
	assert.NilError(t, err)
	clitest.AssertPrintsInEveryFormat(t, r, nil)
	assert.Equal(t, clitest.PrintName(t, r), "managedcluster.cluster.open-cluster-management.io/edge-1\n")
}
