// Package cli is the shared command plumbing of the spokekit plugins: the
// kubectl global flags, output printers, dry-run, exit codes, prompts,
// progress and waits. Every plugin builds its commands on it, so the three
// binaries behave the same way.
package cli

import (
	"errors"
	"fmt"
	"time"
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
	// ExitInterrupted means Ctrl-C or SIGTERM stopped the command: it printed
	// what it changed and gave back what it took (cordons) where it could;
	// running it again finishes or undoes the rest. 128+SIGINT, as shells say.
	ExitInterrupted = 130
)

// ExitCodesHelp is the paragraph on exit codes that ends the help of every
// plugin: the one place they are described.
const ExitCodesHelp = "Exit codes: 0 done, 1 failed, 2 usage error, 3 refused by a check before anything was changed, " +
	"4 changed but the wait timed out (run the same command again to finish), " +
	"130 interrupted by Ctrl-C or SIGTERM (what was changed is printed, cordons are given back; run the same command again to finish)."

// giveBackTimeout bounds giving back what a command took after it was
// interrupted or failed.
const giveBackTimeout = 30 * time.Second

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

// ExitCode returns the exit code for err: 0 for nil, 130 for an
// interruption anywhere in the chain, the code of an ExitError anywhere in
// the chain, and 1 otherwise.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, ErrInterrupted) {
		return ExitInterrupted
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitFailed
}
