package probe_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/kubeconfig"
	"github.com/spokekit/spokekit/internal/spoke/probe"
)

const (
	nodesPath = "GET /api/v1/nodes"
	podsPath  = "GET /api/v1/namespaces/kube-system/pods"
	csrsPath  = "GET /apis/certificates.k8s.io/v1/certificatesigningrequests"
)

// list is a list response of kind holding items (JSON objects).
func list(kind string, items ...string) string {
	return `{"kind":"` + kind + `","metadata":{},"items":[` + strings.Join(items, ",") + `]}`
}

// spokeServer is a spoke's API server that answers every read Reach makes,
// with one thing of each kind to report.
func spokeServer(t *testing.T) *clitest.APIServer {
	t.Helper()
	srv := clitest.NewAPIServer(t)
	srv.Respond("GET /version", 200, `{"gitVersion":"v1.36.0"}`)
	srv.Respond(nodesPath, 200, list("NodeList",
		`{"metadata":{"name":"cp-0"},"status":{"conditions":[{"type":"Ready","status":"True"}]}}`,
		`{"metadata":{"name":"worker-0"},"status":{"conditions":[{"type":"Ready","status":"Unknown"}]}}`,
		`{"metadata":{"name":"worker-1"}}`))
	srv.Respond(podsPath, 200, list("PodList",
		`{"metadata":{"name":"kube-proxy-x"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"False"}]}}`,
		`{"metadata":{"name":"job-done"},"status":{"phase":"Succeeded"}}`,
		`{"metadata":{"name":"apiserver"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`))
	srv.Respond(csrsPath, 200, list("CertificateSigningRequestList",
		`{"metadata":{"name":"csr-new"},"spec":{"request":"","signerName":"s","usages":[]}}`,
		`{"metadata":{"name":"csr-denied"},"spec":{"request":"","signerName":"s","usages":[]},"status":{"conditions":[{"type":"Denied","status":"True"}]}}`))
	return srv
}

func reach(t *testing.T, srv *clitest.APIServer) (probe.Result, error) {
	t.Helper()
	kc, err := kubeconfig.Load(srv.Kubeconfig)
	assert.NilError(t, err)
	var d probe.Result
	err = probe.Reach(context.Background(), kc, 10*time.Second, &d)
	return d, err
}

func TestReachReportsWhatTheSpokeSays(t *testing.T) {
	srv := spokeServer(t)
	d, err := reach(t, srv)
	assert.NilError(t, err)
	assert.Check(t, d.APIServerCert != nil, "the serving certificate is read from the TLS handshake")
	d.APIServerCert = nil
	assert.Check(t, is.DeepEqual(d, probe.Result{
		Nodes: 3, NodesReady: 1, NotReadyNodes: []string{"worker-0", "worker-1"},
		UnreadySystemPods: []string{"kube-proxy-x"}, PendingCSRs: []string{"csr-new"},
	}))
	for _, r := range srv.Requests() {
		assert.Check(t, strings.HasPrefix(r, "GET "), "the probe only reads: %s", r)
	}
}

// A list the credential may not make is noted, and the other checks still
// run; any other failure ends the probe with an error that names the list.
func TestReachNotesWhatItMayNotRead(t *testing.T) {
	srv := spokeServer(t)
	srv.Respond(podsPath, 403, `{"kind":"Status","status":"Failure","reason":"Forbidden","code":403}`)
	d, err := reach(t, srv)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(d.Unchecked, []string{"kube-system pods"}))
	assert.Check(t, is.DeepEqual(d.PendingCSRs, []string{"csr-new"}), "the CSRs are read after the pods")

	srv.Respond(csrsPath, 500, `{"kind":"Status","status":"Failure","reason":"InternalError","code":500}`)
	_, err = reach(t, srv)
	assert.Check(t, is.ErrorContains(err, "listing certificatesigningrequests"))
}
