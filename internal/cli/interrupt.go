package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// interruption is the cause recorded for sig, e.g. "interrupted by SIGINT".
func interruption(sig os.Signal) error {
	name := sig.String()
	if s, ok := sig.(syscall.Signal); ok {
		switch s {
		case syscall.SIGINT:
			name = "SIGINT"
		case syscall.SIGTERM:
			name = "SIGTERM"
		}
	}
	return fmt.Errorf("%w by %s", exitcode.ErrInterrupted, name)
}

// withInterrupt returns the one context of a run, cancelled with an
// exitcode.ErrInterrupted cause at the first SIGINT or SIGTERM. It stops
// listening before it cancels, so a second signal finds Go's default again
// and kills the process at once, whatever the command is doing.
// (signal.NotifyContext cancels first and stops listening only later.)
func withInterrupt(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-signals:
			signal.Stop(signals)
			cancel(interruption(sig))
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(signals)
		cancel(nil)
	}
}

// Interrupted tells whether ctx ended because of Ctrl-C or SIGTERM.
func Interrupted(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), exitcode.ErrInterrupted)
}

// giveBackTimeout bounds giving back what a command took after it was
// interrupted or failed.
const giveBackTimeout = 30 * time.Second

// GiveBackContext is a context for giving back what a command took (a
// cordon) after ctx ended, interrupted or timed out: it keeps ctx's values,
// not its end, and has a short deadline of its own.
// Its requests are not cut at the end of the run either (see endWithRun).
func GiveBackContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithValue(context.WithoutCancel(ctx), outlivesRun{}, true), giveBackTimeout)
}

// outlivesRun marks the context of a request that must not end with the run.
type outlivesRun struct{}

// endWithRun makes every request of the config end with the run (the
// command's context, read when the request is sent), also the requests
// client-go sends without a context of their own, such as discovery: after
// Ctrl-C nothing keeps waiting on a server that does not answer.
func endWithRun(c *rest.Config, run func() context.Context) *rest.Config {
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &runBoundTransport{next: rt, run: run} })
	return c
}

type runBoundTransport struct {
	next http.RoundTripper
	run  func() context.Context
}

func (t *runBoundTransport) RoundTrip(req *http.Request) (*http.Response, error) { //nolint:contextcheck // the run's context on purpose: binding requests to the run is this transport's job
	run := t.run()
	if run == nil || req.Context().Value(outlivesRun{}) != nil {
		return t.next.RoundTrip(req)
	}
	// AfterFunc runs in a goroutine of its own: a run that has already
	// ended must stop the request here, before it can reach the server.
	if run.Err() != nil {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper closes the body, also on error
		}
		return nil, context.Cause(run) //nolint:contextcheck // the run's cause on purpose: binding requests to the run is this transport's job
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	stop := context.AfterFunc(run, func() { cancel(context.Cause(run)) }) //nolint:contextcheck // as above: the run's end cancels the request
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		stop()
		cancel(nil)
		return nil, err
	}
	// A watch or a long body is read after RoundTrip returns: the request
	// stays bound to the run until its body is closed.
	resp.Body = &runBoundBody{ReadCloser: resp.Body, release: func() { stop(); cancel(nil) }}
	return resp, nil
}

func (t *runBoundTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

type runBoundBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *runBoundBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
