package cli

import (
	"errors"
	"net"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// UnreachableError is a request to the plugin's own API server (the one the
// kubeconfig flags select) that found no server to talk to: the connection
// was refused, had no route, or the name did not resolve. Other clusters a
// command reaches (a spoke's kubeconfig) are not marked: not reaching them
// is the command's own finding.
type UnreachableError struct {
	Host string
	Err  error
}

func (e *UnreachableError) Error() string { return e.Err.Error() }
func (e *UnreachableError) Unwrap() error { return e.Err }

// markUnreachable makes the clients of c return an UnreachableError when the
// server cannot be reached.
func markUnreachable(c *rest.Config) *rest.Config {
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &unreachableTransport{next: rt} })
	return c
}

type unreachableTransport struct{ next http.RoundTripper }

func (t *unreachableTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	var op *net.OpError
	var dns *net.DNSError
	if err != nil && req.Context().Err() == nil && (errors.As(err, &op) || errors.As(err, &dns)) {
		return nil, &UnreachableError{Host: req.URL.Host, Err: err}
	}
	return resp, err
}

func (t *unreachableTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// explainAPIError says in words what a failure of the API server itself
// means, and the exit code it maps to: an API server that cannot be reached
// fails the command (exit 1, even where a check could not run), and one that
// answers "not found" for a whole kind does not serve it (no CRD), which is
// not the same as a missing object.
func explainAPIError(err error, code int, msg string) (int, string) {
	var ue *UnreachableError
	if errors.As(err, &ue) {
		return exitcode.Failed, "cannot reach the API server at " + ue.Host + ": " + msg +
			"; check the context (kubectl config current-context) and that the cluster is up"
	}
	var status apierrors.APIStatus
	if code == exitcode.Failed && errors.As(err, &status) && apierrors.IsNotFound(err) {
		if d := status.Status().Details; d == nil || d.Name == "" {
			return code, msg + "; the API server does not serve this kind of object: is its CRD installed, and is the context the right cluster?"
		}
	}
	return code, msg
}
