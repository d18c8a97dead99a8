package cli

import (
	goflag "flag"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// serveVersion is an API server that answers /version.
func serveVersion(t *testing.T) *url.URL {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"gitVersion":"v1.37.0"}`)
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	assert.NilError(t, err)
	u.User = url.UserPassword("admin", "s3cret-pass")
	return u
}

// captureStderr sends what is written to os.Stderr (klog's output) to a
// file while the test runs and returns a function that reads it.
func captureStderr(t *testing.T) func() string {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	assert.NilError(t, err)
	old := os.Stderr
	os.Stderr = f
	t.Cleanup(func() { os.Stderr = old; _ = f.Close() })
	return func() string {
		klog.Flush()
		data, err := os.ReadFile(f.Name())
		assert.NilError(t, err)
		return string(data)
	}
}

// A password in the server URL never reaches what is printed or logged:
// version --show-server prints the URL, -v=6 logs every request's URL.
func TestServerPasswordIsNeverPrintedOrLogged(t *testing.T) {
	server := serveVersion(t)
	logs := captureStderr(t)
	t.Cleanup(func() {
		// Back to klog's defaults (-v=0, straight to stderr) for other tests.
		klog.InitFlags(goflag.NewFlagSet("reset", goflag.ContinueOnError))
		klog.SetOutput(nil)
	})
	for _, format := range []string{"", "json"} {
		streams, _, out, errOut := genericiooptions.NewTestIOStreams()
		args := []string{"version", "--show-server", "-v=6", "--server", server.String(), "--kubeconfig", emptyFile(t)}
		if format != "" {
			args = append(args, "-o", format)
		}
		assert.Equal(t, Execute(testRoot(t, streams), args, streams), exitcode.OK, errOut.String())
		assert.Check(t, is.Contains(out.String(), "REDACTED@127.0.0.1"), format)
		assert.Check(t, !strings.Contains(out.String()+errOut.String(), "s3cret-pass"), "%s: %s%s", format, out, errOut)
	}
	logged := logs()
	assert.Check(t, is.Contains(logged, "/version"), "the request was logged: %s", logged)
	assert.Check(t, !strings.Contains(logged, "s3cret-pass"), logged)
}

// Errors printed by Execute carry no credentials of URLs, whichever plugin
// or cluster they come from.
func TestExecuteScrubsErrors(t *testing.T) {
	streams, _, _, errOut := genericiooptions.NewTestIOStreams()
	root := testRoot(t, streams)
	args := []string{"version", "--show-server", "--server", "http://TOKEN-0123456789@127.0.0.1:1", "--kubeconfig", emptyFile(t)}
	assert.Equal(t, Execute(root, args, streams), exitcode.Failed)
	assert.Check(t, !strings.Contains(errOut.String(), "TOKEN-0123456789"), errOut.String())
	assert.Check(t, is.Contains(errOut.String(), "REDACTED@"), errOut.String())
}

// emptyFile is an empty kubeconfig, so only the flags choose the server.
func emptyFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	assert.NilError(t, os.WriteFile(p, nil, 0o600))
	return p
}
