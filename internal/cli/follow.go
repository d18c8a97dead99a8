package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// Followed is an informer whose list and watch end at the first request
// the server denies: client-go's reflector retries every failed request,
// so without the guard a denied one is retried, and logged, until the run's
// context ends, which without --timeout is never. Every wait of the
// plugins and fleetdrain's informers follow their objects this way.
type Followed struct {
	inf  cache.SharedIndexInformer
	lost chan struct{}
	// shown, when set, is told how each list and watch ended (nil: it
	// succeeded), denials apart: a wait shows it on its progress line.
	shown func(verb string, err error)

	mu      sync.Mutex
	denial  error
	failure error // the last failed request shown
}

// Follow makes an informer of lw's objects (of example's type), guarded:
// call Informer to add handlers and run it.
func Follow(lw cache.ListerWatcher, example runtime.Object) (*Followed, error) {
	return newFollowed(lw, example, nil)
}

func newFollowed(lw cache.ListerWatcher, example runtime.Object, shown func(verb string, err error)) (*Followed, error) {
	f := &Followed{lost: make(chan struct{}), shown: shown}
	f.inf = cache.NewSharedIndexInformer(guarded{cache.ToListerWatcherWithContext(lw), lw, f}, example, 0, cache.Indexers{})
	err := f.inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		// What the command says already, client-go's log line would say twice.
		if denied(err) || f.said(err) {
			return
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	if err != nil {
		return nil, fmt.Errorf("guarding an informer: %w", err)
	}
	return f, nil
}

// Informer is the guarded informer.
func (f *Followed) Informer() cache.SharedIndexInformer { return f.inf }

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
	return f.denial
}

func (f *Followed) ended(verb string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case denied(err):
		if f.denial == nil {
			f.denial = err
			close(f.lost)
		}
	case f.shown != nil:
		f.failure = err
		f.shown(verb, err)
	}
}

// said is whether err (as the reflector passes it on, wrapped) is the
// failure shown last.
func (f *Followed) said(err error) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failure != nil && errors.Is(err, f.failure)
}

// denied is a request the server will refuse again however often it is
// tried: the user lacks the permission, or is not who the server knows.
func denied(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}

// guarded passes an informer's list and watch requests through and tells
// its Followed how each ended.
type guarded struct {
	cache.ListerWatcherWithContext
	lw cache.ListerWatcher
	f  *Followed
}

func (g guarded) List(o metav1.ListOptions) (runtime.Object, error) {
	return g.ListWithContext(context.Background(), o)
}

func (g guarded) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return g.WatchWithContext(context.Background(), o)
}

func (g guarded) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	obj, err := g.ListerWatcherWithContext.ListWithContext(ctx, o)
	g.f.ended("list", err)
	return obj, err
}

func (g guarded) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := g.ListerWatcherWithContext.WatchWithContext(ctx, o)
	g.f.ended("watch", err)
	return w, err
}

// IsWatchListSemanticsUnSupported keeps what the wrapped source says to the
// reflector (a fake in a test cannot stream a watch list).
func (g guarded) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(g.lw)
}

// Signal wakes every waiter at its next Fire (an informer's event, a
// budget's turn given back): take Wait's channel, look at the state, then
// wait on the channel, and no change is missed in between.
type Signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// NewSignal returns a Signal no event has fired yet.
func NewSignal() *Signal { return &Signal{ch: make(chan struct{})} }

// Wait is closed at the next Fire.
func (s *Signal) Wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

// Fire wakes every waiter.
func (s *Signal) Fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.ch)
	s.ch = make(chan struct{})
}

// Handler fires s at every event of an informer it is added to.
func (s *Signal) Handler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.Fire() },
		UpdateFunc: func(any, any) { s.Fire() },
		DeleteFunc: func(any) { s.Fire() },
	}
}
