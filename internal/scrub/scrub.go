// Package scrub removes credentials from what a command prints or logs:
// the user information of URLs and query parameters named for a secret.
package scrub

import (
	"regexp"
	"strings"
)

// Redacted replaces a credential in what is printed or logged.
const Redacted = "REDACTED"

var (
	// userinfo is the user information of a URL (scheme://user:pass@): up
	// to the last @ before the host ends, as URL parsers read it.
	userinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s@]*(?:@[^/?#\s@]*)*@`)
	// secretParam is a query parameter whose name says it holds a
	// credential (access_token, password, sig, X-Auth-Key, ...).
	secretParam = regexp.MustCompile(`(?i)([?&;][a-z0-9_.-]*(?:token|passw|pwd|secret|sig|credential|auth|key)[a-z0-9_.-]*=)[^&;#\s"'<>]*`)
)

// URLs replaces the user information of every URL in s (a password,
// or a token given as the user name) and the value of every query
// parameter named for a credential with REDACTED. Server URLs come from
// kubeconfigs the user, a Secret or Cluster API wrote, and reach errors,
// logs and tables: everything a command prints or logs goes through here.
func URLs(s string) string {
	if strings.Contains(s, "@") {
		s = userinfo.ReplaceAllString(s, "${1}"+Redacted+"@")
	}
	if strings.Contains(s, "=") {
		s = secretParam.ReplaceAllString(s, "${1}"+Redacted)
	}
	return s
}

// Error is err with its message scrubbed (URLs), for errors that carry a
// server's or a kubeconfig's text. It keeps err for errors.Is and As, and
// so its exit code: Unwrap gives err.
func Error(err error) error {
	if err == nil {
		return nil
	}
	return scrubbedError{err}
}

type scrubbedError struct{ err error }

func (e scrubbedError) Error() string { return URLs(e.err.Error()) }

func (e scrubbedError) Unwrap() error { return e.err }
