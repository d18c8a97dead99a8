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
		case unsafeRune(r):
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
		if r == utf8.RuneError || unsafeRune(r) {
			return true
		}
	}
	return false
}

// unsafeRune tells the characters a terminal acts on or that reorder what it
// shows: control characters (C0, DEL, C1) and bidirectional controls.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// escapeValues is a copy of an object's content with every string, map
// keys too, escaped to one line: what the text formats (name, jsonpath,
// custom-columns) print, value by value, so that the template's own
// newlines stay and a value's cannot fake a line.
func escapeValues(v any) any {
	switch v := v.(type) {
	case string:
		return escapeLine(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[escapeLine(k)] = escapeValues(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = escapeValues(x)
		}
		return out
	}
	return v
}

// escapeJSON writes the characters encoding/json leaves as they are (DEL,
// C1 controls, bidirectional controls) as \u escapes. In compact JSON they
// can only stand inside strings, where the escape means the same character:
// the value reads back as it was, and the YAML made of it (which refuses
// them raw) escapes them in turn.
func escapeJSON(data []byte) []byte {
	s := string(data)
	if !needsEscape(s, true) {
		return data
	}
	var b strings.Builder
	for _, r := range s {
		if unsafeRune(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return []byte(b.String())
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
