package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// Check looks at every object the wait watches and says whether the wait is
// over, and what the state is in words (shown as progress and in the error
// when time runs out).
type Check func(objs []any) (done bool, state string, err error)

// WaitFor watches the objects of lw (a list and watch, usually narrowed to
// one object by a field selector) until check says done, or until timeout
// (0: no limit). A timeout returns an exitcode.Error with code 4 naming the
// last observed state; the end of ctx (Ctrl-C) returns its cause,
// also naming it.
func WaitFor(ctx context.Context, what string, lw cache.ListerWatcher, example runtime.Object, timeout time.Duration, p *Progress, check Check) error {
	st := &waitState{what: what, last: "nothing observed yet", p: p}
	wctx, cancel := watchtools.ContextWithOptionalTimeout(ctx, timeout)
	defer cancel()
	err := watchUntil(wctx, lw, example, st, check)
	last := st.lastState()
	if err == nil {
		p.Done("%s: %s", what, last)
		return nil
	}
	// The run's own context ended (Ctrl-C): not a timeout of this wait.
	if ctx.Err() != nil {
		p.Done("%s: stopped waiting", what)
		return fmt.Errorf("stopped waiting for %s; last state: %s: %w", what, last, context.Cause(ctx))
	}
	if denied(err) {
		p.Done("%s: cannot follow", what)
		return fmt.Errorf("cannot follow %s (last state: %s): %w", what, last, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// A wait that had what a deadline left (cli.Deadline) says it as the
		// user gave it: 15s, not 14.999995361s.
		shown := timeout.Round(100 * time.Millisecond)
		p.Done("%s: gave up after %s", what, shown)
		return exitcode.TimedOutError(fmt.Errorf("timed out after %s waiting for %s; last state: %s%s", shown, what, last, st.lastFailure()))
	}
	// The live line ends before the command prints the error.
	p.Done("%s: %s", what, last)
	return fmt.Errorf("waiting for %s: %w", what, err)
}

// watchUntil runs a guarded informer of lw's objects and looks at them all with
// check once listed and again at every change, until check says done or
// fails, the server denies the list or watch, or ctx ends.
func watchUntil(ctx context.Context, lw cache.ListerWatcher, example runtime.Object, st *waitState, check Check) error {
	f, err := newFollowed(lw, example, st.request)
	if err != nil {
		return err
	}
	changed := NewSignal()
	if _, err := f.inf.AddEventHandler(changed.Handler()); err != nil {
		return fmt.Errorf("following changes: %w", err)
	}
	ictx, stop := context.WithCancel(ctx)
	var running sync.WaitGroup
	running.Go(func() { f.inf.RunWithContext(ictx) })
	defer running.Wait() // no informer outlives its wait
	defer stop()
	if err := f.Synced(ctx); err != nil {
		return err
	}
	for {
		next := changed.Wait()
		done, state, err := check(f.inf.GetStore().List())
		if err != nil {
			return err
		}
		st.observed(state)
		if done {
			return nil
		}
		select {
		case <-next:
		case <-f.Lost():
			return f.Denied()
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// waitState is what a wait has seen, shared by the check (the wait's
// goroutine) and the list and watch requests (the reflector's): the last
// state the check named, and the last request that failed since one
// succeeded. The reflector retries such a request (an overloaded server's
// handler timeout, a refused connection) without a word; the user sees why
// the state does not move, and the timeout names it.
type waitState struct {
	what string
	p    *Progress

	mu     sync.Mutex
	last   string
	failed string
	err    error
}

func (s *waitState) observed(state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = state
	s.show()
}

// request records how a list or watch ended; nil clears the failure.
func (s *waitState) request(verb string, err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return // the wait is ending: not the server's answer
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed, s.err = verb, err
	if err == nil {
		s.failed = ""
	}
	s.show()
}

func (s *waitState) show() {
	if s.err != nil {
		s.p.Update("%s: %s (%s failed, retrying: %v)", s.what, s.last, s.failed, s.err)
		return
	}
	s.p.Update("%s: %s", s.what, s.last)
}

func (s *waitState) lastState() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// lastFailure is the end of a timeout's message: the request that was
// failing when time ran out, if one was.
func (s *waitState) lastFailure() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		return ""
	}
	return fmt.Sprintf("; the last %s failed: %v", s.failed, s.err)
}

// ListWatch lists and watches the objects of ri that match the field and
// label selectors ("": any), the source every wait of the plugins follows.
func ListWatch(ri dynamic.ResourceInterface, fieldSelector, labelSelector string) cache.ListerWatcher {
	narrow := func(o metav1.ListOptions) metav1.ListOptions {
		o.FieldSelector, o.LabelSelector = fieldSelector, labelSelector
		return o
	}
	return ListThenWatch(
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return ri.List(ctx, narrow(o))
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return ri.Watch(ctx, narrow(o))
		})
}

// ListThenWatch is the source of every wait and informer of the plugins: it
// lists, then watches from what it listed, instead of streaming the initial
// state in a watch (client-go's watch-list, on by default). An API server
// whose watch cache lags etcd under load holds such a stream's end back
// for the watch's whole timeout, 5 to 10 minutes, with no error to show;
// a list answers or fails within a minute (and a wait shows the failure).
// The first list reads the latest state, as kubectl get does, not the
// watch cache's copy, which may be older.
func ListThenWatch(list cache.ListWithContextFunc, watchFn cache.WatchFuncWithContext) cache.ListerWatcher {
	return listThenWatch{&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if o.ResourceVersion == "0" {
				o.ResourceVersion = ""
			}
			return list(ctx, o)
		},
		WatchFuncWithContext: watchFn,
	}}
}

type listThenWatch struct{ *cache.ListWatch }

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// ValidateTimeout refuses a negative --timeout: 0 is the one way to say
// "no limit" in every command.
func ValidateTimeout(timeout time.Duration) error {
	if timeout < 0 {
		return exitcode.UsageErrorf("--timeout must not be negative (0: no limit), got %s", timeout)
	}
	return nil
}

// Deadline is one --timeout shared by the steps of a multi-step wait: each
// step waits for what is left of it.
type Deadline struct {
	end     time.Time
	timeout time.Duration
}

// NewDeadline starts the clock of timeout (0: no limit).
func NewDeadline(timeout time.Duration) Deadline {
	return Deadline{end: time.Now().Add(timeout), timeout: timeout}
}

// Left is what a step may wait: 0 (no limit) without a timeout, and never 0
// once the time is up, so the step times out at once instead of waiting
// forever.
func (d Deadline) Left() time.Duration {
	if d.timeout == 0 {
		return 0
	}
	if l := time.Until(d.end); l > 0 {
		return l
	}
	return time.Nanosecond
}
