// Package clitest runs plugin commands in unit tests against a stand-in API
// server that records every request, to prove that a command refused its
// input before it sent anything.
package clitest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/spokekit/spokekit/internal/cli"
)

// APIServer remembers every request and answers it as told by Respond,
// or with 500.
type APIServer struct {
	// Kubeconfig is a kubeconfig file whose current context is this server.
	Kubeconfig string

	mu        sync.Mutex
	requests  []string
	bodies    map[string]string
	responses map[string]response
}

type response struct {
	code int
	body string
}

// Respond makes the server answer "METHOD /path" with code and a JSON body.
func (s *APIServer) Respond(request string, code int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responses[request] = response{code, body}
}

// NewAPIServer starts the server for the test's lifetime.
func NewAPIServer(t *testing.T) *APIServer {
	t.Helper()
	s := &APIServer{responses: map[string]response{}, bodies: map[string]string{}}
	// TLS, as a kubeconfig read from a Secret must use (internal/kubeconfig).
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.String())
		s.bodies[r.Method+" "+r.URL.Path] = string(body)
		resp, ok := s.responses[r.Method+" "+r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.Error(w, "the test's API server answers nothing", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.code)
		_, _ = w.Write([]byte(resp.body))
	}))
	t.Cleanup(srv.Close)
	s.Kubeconfig = writeKubeconfig(t, srv)
	return s
}

// UnreachableKubeconfig is a kubeconfig file whose server accepts no
// connection: it was started and closed again.
func UnreachableKubeconfig(t *testing.T) string {
	t.Helper()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	srv.Close()
	return writeKubeconfig(t, srv)
}

// RunCommand runs one command line of a plugin and returns its exit code,
// stdout and stderr.
func RunCommand(newRoot func(genericiooptions.IOStreams) *cobra.Command, args ...string) (code int, stdout, stderr string) {
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	code = cli.Execute(newRoot(streams), args, streams)
	return code, out.String(), errOut.String()
}

func writeKubeconfig(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kc := "apiVersion: v1\nkind: Config\ncurrent-context: test\n" +
		"clusters:\n- name: test\n  cluster:\n    server: " + srv.URL + "\n    certificate-authority-data: " + base64.StdEncoding.EncodeToString(ca) + "\n" +
		"users:\n- name: test\n  user:\n    token: test\n" +
		"contexts:\n- name: test\n  context:\n    cluster: test\n    user: test\n    namespace: default\n"
	assert.NilError(t, os.WriteFile(path, []byte(kc), 0o600))
	return path
}

// Body is the body of the last request "METHOD /path" (no query), so a
// test can check what a write sent: its resourceVersion precondition, say.
func (s *APIServer) Body(request string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[request]
}

// Requests are the requests received so far ("GET /api/v1/...").
func (s *APIServer) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// AssertExitBeforeAnyRequest runs each command line against a fresh
// APIServer and checks that it exits with code, want in its error, and sends no
// request at all: nothing was read, nothing changed.
func AssertExitBeforeAnyRequest(t *testing.T, newRoot func(genericiooptions.IOStreams) *cobra.Command, code int, want string, cmdLines ...[]string) {
	t.Helper()
	for _, args := range cmdLines {
		srv := NewAPIServer(t)
		streams, _, out, errOut := genericiooptions.NewTestIOStreams()
		got := cli.Execute(newRoot(streams), append(args, "--kubeconfig", srv.Kubeconfig), streams)
		assert.Check(t, is.Equal(got, code), "%q: stderr %s", args, errOut)
		assert.Check(t, is.Contains(errOut.String(), want), "%q", args)
		assert.Check(t, is.Equal(out.String(), ""), "%q", args)
		assert.Check(t, is.Len(srv.Requests(), 0), "%q sent requests", args)
	}
}

// ReportFormats are the -o values every command that prints objects or a
// report takes, as kubectl's get does.
var ReportFormats = []string{"json", "yaml", "name", "wide", "jsonpath=", "custom-columns="}

// AssertEveryOutputOffers checks that each command of the tree with an -o
// flag (version aside: it prints no object) offers every one of
// ReportFormats in its help.
func AssertEveryOutputOffers(t *testing.T, newRoot func(genericiooptions.IOStreams) *cobra.Command) {
	t.Helper()
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		f := c.LocalFlags().Lookup("output")
		if f == nil || c.Name() == "version" {
			return
		}
		for _, format := range ReportFormats {
			assert.Check(t, is.Contains(f.Usage, strings.TrimSuffix(format, "=")), "%s -o", c.CommandPath())
		}
	}
	walk(newRoot(streams))
}

// AssertPrintsInEveryFormat prints report as a command's -o does in each of
// ReportFormats (jsonpath and custom-columns reading the kind), and in the
// table when table is not nil, and checks that each prints something of it:
// json and yaml that parse, a line per subject for name.
func AssertPrintsInEveryFormat(t *testing.T, report any, table func() cli.Table) {
	t.Helper()
	formats := slices.Clone(ReportFormats)
	if table == nil {
		formats = slices.DeleteFunc(formats, func(f string) bool { return f == "wide" })
	} else {
		formats = append(formats, "")
	}
	for _, format := range formats {
		switch format {
		case "jsonpath=":
			format += "{.kind}"
		case "custom-columns=":
			format += "KIND:.kind"
		}
		o := cli.NewOutput()
		*o.PrintFlags.OutputFormat = format
		if !assert.Check(t, o.Validate(), "-o %s", format) {
			continue
		}
		var buf bytes.Buffer
		if !assert.Check(t, o.Print(&buf, report, table), "-o %s", format) {
			continue
		}
		out := buf.String()
		assert.Check(t, strings.TrimSpace(out) != "", "-o %s printed nothing", format)
		var v any
		switch format {
		case "json":
			assert.Check(t, json.Unmarshal(buf.Bytes(), &v), "-o json")
		case "yaml":
			assert.Check(t, yaml.Unmarshal(buf.Bytes(), &v), "-o yaml")
			assert.Check(t, is.Contains(out, "kind: "), "-o yaml")
		case "custom-columns=KIND:.kind":
			assert.Check(t, strings.HasPrefix(out, "KIND"), "-o custom-columns: %s", out)
		}
	}
}

// PrintName prints report as -o name does.
func PrintName(t *testing.T, report any) string {
	t.Helper()
	o := cli.NewOutput()
	*o.PrintFlags.OutputFormat = "name"
	var buf bytes.Buffer
	assert.NilError(t, o.Print(&buf, report, nil))
	return buf.String()
}
