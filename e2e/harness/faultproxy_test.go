package harness

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// fakeAPIServer counts the requests that reach it.
func fakeAPIServer(t *testing.T) (*Cluster, *atomic.Int32) {
	t.Helper()
	var reached atomic.Int32
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Add(1)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
	}))
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: ts.URL, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	path := filepath.Join(dir, "kubeconfig")
	assert.NilError(t, clientcmd.WriteToFile(*cfg, path))
	// The cluster's CA, where kwokctl keeps it: it signs the proxy's certificate.
	pki := filepath.Join(dir, "clusters", "c", "clusters", "c", "pki")
	assert.NilError(t, os.MkdirAll(pki, 0o700))
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	assert.NilError(t, err)
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "c-ca"}, key)
	assert.NilError(t, err)
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(filepath.Join(pki, "ca.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), 0o600))
	assert.NilError(t, os.WriteFile(filepath.Join(pki, "ca.key"), keyPEM, 0o600))
	return &Cluster{Name: "c", Kubeconfig: path, Config: &rest.Config{Host: ts.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, env: &Env{Workdir: dir}}, &reached
}

// client is an HTTP client that trusts the proxy, as its kubeconfig says.
func client(t *testing.T, p *FaultProxy) (*http.Client, string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
	assert.NilError(t, err)
	c, err := rest.HTTPClientFor(cfg)
	assert.NilError(t, err)
	return c, cfg.Host
}

func TestFaultProxy(t *testing.T) {
	c, reached := fakeAPIServer(t)
	p, err := c.StartFaultProxy(context.Background())
	assert.NilError(t, err)
	defer p.Close()
	hc, host := client(t, p)
	// Only a stalled request is given up on; the others get all the time a
	// loaded machine needs.
	do := func(method, path string) (int, error) {
		ctx := context.Background()
		if strings.Contains(path, "/nodes") {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
		}
		req, _ := http.NewRequestWithContext(ctx, method, host+path, http.NoBody)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close() //nolint:errcheck // the status is all that is read
		return resp.StatusCode, nil
	}

	// The second write to secrets fails with 503 and never reaches the server;
	// reads and other writes pass.
	f := p.Inject(&Fault{Method: IsWrite, PathContains: "/secrets/", Nth: 2, Action: Unavailable})
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/api/v1/namespaces/a/secrets/x", 200},
		{"PATCH", "/api/v1/namespaces/a/secrets/x", 200},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 200},
		{"PUT", "/api/v1/namespaces/a/secrets/x", 503},
		{"PUT", "/api/v1/namespaces/a/secrets/x", 200},
	} {
		code, err := do(tc.method, tc.path)
		assert.NilError(t, err)
		assert.Equal(t, code, tc.code, "%s %s", tc.method, tc.path)
	}
	assert.Equal(t, p.Fired(f), 1)
	assert.Equal(t, reached.Load(), int32(4))

	// A lost answer: the server acts, the client sees a broken connection.
	p.Clear()
	f = p.Inject(&Fault{Method: "DELETE", Action: LoseResponse})
	_, err = do("DELETE", "/api/v1/namespaces/a")
	assert.Assert(t, err != nil)
	assert.Equal(t, reached.Load(), int32(5))
	assert.Equal(t, p.Fired(f), 1)

	// A stall holds the request until the client gives up.
	p.Clear()
	f = p.Inject(&Fault{PathContains: "/nodes", Times: -1, Action: Stall})
	_, err = do("GET", "/api/v1/nodes")
	assert.Assert(t, err != nil)
	assert.Equal(t, reached.Load(), int32(5))
	_, err = do("GET", "/api/v1/nodes")
	assert.Assert(t, err != nil, "Times -1 keeps firing")
	assert.Equal(t, p.Fired(f), 2)
}

// A cluster kwokctl did not make has no CA key in the work directory: its
// proxy serves a self-signed certificate, which the proxy's kubeconfig trusts.
func TestFaultProxyWithoutTheClustersCA(t *testing.T) {
	c, reached := fakeAPIServer(t)
	assert.NilError(t, os.RemoveAll(filepath.Join(c.env.Workdir, "clusters")))
	p, err := c.StartFaultProxy(t.Context())
	assert.NilError(t, err)
	defer p.Close()
	hc, host := client(t, p)
	resp, err := hc.Get(host + "/api")
	assert.NilError(t, err)
	assert.NilError(t, resp.Body.Close())
	assert.Equal(t, reached.Load(), int32(1))
}
