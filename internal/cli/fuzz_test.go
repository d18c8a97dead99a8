package cli

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzEscape: what is escaped for the terminal holds no control
// character, bidi override or broken UTF-8 (a line no newline or tab
// either), and escaping twice changes nothing.
func FuzzEscape(f *testing.F) {
	f.Add(hostile)
	f.Add("bad \xff byte\u0085\u2066x\u2069")
	f.Add("plain")
	f.Fuzz(func(t *testing.T, s string) {
		for _, oneLine := range []bool{false, true} {
			out := escape(s, oneLine)
			if !utf8.ValidString(out) {
				t.Fatalf("broken UTF-8 in %q", out)
			}
			for _, r := range out {
				if (r == '\n' || r == '\t') && !oneLine {
					continue
				}
				if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
					t.Fatalf("%q escaped (one line: %v) still holds %U: %q", s, oneLine, r, out)
				}
			}
			if again := escape(out, oneLine); again != out {
				t.Fatalf("escaping twice changed %q to %q", out, again)
			}
		}
	})
}
