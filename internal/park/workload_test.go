package park

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/scrub"
)

// stalledServer accepts requests and never answers them (until the client
// gives up, or 10 s pass, so that a test of code that does not give up
// fails instead of hanging).
func stalledServer(t *testing.T, tls bool) *httptest.Server {
	t.Helper()
	h := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	srv := httptest.NewUnstartedServer(h)
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

// platformServedBy is a platform with the three-pool Cluster app whose
// kubeconfig Secret, as Cluster API writes it, points at srv.
func platformServedBy(t *testing.T, srv *httptest.Server) *Platform {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	p, _ := fakePlatform(t, threePools(), nil)
	_, err := p.Kube.CoreV1().Secrets("dynamo-prod").Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: capi.KubeconfigSecretName("app"), Namespace: "dynamo-prod"},
		Data:       map[string][]byte{capi.KubeconfigSecretKey: []byte(kubeconfigFor(srv.URL, ca))},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	return p
}

func kubeconfigFor(server string, ca []byte) string {
	caLine := ""
	if ca != nil {
		caLine = "\n    certificate-authority-data: " + base64.StdEncoding.EncodeToString(ca)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: app
  cluster:
    server: %s%s
users:
- name: app
  user:
    token: abc
contexts:
- name: app
  context: {cluster: app, user: app}
current-context: app
`, server, caLine)
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	assert.NilError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// park status on a workload API server that accepts and never answers: the
// cluster's view says it was not checked, within the per-request timeout;
// before, status hung as long as the server did.
func TestStatusGivesUpOnAStalledCluster(t *testing.T) {
	srv := stalledServer(t, false)
	p, _ := fakePlatform(t, threePools(), nil)
	p.WorkloadTimeout = 200 * time.Millisecond
	o := &StatusOptions{Name: "app", ClusterKubeconfig: writeFile(t, kubeconfigFor(srv.URL, nil))}
	start := time.Now()
	view, err := o.clusterView(context.Background(), p)
	assert.NilError(t, err)
	assert.Check(t, time.Since(start) < 5*time.Second, "took %s", time.Since(start))
	assert.Check(t, is.Contains(view.Error, "not checked: timed out"))
}

// resume --wait on a workload API server that stalls: the node check gives
// up within what --timeout leaves (exit 4, "not checked: timed out"), not
// after the server's own time; before, it ran past --timeout.
func TestResumeWaitOnAStalledClusterEndsWithItsTimeout(t *testing.T) {
	srv := stalledServer(t, true)
	p := platformServedBy(t, srv)
	o := &ResumeOptions{changeOptions: changeOptions{Name: "app", Namespace: "dynamo-prod", progress: cli.NewProgress(io.Discard)}}
	start := time.Now()
	err := o.waitNodesReady(context.Background(), p, []string{"app-md-0-a"}, 300*time.Millisecond)
	assert.Check(t, time.Since(start) < 5*time.Second, "took %s", time.Since(start))
	assert.Equal(t, exitcode.Of(err), exitcode.TimedOut, "%v", err)
	assert.ErrorContains(t, err, "not checked: timed out")
}

// A token kept as a URL's user information (http://TOKEN@host) never
// reaches the terminal through an error from the workload cluster.
func TestWorkloadErrorsAreScrubbed(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	server := strings.Replace(closed.URL, "http://", "http://s3cr3t-token@", 1)
	p, _ := fakePlatform(t, threePools(), nil)
	o := &StatusOptions{Name: "app", ClusterKubeconfig: writeFile(t, kubeconfigFor(server, nil))}
	view, err := o.clusterView(context.Background(), p)
	assert.NilError(t, err)
	assert.Check(t, view.Error != "", "the closed server is an error")
	assert.Check(t, !strings.Contains(view.Error, "s3cr3t"), view.Error)

	// A kubeconfig the loader refuses is returned scrubbed: status exits 3.
	refused := scrub.Error(exitcode.RefusedErrorf("http://s3cr3t@x"))
	assert.Equal(t, exitcode.Of(refused), exitcode.Refused, "the exit code is kept")
}

// The forms of a credential in a URL that park's own scrubber (before it
// used internal/scrub) let through, a query parameter named for a token and
// user information holding an @, never reach park status's view either: its
// -o json prints the view's error as it is, without the terminal's
// scrubbing.
func TestWorkloadErrorsAreScrubbedInEveryURLForm(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,`+
			`"message":"denied: log in at https://idp.example/login?access_token=s3cr3t-query&x=1 or https://admin:p@s3cr3t-at@idp.example/"}`)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	p, _ := fakePlatform(t, threePools(), nil)
	o := &StatusOptions{Name: "app", ClusterKubeconfig: writeFile(t, kubeconfigFor(srv.URL, ca))}
	view, err := o.clusterView(context.Background(), p)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(view.Error, "denied: log in at https://idp.example/login?access_token=REDACTED&x=1"))
	out := cli.NewOutput()
	*out.PrintFlags.OutputFormat = "json"
	var buf strings.Builder
	assert.NilError(t, out.Print(&buf, StatusReport{ReportMeta: api.NewReportMeta("ParkStatus", "app"), Cluster: view}, nil))
	for _, secret := range []string{"s3cr3t-query", "s3cr3t-at"} {
		assert.Check(t, !strings.Contains(buf.String(), secret), "%s leaked: %s", secret, buf.String())
	}
}

// After park --wait, a workload list the cluster refuses is said, never
// counted as none (it read "0 Deployment(s)/StatefulSet(s) kept").
func TestSurvivorsSayWhatWasNotCounted(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, "persistentvolumeclaims") {
			fmt.Fprint(w, `{"kind":"PersistentVolumeClaimList","apiVersion":"v1","items":[]}`)
			return
		}
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"forbidden"}`)
	}))
	t.Cleanup(srv.Close)
	p := platformServedBy(t, srv)
	o := &ParkOptions{changeOptions: changeOptions{Name: "app", Namespace: "dynamo-prod"}}
	s := o.survivors(context.Background(), p, nil, 0)
	assert.Equal(t, s.Unread, "")
	assert.Check(t, is.Contains(s.WorkloadsUncounted, "Deployments: forbidden"))
	assert.Check(t, is.Contains(s.WorkloadsUncounted, "StatefulSets: forbidden"))
}
