package kubeconfig

import (
	"net/url"
	"strings"

	"github.com/spokekit/spokekit/internal/scrub"
)

const redacted = scrub.Redacted

// redactURL replaces the user information of a URL (https://user:pass@host)
// with REDACTED: a token may be given as the user name, too.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = url.User(redacted)
	return u.String()
}

// scrub is an error's message with the user information of the
// kubeconfig's server and proxy URLs removed, in the forms Go and client-go
// print it (user:pass@, user:***@, user@), also where no URL surrounds it,
// and then that of any URL (scrub.URLs).
func (k *Kubeconfig) scrub(err error) string {
	msg := err.Error()
	for _, c := range k.config.Clusters {
		for _, raw := range []string{c.Server, c.ProxyURL} {
			u, perr := url.Parse(raw)
			if perr != nil || u.User == nil {
				continue
			}
			name := u.User.Username()
			forms := []string{u.User.String() + "@", name + ":***@", name + "@"}
			if p, ok := u.User.Password(); ok {
				forms = append(forms, name+":"+p+"@")
			}
			for _, f := range forms {
				if f != "@" {
					msg = strings.ReplaceAll(msg, f, redacted+"@")
				}
			}
		}
	}
	return scrub.URLs(msg)
}
