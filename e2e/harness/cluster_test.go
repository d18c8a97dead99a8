package harness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// On a loaded machine kube-controller-manager exits when the API server is
// not healthy within its first 10 s, and the default ServiceAccount never
// comes, or (after a restart, when it is already stored) the cluster runs on
// without the controllers. Waiting for the cluster starts the exited
// component again once the API server is ready (before that, it would only
// exit again), and returns once it has run past its own wait.
func TestWaitServingStartsAnExitedComponentOnceTheAPIServerIsReady(t *testing.T) {
	settle := componentSettle
	componentSettle = 3 * time.Second
	t.Cleanup(func() { componentSettle = settle })

	dir, bin := t.TempDir(), t.TempDir()
	clusterDir := filepath.Join(dir, "clusters", "c")
	pids := filepath.Join(clusterDir, "clusters", "c", "pids")
	assert.NilError(t, os.MkdirAll(pids, 0o755))
	exited := exec.Command("true")
	assert.NilError(t, exited.Run())
	pidFile := filepath.Join(pids, "kube-controller-manager.pid")
	assert.NilError(t, os.WriteFile(pidFile, []byte(strconv.Itoa(exited.Process.Pid)), 0o644))
	// kwokctl: records its arguments and, for `start cluster`, starts the
	// exited component as kwokctl does, writing its pid file.
	script := "#!/bin/sh\necho \"$*\" >>\"$KWOK_WORKDIR/calls\"\nsleep 120 >/dev/null 2>&1 &\necho $! >" + pidFile + "\n"
	assert.NilError(t, os.WriteFile(filepath.Join(bin, "kwokctl"), []byte(script), 0o755))
	t.Cleanup(func() {
		if pid, err := readPid(pidFile); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	calls := filepath.Join(clusterDir, "calls")

	var readyz atomic.Int32
	var startedBeforeReady atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := os.Stat(calls)
		started := err == nil
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/readyz":
			// Ready from the third question on.
			if readyz.Add(1) < 3 {
				startedBeforeReady.Store(started)
				http.Error(w, "[-]poststarthook/rbac/bootstrap-roles failed", http.StatusInternalServerError)
				return
			}
			_, _ = w.Write([]byte("ok"))
		case "/api/v1/namespaces/default/serviceaccounts/default":
			// Stored already: the cluster was started before.
			_, _ = w.Write([]byte(`{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"name":"default","namespace":"default"}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: ts.URL})
	assert.NilError(t, err)
	c := &Cluster{Name: "c", Kube: kube, env: &Env{Workdir: dir, Tools: Tools{Bin: bin}}}

	assert.NilError(t, c.waitServing(context.Background(), time.Minute))

	got, err := os.ReadFile(calls)
	assert.NilError(t, err)
	assert.Equal(t, string(got), "start cluster --name c\n")
	assert.Assert(t, !startedBeforeReady.Load(), "started again before the API server was ready")
	info, err := os.Stat(pidFile)
	assert.NilError(t, err)
	assert.Assert(t, time.Since(info.ModTime()) >= componentSettle, "returned %s after the start, before the component was past its wait", time.Since(info.ModTime()))
	comps := c.env.components(c)
	assert.Assert(t, len(comps) == 1 && comps[0].running, "%+v", comps)
}
