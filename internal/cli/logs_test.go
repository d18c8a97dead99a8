package cli

import (
	"bytes"
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// verbose sends klog's output at -v=level to the returned buffer for the test.
func verbose(t *testing.T, level string) *bytes.Buffer {
	t.Helper()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	var buf bytes.Buffer
	assert.NilError(t, fs.Set("v", level))
	assert.NilError(t, fs.Set("logtostderr", "false"))
	assert.NilError(t, fs.Set("alsologtostderr", "false"))
	assert.NilError(t, fs.Set("stderrthreshold", "FATAL"))
	klog.SetOutput(&buf)
	t.Cleanup(func() {
		klog.Flush()
		_ = fs.Set("v", "0")
		_ = fs.Set("logtostderr", "true")
		klog.SetOutput(nil)
	})
	return &buf
}

func TestHideBodiesKeepsSecretsOutOfLogs(t *testing.T) {
	const token = "c2VjcmV0LXRva2VuLWluLWEtYm9keQ=="
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"spoke-1-kubeconfig","namespace":"fleet"},"data":{"kubeconfig":"` + token + `"}}`))
	}))
	defer srv.Close()
	logs := verbose(t, "10")
	// The transport reads -v when it is built, as the plugins' clients do.
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, BearerToken: "bearer-token-of-the-user"})
	assert.NilError(t, err)
	get := func(ctx context.Context) string {
		logs.Reset()
		_, err := kube.CoreV1().Secrets("fleet").Get(ctx, "spoke-1-kubeconfig", metav1.GetOptions{})
		assert.NilError(t, err)
		klog.Flush()
		return logs.String()
	}

	plain := get(context.Background())
	assert.Check(t, is.Contains(plain, token), "without HideBodies client-go logs the body at -v=10, so this test can fail")

	hidden := get(HideBodies(context.Background()))
	assert.Check(t, !strings.Contains(hidden, token), hidden)
	assert.Check(t, !strings.Contains(hidden, "bearer-token-of-the-user"), hidden)
	assert.Check(t, is.Contains(hidden, "/api/v1/namespaces/fleet/secrets/spoke-1-kubeconfig"), "the request line is still logged")
	assert.Check(t, is.Contains(hidden, "200 OK"), hidden)
}
