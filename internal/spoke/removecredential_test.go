package spoke

import (
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// storedKubeconfigSecret is spoke-1's kubeconfig secret holding a token
// whose JWT expiry is exp (Unix seconds).
func storedKubeconfigSecret(exp int64) string {
	enc := base64.RawURLEncoding.EncodeToString
	token := enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(fmt.Sprintf(`{"exp":%d}`, exp))) + ".c2ln"
	kc := "apiVersion: v1\nkind: Config\ncurrent-context: spoke\nclusters:\n- name: spoke\n  cluster: {server: 'https://spoke.example.com:6443'}\n" +
		"users:\n- name: spoke\n  user: {token: " + token + "}\ncontexts:\n- name: spoke\n  context: {cluster: spoke, user: spoke}\n"
	return `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"spoke-1-kubeconfig","namespace":"mural-system"},"data":{"kubeconfig":"` + base64.StdEncoding.EncodeToString([]byte(kc)) + `"}}`
}

// In unified mode the hub unjoins the cluster with the stored kubeconfig:
// remove refuses, writing nothing, when its credential has expired, or the
// secret is gone, and names rotate-kubeconfig; a valid one goes ahead. In
// addon mode after the pivot the agent unjoins: the credential is not read.
func TestRemoveRefusesWhenTheHubCannotUseTheStoredCredential(t *testing.T) {
	const unified = `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-1","namespace":"mural-system","uid":"u1","resourceVersion":"5",` +
		`"finalizers":["fleetconfig.open-cluster-management.io/hub-cleanup-preflight","fleetconfig.open-cluster-management.io/hub-cleanup","fleetconfig.open-cluster-management.io/spoke-cleanup"]},` +
		`"spec":{"hubRef":{"name":"hub","namespace":"mural-system"},"kubeconfig":{"secretReference":{"name":"spoke-1-kubeconfig"}}}}`
	fleet := func(t *testing.T) *clitest.APIServer {
		t.Helper()
		srv := clitest.NewAPIServer(t)
		srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, unified)
		srv.Respond("GET /apis/work.open-cluster-management.io/v1/namespaces/spoke-1/manifestworks", 200, `{"apiVersion":"work.open-cluster-management.io/v1","kind":"ManifestWorkList","metadata":{},"items":[]}`)
		srv.Respond("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 201, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}`)
		srv.Respond("DELETE /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
		return srv
	}
	const secretPath = "GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig"

	srv := fleet(t)
	srv.Respond(secretPath, 200, storedKubeconfigSecret(now.Add(-24*time.Hour).Unix()))
	code, _, errOut := runSpoke(srv, "remove", "spoke-1")
	assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
	assert.Check(t, is.Contains(errOut, "expired at"))
	assert.Check(t, is.Contains(errOut, "kubectl spoke rotate-kubeconfig spoke-1 --spoke-kubeconfig FILE"))
	assert.Check(t, is.Len(writes(srv), 0))

	srv = fleet(t)
	srv.Respond(secretPath, 404, notFound)
	code, _, errOut = runSpoke(srv, "remove", "spoke-1")
	assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
	assert.Check(t, is.Contains(errOut, "does not exist"))
	assert.Check(t, is.Len(writes(srv), 0))

	srv = fleet(t)
	srv.Respond(secretPath, 200, storedKubeconfigSecret(4102444800)) // 2100
	code, _, errOut = runSpoke(srv, "remove", "spoke-1")
	assert.Check(t, is.Equal(code, exitcode.OK), errOut)
	assert.Check(t, is.Len(writes(srv), 1))
}

// A Spoke that never joined in addon mode carries no spoke-cleanup
// finalizer (the hub adds it after a join, the agent once it runs): the
// hub has nothing to unjoin and deletes it at once, so its stored
// kubeconfig, even a missing one, is no reason to refuse.
func TestRemoveOfANeverJoinedSpokeNeedsNoStoredKubeconfig(t *testing.T) {
	const neverJoined = `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-1","namespace":"mural-system","uid":"u1","resourceVersion":"5",` +
		`"finalizers":["fleetconfig.open-cluster-management.io/hub-cleanup-preflight","fleetconfig.open-cluster-management.io/hub-cleanup"]},` +
		`"spec":{"hubRef":{"name":"hub","namespace":"mural-system"},"kubeconfig":{"secretReference":{"name":"spoke-1-kubeconfig"}},"addOns":[{"configName":"fleetconfig-controller-agent"}]},` +
		`"status":{"phase":"Unhealthy"}}`
	srv := clitest.NewAPIServer(t)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, neverJoined)
	srv.Respond("GET /apis/work.open-cluster-management.io/v1/namespaces/spoke-1/manifestworks", 200, `{"apiVersion":"work.open-cluster-management.io/v1","kind":"ManifestWorkList","metadata":{},"items":[]}`)
	srv.Respond("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 201, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}`)
	srv.Respond("DELETE /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
	srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 404, notFound)
	code, _, errOut := runSpoke(srv, "remove", "spoke-1")
	assert.Check(t, is.Equal(code, exitcode.OK), errOut)
	assert.Check(t, is.DeepEqual(writes(srv), []string{"DELETE /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1"}))
}
