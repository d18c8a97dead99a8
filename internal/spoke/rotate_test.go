package spoke

import (
	"encoding/base64"
	"fmt"
	"os"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
)

const spokeJSON = `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"%s","namespace":"mural-system","uid":"u-%s","resourceVersion":"5"},"spec":{"kubeconfig":{"secretReference":{"name":"%s","kubeconfigKey":"kubeconfig"}}}}`

func secretJSON(name string, kubeconfig []byte) string {
	return `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"` + name + `","namespace":"mural-system","resourceVersion":"11"},"data":{"kubeconfig":"` + base64.StdEncoding.EncodeToString(kubeconfig) + `"}}`
}

// rotatingFleet has spoke-1 (secret spoke-1-kubeconfig) on a hub that is
// also spoke-1's cluster, so the stored and the new kubeconfig both reach it.
func rotatingFleet(t *testing.T, others ...string) (*clitest.APIServer, []byte) {
	srv := clitest.NewAPIServer(t)
	kc, err := os.ReadFile(srv.Kubeconfig)
	assert.NilError(t, err)
	srv.Respond("GET /api/v1/namespaces/kube-system", 200, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kube-system","uid":"ks-1"}}`)
	srv.Respond("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 201, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}`)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, fmt.Sprintf(spokeJSON, "spoke-1", "spoke-1", "spoke-1-kubeconfig"))
	srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 200, secretJSON("spoke-1-kubeconfig", kc))
	items := fmt.Sprintf(spokeJSON, "spoke-1", "spoke-1", "spoke-1-kubeconfig")
	for _, o := range others {
		items += "," + o
	}
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes", 200, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"SpokeList","metadata":{},"items":[`+items+`]}`)
	return srv, kc
}

func TestRotateIntoAnotherSecret(t *testing.T) {
	t.Run("a secret that holds no kubeconfig is refused", func(t *testing.T) {
		srv, _ := rotatingFleet(t)
		srv.Respond("GET /api/v1/namespaces/mural-system/secrets/db-password", 200, secretJSON("db-password", []byte("hunter2")))
		code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--secret", "db-password")
		assert.Check(t, is.Equal(code, cli.ExitRefused), errOut)
		assert.Check(t, is.Contains(errOut, "secret mural-system/db-password exists"))
		assert.Check(t, is.Len(writes(srv), 0))
	})
	t.Run("a secret of the same cluster that another spoke uses is refused", func(t *testing.T) {
		srv, kc := rotatingFleet(t, fmt.Sprintf(spokeJSON, "spoke-9", "spoke-9", "shared-kubeconfig"))
		srv.Respond("GET /api/v1/namespaces/mural-system/secrets/shared-kubeconfig", 200, secretJSON("shared-kubeconfig", kc))
		code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--secret", "shared-kubeconfig")
		assert.Check(t, is.Equal(code, cli.ExitRefused), errOut)
		assert.Check(t, is.Contains(errOut, "spoke spoke-9 uses it"))
		assert.Check(t, is.Len(writes(srv), 0))
	})
	t.Run("a new secret is created, never overwritten", func(t *testing.T) {
		srv, _ := rotatingFleet(t)
		srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig-2027", 404, notFound)
		srv.Respond("POST /api/v1/namespaces/mural-system/secrets", 201, secretJSON("spoke-1-kubeconfig-2027", nil))
		srv.Respond("PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, fmt.Sprintf(spokeJSON, "spoke-1", "spoke-1", "spoke-1-kubeconfig-2027"))
		code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--secret", "spoke-1-kubeconfig-2027")
		assert.Check(t, is.Equal(code, cli.ExitOK), errOut)
		assert.Check(t, is.DeepEqual(writes(srv), []string{
			"POST /api/v1/namespaces/mural-system/secrets?fieldManager=kubectl-spoke",
			"PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1?fieldManager=kubectl-spoke",
		}))
	})
	t.Run("an unused secret of the same cluster is updated with its resourceVersion", func(t *testing.T) {
		srv, kc := rotatingFleet(t)
		srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-old", 200, secretJSON("spoke-1-old", kc))
		srv.Respond("PUT /api/v1/namespaces/mural-system/secrets/spoke-1-old", 200, secretJSON("spoke-1-old", kc))
		srv.Respond("PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, fmt.Sprintf(spokeJSON, "spoke-1", "spoke-1", "spoke-1-old"))
		code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--secret", "spoke-1-old")
		assert.Check(t, is.Equal(code, cli.ExitOK), errOut)
		assert.Check(t, is.DeepEqual(writes(srv), []string{
			"PUT /api/v1/namespaces/mural-system/secrets/spoke-1-old?fieldManager=kubectl-spoke",
			"PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1?fieldManager=kubectl-spoke",
		}))
	})
}
