package spoke

import (
	"encoding/base64"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
)

const notFound = `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`

// fakeFleet is a hub with one Hub in mural-system that is also the spoke
// cluster to add (the kubeconfig reaches it and may do everything), with no
// spoke-1 yet.
func fakeFleet(t *testing.T) *clitest.APIServer {
	srv := clitest.NewAPIServer(t)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/hubs", 200,
		`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"HubList","metadata":{},"items":[{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Hub","metadata":{"name":"hub","namespace":"mural-system"}}]}`)
	srv.Respond("GET /api/v1/namespaces/kube-system", 200, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kube-system","uid":"ks-1"}}`)
	srv.Respond("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 201, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}`)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 404, notFound)
	srv.Respond("GET /apis/cluster.open-cluster-management.io/v1/managedclusters/spoke-1", 404, notFound)
	return srv
}

func runSpoke(srv *clitest.APIServer, args ...string) (int, string, string) {
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	code := cli.Execute(NewCmdSpoke(streams), append(args, "-n", "mural-system", "--kubeconfig", srv.Kubeconfig), streams)
	return code, out.String(), errOut.String()
}

// writes are the requests that change something (SelfSubjectAccessReviews
// only ask).
func writes(srv *clitest.APIServer) []string {
	var out []string
	for _, r := range srv.Requests() {
		if !strings.HasPrefix(r, "GET ") && !strings.Contains(r, "selfsubjectaccessreviews") {
			out = append(out, r)
		}
	}
	return out
}

func TestAddRefusesToReplaceASecretThatIsNotAKubeconfig(t *testing.T) {
	srv := fakeFleet(t)
	srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 200,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"spoke-1-kubeconfig","namespace":"mural-system","resourceVersion":"9"},"data":{"kubeconfig":"`+base64.StdEncoding.EncodeToString([]byte("someone's notes"))+`"}}`)
	code, _, errOut := runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig)
	assert.Check(t, is.Equal(code, cli.ExitRefused), errOut)
	assert.Check(t, is.Contains(errOut, "pass --overwrite"))
	assert.Check(t, is.Len(writes(srv), 0))

	// With --overwrite: an update guarded by the resourceVersion read, not a forced apply.
	srv.Respond("PUT /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 200, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"spoke-1-kubeconfig"}}`)
	code, _, errOut = runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--overwrite")
	assert.Check(t, is.Equal(code, cli.ExitOK), errOut)
	assert.Check(t, is.DeepEqual(writes(srv), []string{"PUT /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig?fieldManager=kubectl-spoke"}))
}

func TestAddCreatesOnly(t *testing.T) {
	srv := fakeFleet(t)
	srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 404, notFound)
	srv.Respond("POST /api/v1/namespaces/mural-system/secrets", 201, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"spoke-1-kubeconfig"}}`)
	srv.Respond("POST /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes", 201, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-1","namespace":"mural-system"}}`)
	code, _, errOut := runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--apply")
	assert.Check(t, is.Equal(code, cli.ExitOK), errOut)
	assert.Check(t, is.DeepEqual(writes(srv), []string{
		"POST /api/v1/namespaces/mural-system/secrets?fieldManager=kubectl-spoke",
		"POST /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes?fieldManager=kubectl-spoke",
	}))
}
