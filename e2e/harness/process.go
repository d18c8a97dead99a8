package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a long-running component of the test bed (an upstream
// controller or agent) started from a built binary. It logs to a file in the
// run's workdir; if it exits before Stop, the run fails (Env.Fail).
type Process struct {
	Name string
	// Log is the file its stdout and stderr go to.
	Log string

	env      *Env
	cmd      *exec.Cmd
	done     chan struct{}
	mu       sync.Mutex
	stopping bool
	err      error
}

// StartProcess starts program with args, its output into a log file named
// after name, and watches it until it is stopped.
func (e *Env) StartProcess(name string, env []string, program string, args ...string) (*Process, error) {
	dir := filepath.Join(e.Workdir, "logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := &Process{Name: name, Log: filepath.Join(dir, name+".log"), env: e, done: make(chan struct{})}
	log, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// A temp dir of its own inside the workdir, removed with it: OCM's
	// controllers (library-go) write a self-signed serving cert into
	// TMPDIR on every start and never delete it.
	tmp := filepath.Join(e.Workdir, "tmp", name)
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		_ = log.Close()
		return nil, err
	}
	p.cmd = exec.Command(program, args...)
	p.cmd.Env = append(append(os.Environ(), "TMPDIR="+tmp), env...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	// Its own process group, so a Ctrl-C of `go test` reaches it only through Stop.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	// For `make demo-down`: the processes of `make demo-up` outlive it.
	_ = os.WriteFile(filepath.Join(dir, name+".pid"), []byte(strconv.Itoa(p.cmd.Process.Pid)), 0o644)
	e.mu.Lock()
	e.processes = append(e.processes, p)
	e.mu.Unlock()
	go func() {
		err := p.cmd.Wait()
		_ = log.Close()
		p.mu.Lock()
		p.err = err
		stopping := p.stopping
		p.mu.Unlock()
		close(p.done)
		if !stopping {
			e.Fail(fmt.Errorf("%s exited unexpectedly (%w); the end of %s:\n%s", name, err, p.Log, p.Tail(20)))
		}
	}()
	return p, nil
}

// Running tells whether the process has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Stop ends the process (SIGTERM, then SIGKILL after 10 s) and waits for it.
func (p *Process) Stop() {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	if !p.Running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	data, err := os.ReadFile(p.Log)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Fail records an error of the test bed (a stand-in or component that went
// wrong): harness.Main fails the run for it even when every test passed.
func (e *Env) Fail(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failures = append(e.failures, err)
}

// Failures are the errors recorded with Fail.
func (e *Env) Failures() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return errors.Join(e.failures...)
}

// stopProcesses stops every process of the run, newest first.
func (e *Env) stopProcesses() {
	e.mu.Lock()
	procs := e.processes
	e.processes = nil
	e.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].Stop()
	}
}

// waitFor polls cond every 200 ms until it holds, fails, or ctx ends.
func waitFor(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %w)", what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// killLeftProcesses ends the processes an earlier run left in the workdir
// (their pid files), as `make demo-up` does on purpose.
func (e *Env) killLeftProcesses() {
	files, _ := filepath.Glob(filepath.Join(e.Workdir, "logs", "*.pid"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && perr == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = os.Remove(f)
	}
}
