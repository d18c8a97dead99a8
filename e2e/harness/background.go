package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Background is a kubectl command running in the background, for a test that
// acts on it while it runs (e.g. interrupts it).
type Background struct {
	cmd      *exec.Cmd
	mu       sync.Mutex
	stdout   bytes.Buffer
	stderr   bytes.Buffer
	changed  chan struct{} // closed and replaced at every write to stderr
	finished chan struct{}
	err      error
}

// StartKubectl starts the built kubectl with args and returns at once.
// kubectl execs the plugin in its own process, so a signal sent to it
// reaches the plugin as it would from a terminal.
func (c Command) StartKubectl(args ...string) (*Background, error) {
	cmd := c.command("", filepath.Join(c.Tools.Bin, "kubectl"), args...)
	s := &Background{cmd: cmd, changed: make(chan struct{}), finished: make(chan struct{})}
	cmd.Stdout = writerFunc(func(p []byte) { s.mu.Lock(); s.stdout.Write(p); s.mu.Unlock() })
	cmd.Stderr = writerFunc(func(p []byte) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.stderr.Write(p)
		close(s.changed)
		s.changed = make(chan struct{})
	})
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		s.err = cmd.Wait()
		close(s.finished)
	}()
	return s, nil
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// WaitStderr waits until the command has written text to stderr. It fails
// when the command ends first or ctx ends.
func (s *Background) WaitStderr(ctx context.Context, text string) error {
	for {
		s.mu.Lock()
		found, changed := strings.Contains(s.stderr.String(), text), s.changed
		s.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-changed:
		case <-s.finished:
			return fmt.Errorf("the command ended before writing %q to stderr:\n%s", text, s.result())
		case <-ctx.Done():
			return fmt.Errorf("waiting for %q on stderr: %w", text, ctx.Err())
		}
	}
}

// Stdout is what the command has written to stdout so far.
func (s *Background) Stdout() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stdout.String()
}

// Signal sends sig to the command.
func (s *Background) Signal(sig os.Signal) error { return s.cmd.Process.Signal(sig) }

// Wait waits for the command to end (killing it when ctx ends first) and
// returns what it printed and its exit code.
func (s *Background) Wait(ctx context.Context) (Result, error) {
	select {
	case <-s.finished:
	case <-ctx.Done():
		_ = s.cmd.Process.Kill()
		<-s.finished
		return s.result(), ctx.Err()
	}
	r := s.result()
	var exit *exec.ExitError
	if s.err != nil && !errors.As(s.err, &exit) {
		return r, s.err
	}
	return r, nil
}

func (s *Background) result() Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := Result{Stdout: s.stdout.String(), Stderr: s.stderr.String()}
	select {
	case <-s.finished:
		r.ExitCode = s.cmd.ProcessState.ExitCode()
	default:
		r.ExitCode = -1
	}
	return r
}
