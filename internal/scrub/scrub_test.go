package scrub

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestURLs(t *testing.T) {
	for in, want := range map[string]string{
		`Get "https://admin:s3cret-pass@10.0.0.1:6443/api?timeout=32s": EOF`: `Get "https://REDACTED@10.0.0.1:6443/api?timeout=32s": EOF`,
		`Get "https://admin:***@10.0.0.1/api": EOF`:                          `Get "https://REDACTED@10.0.0.1/api": EOF`,
		"dial http://TOKEN-0123456789@spoke.example:80 failed":               "dial http://REDACTED@spoke.example:80 failed",
		"url=HTTPS://a:b@c@host/x":                                           "url=HTTPS://REDACTED@host/x",
		"https://h/api?access_token=abc&limit=500&continue=xyz":              "https://h/api?access_token=REDACTED&limit=500&continue=xyz",
		"curl 'https://h/p?password=hunter2;x_auth_key=k&labelSelector=a'":   "curl 'https://h/p?password=REDACTED;x_auth_key=REDACTED&labelSelector=a'",
		"mail admin@example.com about https://h/x":                           "mail admin@example.com about https://h/x",
		"nothing to hide": "nothing to hide",
	} {
		assert.Check(t, is.Equal(URLs(in), want), in)
	}
}

// Error scrubs the message and keeps the error it wraps.
func TestError(t *testing.T) {
	cause := errors.New("refused")
	err := Error(fmt.Errorf(`Get "https://user:s3cr3t@host/x?token=t0ken": %w`, cause))
	assert.Check(t, is.Equal(err.Error(), `Get "https://REDACTED@host/x?token=REDACTED": refused`))
	assert.Check(t, errors.Is(err, cause))
	assert.Check(t, Error(nil) == nil)
}

// FuzzURLs: a password or token in a URL's user information never
// survives, whatever surrounds the URL, and scrubbing twice changes nothing.
func FuzzURLs(f *testing.F) {
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
		out := URLs(in)
		if len(userinfo) > 1 && !strings.Contains(before+after, userinfo) && strings.Contains(out, userinfo) {
			t.Fatalf("the user information %q survived in %q", userinfo, out)
		}
		if again := URLs(out); again != out {
			t.Fatalf("scrubbing twice changed %q to %q", out, again)
		}
	})
}
