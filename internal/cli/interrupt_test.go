package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// blockingCommand is a leaf command that waits until its context ends, as a
// command's wait does, then fails with what the context says.
func blockingCommand(signal syscall.Signal) *cobra.Command {
	return &cobra.Command{
		Use: "block",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := syscall.Kill(os.Getpid(), signal); err != nil {
				return err
			}
			<-cmd.Context().Done()
			return errors.New("waiting for the thing: " + context.Cause(cmd.Context()).Error())
		},
	}
}

func TestSignalCancelsTheCommandAndExits130(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		streams, _, out, errOut := genericiooptions.NewTestIOStreams()
		root := testRoot(t, streams)
		root.AddCommand(blockingCommand(sig))
		assert.Equal(t, Execute(root, []string{"block"}, streams), 130, sig)
		assert.Equal(t, out.String(), "")
		assert.Check(t, is.Contains(errOut.String(), "waiting for the thing"), sig)
		assert.Check(t, is.Contains(errOut.String(), "interrupted"), sig)
	}
}

func TestExitCodeOfAnInterruption(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(interruption(os.Interrupt))
	assert.Equal(t, exitcode.Of(context.Cause(ctx)), exitcode.Interrupted)
	assert.ErrorContains(t, context.Cause(ctx), "interrupted by SIGINT")
}

func TestWaitForInterruptedIsNotATimeout(t *testing.T) {
	lw, _ := listWatch(*cm("Joining", "1"))
	ctx, cancel := context.WithCancelCause(context.Background())
	check := func(objs []any) (bool, string, error) {
		done, state, err := phaseCheck("Running")(objs)
		cancel(interruption(os.Interrupt))
		return done, state, err
	}
	err := WaitFor(ctx, "spoke x", lw, &corev1.ConfigMap{}, time.Hour, nil, check)
	assert.Equal(t, exitcode.Of(err), exitcode.Interrupted, "%v", err)
	assert.ErrorContains(t, err, "last state: phase Joining")
}

func TestConfirmStopsOnInterrupt(t *testing.T) {
	r, w, err := os.Pipe()
	assert.NilError(t, err)
	defer w.Close() //nolint:errcheck // the pipe is only there to never answer
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	streams.In = r
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(interruption(os.Interrupt))
	err = ConfirmFrom(ctx, streams, "Delete it")
	assert.Equal(t, exitcode.Of(err), exitcode.Interrupted)
	assert.ErrorContains(t, err, "nothing was changed")
}

// The first signal cancels the command; a second one kills the process at
// once, even when the command does not end (a hung request, a stuck
// clean-up). It runs in a child process, since the second signal kills it.
func TestSecondSignalKills(t *testing.T) {
	if os.Getenv("SPOKEKIT_SIGNAL_CHILD") == "1" {
		streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
		root := testRoot(t, streams)
		root.AddCommand(&cobra.Command{Use: "hang", RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(os.Stdout, "ready")
			<-cmd.Context().Done()
			fmt.Fprintln(os.Stdout, "cancelled")
			time.Sleep(time.Hour) // ignores the cancellation, as a hung call would
			return nil
		}})
		os.Exit(Execute(root, []string{"hang"}, streams))
	}
	child := exec.Command(os.Args[0], "-test.run=^TestSecondSignalKills$")
	child.Env = append(os.Environ(), "SPOKEKIT_SIGNAL_CHILD=1")
	stdout, err := child.StdoutPipe()
	assert.NilError(t, err)
	assert.NilError(t, child.Start())
	lines := bufio.NewScanner(stdout)
	waitLine := func(want string) {
		t.Helper()
		for lines.Scan() {
			if strings.TrimSpace(lines.Text()) == want {
				return
			}
		}
		t.Fatalf("the child never printed %q", want)
	}
	waitLine("ready")
	assert.NilError(t, child.Process.Signal(syscall.SIGINT))
	waitLine("cancelled")
	assert.NilError(t, child.Process.Signal(syscall.SIGINT))
	err = child.Wait()
	var exit *exec.ExitError
	assert.Assert(t, errors.As(err, &exit), "the child ended with %v", err)
	status := exit.Sys().(syscall.WaitStatus)
	assert.Check(t, status.Signaled() && status.Signal() == syscall.SIGINT, "killed by the second SIGINT: %v", status)
}

// Ctrl-C also ends requests sent without a context, such as discovery, on
// a server that does not answer.
func TestInterruptEndsRequestsWithoutAContext(t *testing.T) {
	hung := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		close(hung)
		<-r.Context().Done()
	}))
	defer server.Close()
	run, cancel := context.WithCancelCause(context.Background())
	cfg := endWithRun(&rest.Config{Host: server.URL}, func() context.Context { return run })
	result := make(chan error, 1)
	go func() {
		_, err := discovery.NewDiscoveryClientForConfigOrDie(cfg).ServerGroups()
		result <- err
	}()
	<-hung
	cancel(interruption(os.Interrupt))
	select {
	case err := <-result:
		assert.ErrorContains(t, err, "interrupted by SIGINT")
	case <-time.After(time.Minute): // only a guard against hanging the test run
		t.Fatal("the request did not end with the run")
	}
}

// Giving back a cordon after Ctrl-C still reaches the server.
func TestGiveBackOutlivesTheRun(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"APIVersions","versions":["v1"]}`))
	}))
	defer server.Close()
	run, cancel := context.WithCancelCause(context.Background())
	cancel(interruption(os.Interrupt))
	cfg := endWithRun(&rest.Config{Host: server.URL}, func() context.Context { return run })
	client := discovery.NewDiscoveryClientForConfigOrDie(cfg).RESTClient()
	ctx, stop := GiveBackContext(run)
	defer stop()
	assert.NilError(t, client.Get().AbsPath("/api").Do(ctx).Error())
	assert.ErrorContains(t, client.Get().AbsPath("/api").Do(context.Background()).Error(), "interrupted by SIGINT")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A request sent after Ctrl-C never leaves the process: the run's end is
// checked before sending, not only watched while the request is in flight.
func TestNoRequestLeavesAfterTheRunEnded(t *testing.T) {
	sent := 0
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent++
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
	})
	run, cancel := context.WithCancelCause(context.Background())
	cancel(interruption(syscall.SIGTERM))
	transport := &runBoundTransport{next: next, run: func() context.Context { return run }}
	req, err := http.NewRequest(http.MethodDelete, "https://hub.example/api/v1/namespaces/x", http.NoBody)
	assert.NilError(t, err)
	_, err = transport.RoundTrip(req) //nolint:bodyclose // refused before sending: there is no response
	assert.ErrorContains(t, err, "interrupted by SIGTERM")
	assert.Equal(t, sent, 0, "the request was sent after the run ended")
}
