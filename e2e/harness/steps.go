package harness

import (
	"context"
	"strings"
	"testing"
	"time"
)

// StepTimeout bounds one step of a test that says no other bound: one
// kubectl run, one API call, one wait.
const StepTimeout = 5 * time.Minute

// Context is the context of one step of t: it ends after d, or with t.
func Context(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

// Kubectl runs kubectl ARGS as c would, within stepBound(args). A command
// that cannot start fails t; an exit code is part of the result.
func Kubectl(t testing.TB, c Command, args ...string) Result {
	t.Helper()
	r, err := c.Kubectl(Context(t, stepBound(args)), args...)
	if err != nil {
		t.Fatalf("kubectl %v: %v", args, err)
	}
	return r
}

// stepBound is StepTimeout, or for a command given a --timeout of its own,
// that timeout and StepTimeout more: the harness must not kill a command
// before its own limit ends it, or the test sees "context deadline
// exceeded" instead of the exit code and output it asserts. A bulk run's
// --timeout is each cluster's, so its whole run takes longer; the extra
// StepTimeout covers the clusters that wait for a slot.
func stepBound(args []string) time.Duration {
	for i, a := range args {
		var v string
		switch {
		case strings.HasPrefix(a, "--timeout="):
			v = strings.TrimPrefix(a, "--timeout=")
		case a == "--timeout" && i+1 < len(args):
			v = args[i+1]
		default:
			continue
		}
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return d + StepTimeout
		}
	}
	return StepTimeout
}
