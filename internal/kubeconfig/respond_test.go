package kubeconfig

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"k8s.io/client-go/rest"
)

// A response up to the bound is read whole; one byte more fails the read,
// with the bytes up to the bound only.
func TestStoredKubeconfigClientsBoundResponseBytes(t *testing.T) {
	old := maxResponseBytes
	maxResponseBytes = 1000
	t.Cleanup(func() { maxResponseBytes = old })
	size := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", size))
	}))
	t.Cleanup(srv.Close)
	hc := &http.Client{Transport: boundResponses(http.DefaultTransport)}
	get := func() (int, error) {
		resp, err := hc.Get(srv.URL)
		assert.NilError(t, err)
		b, err := io.ReadAll(resp.Body)
		assert.Check(t, resp.Body.Close())
		return len(b), err
	}
	size = 1000
	n, err := get()
	assert.NilError(t, err)
	assert.Equal(t, n, 1000)
	size = 1001
	n, err = get()
	assert.ErrorContains(t, err, "is larger than 1000 bytes")
	assert.Equal(t, n, 1000)
	size = 5 << 20
	_, err = get()
	assert.ErrorContains(t, err, "is larger than 1000 bytes")
}

// Every client built from a kubeconfig read from a cluster carries the bound.
func TestFromClusterConfigsBoundResponses(t *testing.T) {
	cfg := &rest.Config{Host: "https://spoke.example.com:6443"}
	assert.NilError(t, checkFromCluster(cfg, "secret ns/x"))
	assert.Assert(t, cfg.WrapTransport != nil)
	_, ok := cfg.WrapTransport(http.DefaultTransport).(boundedTransport)
	assert.Check(t, ok, "the transport is not bounded")
}
