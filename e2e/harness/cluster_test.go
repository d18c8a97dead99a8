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

// exitedComponentBed is a cluster whose component has exited: a fake API
// server whose /readyz turns ok from the readyFrom-th question on (never,
// for 0), whose default ServiceAccount is stored already (the cluster was
// started before), and a fake kwokctl that records its arguments and, for
// `start cluster`, starts the component as kwokctl does, writing its pid file.
type exitedComponentBed struct {
	c                  *Cluster
	calls, pidFile     string
	startedBeforeReady atomic.Bool
}

func newExitedComponentBed(t *testing.T, component string, readyFrom int32) *exitedComponentBed {
	t.Helper()
	settle := componentSettle
	componentSettle = 3 * time.Second
	t.Cleanup(func() { componentSettle = settle })

	dir, bin := t.TempDir(), t.TempDir()
	clusterDir := filepath.Join(dir, "clusters", "c")
	pids := filepath.Join(clusterDir, "clusters", "c", "pids")
	assert.NilError(t, os.MkdirAll(pids, 0o755))
	exited := exec.Command("true")
	assert.NilError(t, exited.Run())
	b := &exitedComponentBed{calls: filepath.Join(clusterDir, "calls"), pidFile: filepath.Join(pids, component+".pid")}
	assert.NilError(t, os.WriteFile(b.pidFile, []byte(strconv.Itoa(exited.Process.Pid)), 0o644))
	script := "#!/bin/sh\necho \"$*\" >>\"$KWOK_WORKDIR/calls\"\nsleep 120 >/dev/null 2>&1 &\necho $! >" + b.pidFile + "\n"
	assert.NilError(t, os.WriteFile(filepath.Join(bin, "kwokctl"), []byte(script), 0o755))
	t.Cleanup(func() {
		if pid, err := readPid(b.pidFile); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	var readyz atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := os.Stat(b.calls)
		started := err == nil
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/readyz":
			if n := readyz.Add(1); readyFrom == 0 || n < readyFrom {
				b.startedBeforeReady.Store(started)
				http.Error(w, "[-]poststarthook/rbac/bootstrap-roles failed", http.StatusInternalServerError)
				return
			}
			_, _ = w.Write([]byte("ok"))
		case "/api/v1/namespaces/default/serviceaccounts/default":
			_, _ = w.Write([]byte(`{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"name":"default","namespace":"default"}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: ts.URL})
	assert.NilError(t, err)
	b.c = &Cluster{Name: "c", Kube: kube, env: &Env{Workdir: dir, Tools: Tools{Bin: bin}}}
	return b
}

// assertStartedOnceAndSettled checks that waitServing started the component
// again, once, and returned only after it had run past its own wait.
func (b *exitedComponentBed) assertStartedOnceAndSettled(t *testing.T) {
	t.Helper()
	got, err := os.ReadFile(b.calls)
	assert.NilError(t, err)
	assert.Equal(t, string(got), "start cluster --name c\n")
	info, err := os.Stat(b.pidFile)
	assert.NilError(t, err)
	assert.Assert(t, time.Since(info.ModTime()) >= componentSettle, "returned %s after the start, before the component was past its wait", time.Since(info.ModTime()))
	comps := b.c.env.components(b.c)
	assert.Assert(t, len(comps) == 1 && comps[0].running, "%+v", comps)
}

// On a loaded machine kube-controller-manager exits when the API server is
// not healthy within its first 10 s, and the default ServiceAccount never
// comes, or (after a restart, when it is already stored) the cluster runs on
// without the controllers. Waiting for the cluster starts the exited
// component again once the API server is ready (before that, it would only
// exit again), and returns once it has run past its own wait.
func TestWaitServingStartsAnExitedComponentOnceTheAPIServerIsReady(t *testing.T) {
	b := newExitedComponentBed(t, "kube-controller-manager", 3)

	assert.NilError(t, b.c.waitServing(context.Background(), time.Minute))

	b.assertStartedOnceAndSettled(t)
	assert.Assert(t, !b.startedBeforeReady.Load(), "started again before the API server was ready")
}

// An exited API server cannot report itself ready: it is started at once.
func TestWaitServingStartsAnExitedAPIServerAtOnce(t *testing.T) {
	b := newExitedComponentBed(t, "kube-apiserver", 0)

	assert.NilError(t, b.c.waitServing(context.Background(), time.Minute))

	b.assertStartedOnceAndSettled(t)
}
