package harness

import (
	"context"
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

// Kubectl runs kubectl ARGS as c would, within StepTimeout. A command
// that cannot start fails t; an exit code is part of the result.
func Kubectl(t testing.TB, c Command, args ...string) Result {
	t.Helper()
	r, err := c.Kubectl(Context(t, StepTimeout), args...)
	if err != nil {
		t.Fatalf("kubectl %v: %v", args, err)
	}
	return r
}
