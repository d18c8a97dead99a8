// Package exitcode holds the exit codes every spokekit command shares and
// the errors that carry them. It imports only the standard library, so any
// package (kubeconfig, values) can refuse with exit 3 without depending on
// the command plumbing in cli.
package exitcode

import (
	"errors"
	"fmt"
)

// Exit codes shared by every command. Scripts rely on them.
const (
	// OK means the job is done (or a dry-run plan was printed).
	OK = 0
	// Failed means the command failed.
	Failed = 1
	// Usage means the command line was wrong.
	Usage = 2
	// Refused means a preflight check refused the change; nothing was changed.
	Refused = 3
	// TimedOut means the change was made but the wait for it timed out;
	// running the command again finishes the job.
	TimedOut = 4
	// Interrupted means Ctrl-C or SIGTERM stopped the command: it printed
	// what it changed and gave back what it took (cordons) where it could;
	// running it again finishes or undoes the rest. 128+SIGINT, as shells say.
	Interrupted = 130
)

// Help is the paragraph on exit codes that ends the help of every plugin:
// the one place they are described.
const Help = "Exit codes: 0 done, 1 failed, 2 usage error, 3 refused by a check before anything was changed, " +
	"4 changed but the wait timed out (run the same command again to finish), " +
	"130 interrupted by Ctrl-C or SIGTERM (what was changed is printed, cordons are given back; run the same command again to finish)."

// ErrInterrupted is the cause of a command's context ended by Ctrl-C or
// SIGTERM. Errors that wrap it exit with Interrupted.
var ErrInterrupted = errors.New("interrupted")

// Error carries the exit code an error maps to.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// UsageErrorf reports a mistake in the command line (exit 2).
func UsageErrorf(format string, args ...any) error {
	return &Error{Code: Usage, Err: fmt.Errorf(format, args...)}
}

// RefusedError reports a preflight check that failed before anything was
// changed (exit 3).
func RefusedError(err error) error {
	return &Error{Code: Refused, Err: err}
}

// RefusedErrorf is RefusedError with a formatted message.
func RefusedErrorf(format string, args ...any) error {
	return RefusedError(fmt.Errorf(format, args...))
}

// IsRefused tells whether err is a refusal (exit 3).
func IsRefused(err error) bool { return Of(err) == Refused }

// TimedOutError reports a change that was made but whose wait ran out of
// time (exit 4).
func TimedOutError(err error) error {
	return &Error{Code: TimedOut, Err: err}
}

// Of returns the exit code for err: 0 for nil, 130 for an interruption
// anywhere in the chain, the code of an Error anywhere in the chain, and 1
// otherwise.
func Of(err error) int {
	if err == nil {
		return OK
	}
	if errors.Is(err, ErrInterrupted) {
		return Interrupted
	}
	var ee *Error
	if errors.As(err, &ee) {
		return ee.Code
	}
	return Failed
}
