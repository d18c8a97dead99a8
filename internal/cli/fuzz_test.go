package cli

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzScrubURLs: a password or token in a URL's user information never
// survives, whatever surrounds the URL, and scrubbing twice changes nothing.
func FuzzScrubURLs(f *testing.F) {
	f.Add(`Get "`, "admin", "s3cret-pass", `": EOF`)
	f.Add("url=", "TOKEN-0123456789", "", " status=200")
	f.Add("curl 'x", "a@b", "p@ss:w/rd?#", "?access_token=abc'")
	f.Fuzz(func(t *testing.T, before, user, password, after string) {
		u := url.URL{Scheme: "https", Host: "spoke.example:6443", Path: "/api"}
		if password != "" {
			u.User = url.UserPassword(user, password)
		} else {
			u.User = url.User(user)
		}
		userinfo := strings.TrimSuffix(strings.TrimPrefix(u.String(), "https://"), "spoke.example:6443/api")
		in := before + " " + u.String() + " " + after
		out := ScrubURLs(in)
		if len(userinfo) > 1 && !strings.Contains(before+after, userinfo) && strings.Contains(out, userinfo) {
			t.Fatalf("the user information %q survived in %q", userinfo, out)
		}
		if again := ScrubURLs(out); again != out {
			t.Fatalf("scrubbing twice changed %q to %q", out, again)
		}
	})
}

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

// FuzzReadFile: a file is read whole exactly when it fits the bound.
func FuzzReadFile(f *testing.F) {
	f.Add([]byte("apiVersion: v1\n"), int64(15))
	f.Add([]byte("12345"), int64(4))
	f.Add([]byte{}, int64(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, limit int64) {
		if limit < 0 {
			return
		}
		path := filepath.Join(dir, "file")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, info, err := ReadFile(path, limit)
		if int64(len(data)) > limit {
			if err == nil {
				t.Fatalf("%d bytes read with a bound of %d", len(data), limit)
			}
			return
		}
		if err != nil || string(got) != string(data) || info.Size() != int64(len(data)) {
			t.Fatalf("a file of %d bytes, bound %d: %v", len(data), limit, err)
		}
	})
}
