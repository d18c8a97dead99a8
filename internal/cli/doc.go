// Package cli is the shared command plumbing of the spokekit plugins: the
// kubectl global flags, output printers, dry-run, the mapping of errors to
// exit codes (see internal/exitcode), access checks, prompts, progress and
// waits. Every plugin builds its commands on it, so the three binaries
// behave the same way.
package cli
