package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/watchlist"

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
	var store cache.Store
	st := &waitState{what: what, last: "nothing observed yet", p: p}
	eval := func() (bool, error) {
		done, state, err := check(store.List())
		if err != nil {
			return false, err
		}
		st.observed(state)
		return done, nil
	}
	wctx, cancel := watchtools.ContextWithOptionalTimeout(ctx, timeout)
	defer cancel()
	rctx, refuse := context.WithCancelCause(wctx)
	defer refuse(nil)
	_, err := watchtools.UntilWithSync(rctx, refusable{cache.ToListerWatcherWithContext(lw), lw, refuse, st}, example,
		func(s cache.Store) (bool, error) { store = s; return eval() },
		func(watch.Event) (bool, error) { return eval() })
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
	if cause := context.Cause(rctx); denied(cause) {
		p.Done("%s: cannot follow", what)
		return fmt.Errorf("cannot follow %s (last state: %s): %w", what, last, cause)
	}
	if wait.Interrupted(err) || errors.Is(err, context.DeadlineExceeded) {
		// A wait that had what a deadline left (cli.Deadline) says it as the
		// user gave it: 15s, not 14.999995361s.
		shown := timeout.Round(100 * time.Millisecond)
		p.Done("%s: gave up after %s", what, shown)
		return exitcode.TimedOutError(fmt.Errorf("timed out after %s waiting for %s; last state: %s%s", shown, what, last, st.lastFailure()))
	}
	return fmt.Errorf("waiting for %s: %w", what, err)
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

// refusable passes a wait's list and watch requests through and ends the
// wait at the first one the server denies: the reflector would retry it,
// logging each try, until --timeout, and then exit 4 says that running the
// command again would finish it, which it would not.
type refusable struct {
	cache.ListerWatcherWithContext
	lw    cache.ListerWatcher
	stop  context.CancelCauseFunc
	state *waitState
}

func (r refusable) List(o metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), o)
}

func (r refusable) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return r.WatchWithContext(context.Background(), o)
}

func (r refusable) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	obj, err := r.ListerWatcherWithContext.ListWithContext(ctx, o)
	r.check("list", err)
	return obj, err
}

func (r refusable) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := r.ListerWatcherWithContext.WatchWithContext(ctx, o)
	r.check("watch", err)
	return w, err
}

// IsWatchListSemanticsUnSupported keeps what the wrapped source says to the
// reflector (a fake in a test cannot stream a watch list).
func (r refusable) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(r.lw)
}

func (r refusable) check(verb string, err error) {
	if denied(err) {
		r.stop(err)
		return
	}
	r.state.request(verb, err)
}

// denied is a request the server will refuse again however often it is
// tried: the user lacks the permission, or is not who the server knows.
func denied(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}

// Followed is an informer whose list and watch end at the first denial
// (see refusable): without it the reflector retries a denied request until
// the run's context ends, which without --timeout is never.
type Followed struct {
	inf  cache.SharedIndexInformer
	lost chan struct{}

	mu  sync.Mutex
	err error
}

// Follow guards inf; call it before inf starts.
func Follow(inf cache.SharedIndexInformer) (*Followed, error) {
	f := &Followed{inf: inf, lost: make(chan struct{})}
	err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if denied(err) {
			f.deny(err) // the command names it; client-go's log line would say it twice
			return
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	if err != nil {
		return nil, fmt.Errorf("guarding an informer: %w", err)
	}
	return f, nil
}

func (f *Followed) deny(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
		close(f.lost)
	}
}

// Synced waits until the informer has listed, or returns the denial of its
// list or watch, or the cause of ctx's end.
func (f *Followed) Synced(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-f.lost:
			cancel()
		case <-sctx.Done():
		}
	}()
	if cache.WaitForCacheSync(sctx.Done(), f.inf.HasSynced) {
		return nil
	}
	if err := f.Denied(); err != nil {
		return err
	}
	return context.Cause(ctx)
}

// Lost is closed when the server denies the informer's list or watch, at
// any time: a wait on what the informer follows ends there.
func (f *Followed) Lost() <-chan struct{} { return f.lost }

// Denied is the denial Lost reports (nil before one).
func (f *Followed) Denied() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
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
