package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/spokekit/spokekit/internal/scrub"
)

// EscapeTerminal makes text from a cluster (names, condition messages,
// annotations, error messages) safe to print on a terminal: ESC and CR as
// kubectl escapes them (printers.EscapeTerminal), every other control
// character (BEL, C1), and the bidirectional overrides that reorder what is
// shown, written out as \xNN or \uNNNN. Newlines and tabs stay. The
// credentials of URLs are scrubbed (scrub.URLs) on the way: this is the one
// filter of all terminal output.
func EscapeTerminal(s string) string { return escape(s, false) }

// escapeLine is EscapeTerminal for one line (a table cell, the progress
// line): newlines and tabs are written out too, so text cannot fake rows.
func escapeLine(s string) string { return escape(s, true) }

// escape escapes first and scrubs what is shown: scrubbing first would let
// a newline escaped to \n join what it had kept apart, and escaping the
// result again would scrub more (found by FuzzEscape).
func escape(s string, oneLine bool) string {
	return scrub.URLs(escapeControls(s, oneLine))
}

func escapeControls(s string, oneLine bool) string {
	if !needsEscape(s, oneLine) {
		return s
	}
	s = printers.EscapeTerminal(s)
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' && oneLine:
			b.WriteString(`\n`)
		case r == '\t' && oneLine:
			b.WriteString(`\t`)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsEscape(s string, oneLine bool) bool {
	for _, r := range s {
		if (r == '\n' || r == '\t') && !oneLine {
			continue
		}
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return true
		}
	}
	return false
}

// terminalWriter escapes everything written through it. Main puts it on
// stdout and stderr, so any text printed by a command is escaped; the
// machine formats (-o json, yaml, ...) and the live progress line write to
// the stream underneath (raw).
type terminalWriter struct{ w io.Writer }

func (t terminalWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, EscapeTerminal(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// escapingStreams puts a terminalWriter on the output streams.
func escapingStreams(s genericiooptions.IOStreams) genericiooptions.IOStreams {
	s.Out = terminalWriter{s.Out}
	s.ErrOut = terminalWriter{s.ErrOut}
	return s
}

// raw is the stream under a terminalWriter, for output that must stay as
// it is: machine formats, and the progress line's own control sequences.
func raw(w io.Writer) io.Writer {
	if t, ok := w.(terminalWriter); ok {
		return t.w
	}
	return w
}
