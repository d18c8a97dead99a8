package cli

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/term"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// Confirm asks the user to confirm a destructive step. With yes it returns at
// once. It reads the answer only from a terminal: when stdin is not one it
// refuses rather than guess, and says to pass --yes.
func Confirm(ctx context.Context, streams genericiooptions.IOStreams, question string, yes bool) error {
	if yes {
		return nil
	}
	if !term.IsTerminal(streams.In) {
		return exitcode.RefusedErrorf("%s: confirmation needed but stdin is not a terminal; pass --yes to confirm", question)
	}
	return ConfirmFrom(ctx, streams, question)
}

// ConfirmFrom asks on streams.ErrOut and reads one line from streams.In.
// Only "y" or "yes" confirms. Ctrl-C while it waits for the answer ends it
// (the read itself cannot be cut short, so it is left behind).
func ConfirmFrom(ctx context.Context, streams genericiooptions.IOStreams, question string) error {
	fmt.Fprintf(streams.ErrOut, "%s [y/N]: ", question)
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(streams.In).ReadString('\n')
		answer <- line
	}()
	select {
	case line := <-answer:
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return nil
		}
		return exitcode.RefusedErrorf("%s: not confirmed, nothing was changed", question)
	case <-ctx.Done():
		fmt.Fprintln(streams.ErrOut)
		return fmt.Errorf("%s: no answer, nothing was changed: %w", question, context.Cause(ctx))
	}
}
