package spoke

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// The hubs of fakeFleet and rotatingFleet are also the cluster of spoke-1,
// whose kube-system namespace has the UID ks-1. spokeCluster is a cluster
// of its own on another API server: the one a kubeconfig of another
// cluster reaches (another UID), or a second endpoint of spoke-1's cluster
// (the same UID, another URL).
func spokeCluster(t *testing.T, uid string) *clitest.APIServer {
	t.Helper()
	srv := clitest.NewAPIServer(t)
	srv.Respond("GET /api/v1/namespaces/kube-system", 200, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kube-system","uid":"`+uid+`"}}`)
	srv.Respond("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 201, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}`)
	srv.Respond("GET /api/v1/namespaces/open-cluster-management-agent/secrets/bootstrap-hub-kubeconfig", 404, notFound)
	return srv
}

// readsOnly says whether every request the cluster got only asked.
func readsOnly(srv *clitest.APIServer) bool {
	return len(writes(srv)) == 0
}

// add and rotate-kubeconfig tell two clusters apart by their kube-system
// UID: a kubeconfig of another cluster is refused (exit 3) writing nothing
// on the hub or on either cluster, and one of the same cluster at another
// URL is taken.
func TestAddTellsTwoClustersApart(t *testing.T) {
	other, sameAgain := spokeCluster(t, "ks-2"), spokeCluster(t, "ks-1")
	t.Run("spoke-1's secret holds a kubeconfig of another cluster", func(t *testing.T) {
		srv := fakeFleet(t)
		stored, err := os.ReadFile(srv.Kubeconfig)
		assert.NilError(t, err)
		srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 200, secretJSON("spoke-1-kubeconfig", stored))
		code, _, errOut := runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", other.Kubeconfig)
		assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
		assert.Check(t, is.Contains(errOut, "holds a kubeconfig of another cluster (different kube-system namespace UID)"))
		assert.Check(t, readsOnly(srv) && readsOnly(other), "%v %v", writes(srv), writes(other))

		srv.Respond("PUT /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 200, secretJSON("spoke-1-kubeconfig", nil))
		code, _, errOut = runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", sameAgain.Kubeconfig)
		assert.Check(t, is.Equal(code, exitcode.OK), errOut)
		assert.Check(t, is.DeepEqual(writes(srv), []string{"PUT /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig?fieldManager=kubectl-spoke"}))
	})
	t.Run("spoke-1 exists for another cluster", func(t *testing.T) {
		srv := fakeFleet(t)
		stored, err := os.ReadFile(srv.Kubeconfig)
		assert.NilError(t, err)
		srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, fmt.Sprintf(spokeJSON, "spoke-1", "spoke-1", "spoke-1-kubeconfig"))
		srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 200, secretJSON("spoke-1-kubeconfig", stored))
		code, _, errOut := runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", other.Kubeconfig, "--overwrite")
		assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
		assert.Check(t, is.Contains(errOut, "spoke spoke-1 already exists for another cluster (different kube-system namespace UID)"))
		assert.Check(t, readsOnly(srv) && readsOnly(other), "%v %v", writes(srv), writes(other))
	})
}

func TestRotateTellsTwoClustersApart(t *testing.T) {
	other, sameAgain := spokeCluster(t, "ks-2"), spokeCluster(t, "ks-1")
	t.Run("in place", func(t *testing.T) {
		srv, _ := rotatingFleet(t)
		code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", other.Kubeconfig)
		assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
		assert.Check(t, is.Contains(errOut, "reaches a different cluster than spoke spoke-1 (different kube-system namespace UID)"))
		assert.Check(t, readsOnly(srv) && readsOnly(other), "%v %v", writes(srv), writes(other))

		srv.Respond("PUT /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 200, secretJSON("spoke-1-kubeconfig", nil))
		srv.Respond("PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, fmt.Sprintf(spokeJSON, "spoke-1", "spoke-1", "spoke-1-kubeconfig"))
		code, _, errOut = runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", sameAgain.Kubeconfig)
		assert.Check(t, is.Equal(code, exitcode.OK), errOut)
		assert.Check(t, is.DeepEqual(writes(srv), []string{
			"PUT /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig?fieldManager=kubectl-spoke",
			"PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1?fieldManager=kubectl-spoke",
		}))
		assert.Check(t, is.Contains(srv.Body("PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1"), `"ks-1"`),
			"the UID recorded is the cluster's")
	})
	t.Run("into a secret of another cluster", func(t *testing.T) {
		srv, _ := rotatingFleet(t)
		otherKubeconfig, err := os.ReadFile(other.Kubeconfig)
		assert.NilError(t, err)
		srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-old", 200, secretJSON("spoke-1-old", otherKubeconfig))
		code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", sameAgain.Kubeconfig, "--secret", "spoke-1-old")
		assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
		assert.Check(t, is.Contains(errOut, "its kubeconfig reaches another cluster (different kube-system namespace UID)"))
		assert.Check(t, readsOnly(srv) && readsOnly(other), "%v %v", writes(srv), writes(other))
		assert.Check(t, !strings.Contains(errOut, "different server URL"), "told apart by the UID, both reached")
	})
}
