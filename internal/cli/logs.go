package cli

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// bodyLogLevel is the -v level from which client-go logs request and
// response bodies (and, from 9, curl commands). Below it, it logs the URL,
// status and headers, with Authorization masked.
const bodyLogLevel = 8

// HideBodies returns a context whose requests never log their bodies,
// whatever -v says: for every read or write of a Secret the user did not ask
// about, whose body carries credentials. client-go takes the logger of each
// request from its context (klog.FromContext), so lower levels still show
// the request line as for any other request.
func HideBodies(ctx context.Context) context.Context {
	sink := klog.FromContext(ctx).GetSink()
	if sink == nil {
		return klog.NewContext(ctx, logr.Discard())
	}
	// The wrapper is one more frame between client-go and the sink.
	if d, ok := sink.(logr.CallDepthLogSink); ok {
		sink = d.WithCallDepth(1)
	}
	return klog.NewContext(ctx, logr.New(cappedSink{sink}))
}

// cappedSink passes on what its sink logs below bodyLogLevel and drops the rest.
type cappedSink struct{ logr.LogSink }

func (s cappedSink) Enabled(level int) bool {
	return level < bodyLogLevel && s.LogSink.Enabled(level)
}

func (s cappedSink) Info(level int, msg string, kv ...any) {
	if s.Enabled(level) {
		s.LogSink.Info(level, msg, kv...)
	}
}

func (s cappedSink) WithValues(kv ...any) logr.LogSink {
	return cappedSink{s.LogSink.WithValues(kv...)}
}

func (s cappedSink) WithName(name string) logr.LogSink {
	return cappedSink{s.LogSink.WithName(name)}
}

// WithCallDepth keeps the caller shown in the log line the caller of
// client-go, not this wrapper.
func (s cappedSink) WithCallDepth(depth int) logr.LogSink {
	if d, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return cappedSink{d.WithCallDepth(depth)}
	}
	return s
}

// Init does nothing: the wrapped sink was set up by its own logger.
func (cappedSink) Init(logr.RuntimeInfo) {}
