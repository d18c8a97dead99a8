package kubeconfig

import (
	"fmt"
	"io"
	"net/http"
)

// maxResponseBytes bounds each response body a client built from a stored
// kubeconfig reads. Items and pages are bounded where lists are read, but
// one huge object, or a server that never stops sending, would still fill
// this machine's memory: the server is whoever wrote the Secret chose.
// The largest page the plugins ask for (500 objects) stays far below it.
var maxResponseBytes int64 = 64 << 20

// boundResponses wraps a transport so that reading more than
// maxResponseBytes of one response fails.
func boundResponses(rt http.RoundTripper) http.RoundTripper { return boundedTransport{rt} }

type boundedTransport struct{ next http.RoundTripper }

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, left: maxResponseBytes, host: req.URL.Host}
	return resp, nil
}

// WrappedRoundTripper lets client-go's transport helpers see through it.
func (t boundedTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// boundedBody fails a read once more than its bound was sent.
type boundedBody struct {
	io.ReadCloser
	left int64
	host string
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.tooLarge()
	}
	// One byte past the bound tells a body of exactly the bound from a larger one.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n + int(b.left), b.tooLarge()
	}
	return n, err
}

func (b *boundedBody) tooLarge() error {
	return fmt.Errorf("the response from %s is larger than %d bytes, the most a client of a stored kubeconfig reads", b.host, maxResponseBytes)
}
