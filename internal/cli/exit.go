// Package cli is the shared command plumbing of the spokekit plugins: the
// kubectl global flags, output printers, dry-run, exit codes, prompts,
// progress and waits. Every plugin builds its commands on it, so the three
// binaries behave the same way.
package cli

import (
	"errors"
	"fmt"
)

// Exit codes shared by every command. Scripts rely on them.
const (
	// ExitOK means the job is done (or a dry-run plan was printed).
	ExitOK = 0
	// ExitFailed means the command failed.
	ExitFailed = 1
	// ExitUsage means the command line was wrong.
	ExitUsage = 2
	// ExitRefused means a preflight check refused the change; nothing was changed.
	ExitRefused = 3
	// ExitTimedOut means the change was made but the wait for it timed out;
	// running the command again finishes the job.
	ExitTimedOut = 4
)

// ExitError carries the exit code an error maps to.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// UsageErrorf reports a mistake in the command line (exit 2).
func UsageErrorf(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// Refused reports a preflight check that failed before anything was changed (exit 3).
func Refused(err error) error {
	return &ExitError{Code: ExitRefused, Err: err}
}

// Refusedf is Refused with a formatted message.
func Refusedf(format string, args ...any) error {
	return Refused(fmt.Errorf(format, args...))
}

// IsRefused tells whether err is a refusal (exit 3).
func IsRefused(err error) bool { return ExitCode(err) == ExitRefused }

// TimedOut reports a change that was made but whose wait ran out of time (exit 4).
func TimedOut(err error) error {
	return &ExitError{Code: ExitTimedOut, Err: err}
}

// ExitCode returns the exit code for err: 0 for nil, the code of an
// ExitError anywhere in the chain, and 1 otherwise.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitFailed
}
