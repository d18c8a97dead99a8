package cli

import (
	"bufio"
	"fmt"
	"strings"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/term"
)

// Confirm asks the user to confirm a destructive step. With yes it returns at
// once. It reads the answer only from a terminal: when stdin is not one it
// refuses rather than guess, and says to pass --yes.
func Confirm(streams genericiooptions.IOStreams, question string, yes bool) error {
	if yes {
		return nil
	}
	if !term.IsTerminal(streams.In) {
		return Refusedf("%s: confirmation needed but stdin is not a terminal; pass --yes to confirm", question)
	}
	return ConfirmFrom(streams, question)
}

// ConfirmFrom asks on streams.ErrOut and reads one line from streams.In.
// Only "y" or "yes" confirms.
func ConfirmFrom(streams genericiooptions.IOStreams, question string) error {
	fmt.Fprintf(streams.ErrOut, "%s [y/N]: ", question)
	line, _ := bufio.NewReader(streams.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return Refusedf("%s: not confirmed, nothing was changed", question)
}
