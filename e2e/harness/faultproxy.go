package harness

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
)

// FaultProxy is a reverse proxy on 127.0.0.1 in front of a cluster's API
// server that makes chosen requests fail the way a real outage does: the
// plugins talk to it through an ordinary kubeconfig and cannot tell it from
// the API server until a fault fires. It terminates TLS with a certificate of
// its own, signed by the cluster's CA (so it sees each request's method and
// path, and is that API server at another address, as a client that compares
// CAs tells) and forwards as the
// cluster's admin, with the admin client certificate: whoever reaches the
// proxy is admin, so it is for tests on the loopback interface only.
type FaultProxy struct {
	// Kubeconfig is a kubeconfig whose server is the proxy, with the context
	// of the cluster's own ("kwok-<name>").
	Kubeconfig string

	cluster *Cluster
	server  *http.Server
	proxy   *httputil.ReverseProxy

	mu     sync.Mutex
	faults []*Fault
}

// FaultAction is what a fault does to a matching request.
type FaultAction int

const (
	// Unavailable answers 503 without forwarding: the server never saw the request.
	Unavailable FaultAction = iota
	// LoseResponse forwards the request, lets the server act on it, and then
	// breaks the connection before the client reads the answer: the change
	// is made but the client only sees a broken connection.
	LoseResponse
	// Stall holds the request without forwarding until the client gives up.
	Stall
	// Interleave runs the fault's Interleave function (another writer's
	// change, say) and then forwards the request: a race the client loses.
	Interleave
)

// Fault makes requests fail: from the Nth request (1-based; 0 means the
// first) that matches Method, PathContains and UserAgent, Times requests in a
// row (0 means one; -1 means every one until Clear). UserAgent singles out
// one client among several that share the proxy (a plugin's is
// "kubectl-<plugin>/...").
type Fault struct {
	Method       string
	PathContains string
	UserAgent    string
	Nth          int
	Times        int
	Action       FaultAction
	// Interleave is what the Interleave action runs before forwarding.
	Interleave func()

	seen, fired int
}

// IsWrite matches every request that changes something.
const IsWrite = "WRITE"

func (f *Fault) matches(r *http.Request) bool {
	switch f.Method {
	case "":
	case IsWrite:
		if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
			return false
		}
		// A SelfSubjectAccessReview or SelfSubjectReview asks, it does not change.
		if strings.Contains(r.URL.Path, "/selfsubject") {
			return false
		}
	default:
		if r.Method != f.Method {
			return false
		}
	}
	return strings.Contains(r.URL.Path, f.PathContains) && strings.Contains(r.UserAgent(), f.UserAgent)
}

// StartFaultProxy starts a proxy in front of c that forwards everything until
// a fault is injected. It stops when ctx ends or on Close.
func (c *Cluster) StartFaultProxy(ctx context.Context) (*FaultProxy, error) {
	pair, caPEM, err := c.proxyCertificate()
	if err != nil {
		return nil, fmt.Errorf("fault proxy certificate: %w", err)
	}
	transport, err := rest.TransportFor(c.Config)
	if err != nil {
		return nil, fmt.Errorf("fault proxy transport to %s: %w", c.Name, err)
	}
	target, err := url.Parse(c.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("fault proxy: the server of %s: %w", c.Name, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fault proxy listener: %w", err)
	}
	p := &FaultProxy{cluster: c}
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     transport,
		FlushInterval: -1, // watches stream
	}
	p.server = &http.Server{Handler: p, TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequestClientCert}}

	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	c.env.mu.Lock()
	if c.env.fronts == nil {
		c.env.fronts = map[string]*Cluster{}
	}
	c.env.fronts[ln.Addr().String()] = c
	c.env.mu.Unlock()
	for _, cl := range cfg.Clusters {
		cl.Server = "https://" + ln.Addr().String()
		cl.CertificateAuthority, cl.CertificateAuthorityData, cl.InsecureSkipTLSVerify = "", caPEM, false
	}
	dir, err := os.MkdirTemp(c.env.Workdir, "faultproxy-")
	if err != nil {
		return nil, err
	}
	p.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p.Kubeconfig); err != nil {
		return nil, err
	}
	go func() { _ = p.server.ServeTLS(ln, "", "") }()
	go func() { <-ctx.Done(); p.Close() }()
	return p, nil
}

// proxyCertificate is a serving certificate for 127.0.0.1 signed by the
// cluster's own CA (kwokctl's), and that CA: the proxy is the API server at
// another address, as a load balancer in front of it would be, so the
// spoke's bootstrap kubeconfig names the same hub as one who reaches it
// through the proxy (kubectl spoke add compares CAs). A cluster kwokctl did
// not make (Cluster API's simulated workload clusters) has no CA key here:
// its proxy's certificate is self-signed.
func (c *Cluster) proxyCertificate() (tls.Certificate, []byte, error) {
	pki := filepath.Join(c.env.clusterDir(c.Name), "clusters", c.Name, "pki")
	caPEM, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if errors.Is(err, fs.ErrNotExist) {
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
		if err != nil {
			return tls.Certificate{}, nil, err
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		return pair, certPEM, err
	}
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	caKey, err := os.ReadFile(filepath.Join(pki, "ca.key"))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	ca, err := tls.X509KeyPair(caPEM, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: "spokekit-e2e-fault-proxy"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, caCert, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, caPEM, nil
}

// Inject adds a fault; it counts requests from now on.
func (p *FaultProxy) Inject(f *Fault) *Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, f)
	return f
}

// Clear removes every fault: the proxy forwards everything again.
func (p *FaultProxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = nil
}

// Fired is how many requests f has failed so far.
func (p *FaultProxy) Fired(f *Fault) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return f.fired
}

// Close stops the proxy and breaks the connections through it.
func (p *FaultProxy) Close() { _ = p.server.Close() }

// For returns a command whose KUBECONFIG is the proxy's.
func (p *FaultProxy) For(home string) Command {
	cmd := p.cluster.For(home)
	cmd.Env = []string{"KUBECONFIG=" + p.Kubeconfig}
	return cmd
}

// fault returns the action for r, if a fault fires on it.
func (p *FaultProxy) fault(r *http.Request) (*Fault, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.faults {
		if !f.matches(r) {
			continue
		}
		f.seen++
		nth := max(f.Nth, 1)
		times := f.Times
		if times == 0 {
			times = 1
		}
		if f.seen >= nth && (times < 0 || f.seen < nth+times) {
			f.fired++
			return f, true
		}
	}
	return nil, false
}

func (p *FaultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, ok := p.fault(r)
	if !ok {
		p.proxy.ServeHTTP(w, r)
		return
	}
	switch f.Action {
	case Interleave:
		f.Interleave()
		p.proxy.ServeHTTP(w, r)
	case Unavailable:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"fault proxy: the API server is unavailable","reason":"ServiceUnavailable","code":503}`)
	case LoseResponse:
		// Forward to a recorder, so the server acts, and answer nothing.
		p.proxy.ServeHTTP(discard{header: http.Header{}}, r)
		panic(http.ErrAbortHandler)
	case Stall:
		<-r.Context().Done()
		panic(http.ErrAbortHandler)
	}
}

// discard is a ResponseWriter that drops what the server answered.
type discard struct{ header http.Header }

func (d discard) Header() http.Header       { return d.header }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// WithFault starts a proxy in front of c with the one fault f for the test
// t. The proxy stops when t ends, and t fails if f never fired: a scenario
// whose fault never fires tests nothing.
func (c *Cluster) WithFault(ctx context.Context, t testing.TB, f *Fault) *FaultProxy {
	t.Helper()
	p, err := c.StartFaultProxy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.Inject(f)
	t.Cleanup(func() {
		p.Close()
		if p.Fired(f) == 0 {
			t.Errorf("the fault %+v never fired: the scenario tested nothing", *f)
		}
	})
	return p
}
