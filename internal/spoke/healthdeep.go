package spoke

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/kubeconfig"
	"github.com/spokekit/spokekit/internal/scrub"
)

// readDeep reaches every spoke through its stored kubeconfig, maxConcurrent
// at a time, each within timeout from the read of its Secret on: a spoke
// that hangs holds one slot for timeout at most, never the others. It
// judges the credentials on the way, from the Secrets it reads one by one
// (the Role that grants each one alone allows that, and no list).
func (h *HubClient) readDeep(ctx context.Context, spokes []fleetconfig.Spoke, maxConcurrent int, timeout time.Duration, now time.Time) (map[string]CredentialHealth, map[string]*DeepHealth) {
	creds := make(map[string]CredentialHealth, len(spokes))
	deep := make(map[string]*DeepHealth, len(spokes))
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(maxConcurrent)
	for i := range spokes {
		s := &spokes[i]
		g.Go(func() error {
			c, d := h.deepSpoke(ctx, s, timeout, now)
			mu.Lock()
			defer mu.Unlock()
			creds[healthKey(s.Namespace, s.Name)], deep[healthKey(s.Namespace, s.Name)] = c, d
			return nil
		})
	}
	_ = g.Wait() // the goroutines return no error: each result says its own
	return creds, deep
}

// deepSpoke reads one spoke's Secret, judges the credential, and reaches
// the spoke with it when it is usable.
func (h *HubClient) deepSpoke(ctx context.Context, s *fleetconfig.Spoke, timeout time.Duration, now time.Time) (CredentialHealth, *DeepHealth) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var sec *corev1.Secret
	var readErr error
	if ref := s.Spec.Kubeconfig.SecretReference; ref != nil {
		sec, readErr = h.Kube.CoreV1().Secrets(s.Namespace).Get(cli.HideBodies(ctx), ref.Name, metav1.GetOptions{})
		if readErr != nil {
			sec = nil
		}
		if apierrors.IsNotFound(readErr) {
			readErr = nil
		}
	}
	cred, kc := assessCredential(s, sec, readErr, now)
	if kc == nil {
		return cred, &DeepHealth{Skipped: "no usable stored kubeconfig (credential " + cred.State + ")"}
	}
	d := &DeepHealth{}
	if err := probeSpoke(ctx, kc, timeout, d); err != nil {
		d.Error = scrub.URLs(err.Error())
		// The client's own timeout may fire a moment before the context's:
		// either way the spoke did not answer in time.
		var netErr net.Error
		if errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
			d.Error = fmt.Sprintf("no answer within --spoke-timeout %s", timeout)
		}
	}
	return cred, d
}

// probeSpoke asks the spoke's API server what --deep reports: its serving
// certificate (from the TLS handshake), nodes, kube-system pods and CSRs.
// What the credential may not list is noted in Unchecked; CSRs are only
// read, never approved.
func probeSpoke(ctx context.Context, kc *kubeconfig.Kubeconfig, timeout time.Duration, d *DeepHealth) error {
	cfg, err := kc.RESTConfig()
	if err != nil {
		return err
	}
	cfg.Timeout = timeout
	cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	if d.APIServerCert, err = servingCertificate(ctx, hc, cfg.Host); err != nil {
		return err
	}
	c, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return err
	}
	for _, check := range []struct {
		what string
		run  func() error
	}{
		{"nodes", func() error { return nodeHealth(ctx, c, d) }},
		{"kube-system pods", func() error { return systemPodHealth(ctx, c, d) }},
		{"certificatesigningrequests", func() error { return pendingCSRs(ctx, c, d) }},
	} {
		err := check.run()
		if apierrors.IsForbidden(err) {
			d.Unchecked = append(d.Unchecked, check.what)
			continue
		}
		if err != nil {
			return fmt.Errorf("listing %s: %w", check.what, err)
		}
	}
	return nil
}

// servingCertificate is when the certificate the API server presents
// expires (nil over plain http, which only --allow-insecure-kubeconfig-secrets lets through).
func servingCertificate(ctx context.Context, hc *http.Client, host string) (*metav1.Time, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(host, "/")+"/version", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	_ = resp.Body.Close() // any answer will do: the handshake is what is read
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		return nil, nil
	}
	return &metav1.Time{Time: resp.TLS.PeerCertificates[0].NotAfter}, nil
}

func nodeHealth(ctx context.Context, c kubernetes.Interface, d *DeepHealth) error {
	nodes := c.CoreV1().Nodes()
	return cli.EachInChunks(ctx, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return nodes.List(ctx, o) },
		cli.DefaultChunkSize, metav1.ListOptions{}, func(n *corev1.Node) error {
			d.Nodes++
			if nodeReady(n) {
				d.NodesReady++
			} else {
				d.NotReadyNodes = append(d.NotReadyNodes, n.Name)
			}
			return nil
		})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// systemPodHealth notes the kube-system pods that are neither done nor
// Running and Ready.
func systemPodHealth(ctx context.Context, c kubernetes.Interface, d *DeepHealth) error {
	pods := c.CoreV1().Pods(metav1.NamespaceSystem)
	return cli.EachInChunks(ctx, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pods.List(ctx, o) },
		cli.DefaultChunkSize, metav1.ListOptions{}, func(p *corev1.Pod) error {
			if p.Status.Phase != corev1.PodSucceeded && (p.Status.Phase != corev1.PodRunning || !podReady(p)) {
				d.UnreadySystemPods = append(d.UnreadySystemPods, p.Name)
			}
			return nil
		})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// pendingCSRs notes the CSRs nobody approved, denied or failed yet.
func pendingCSRs(ctx context.Context, c kubernetes.Interface, d *DeepHealth) error {
	csrs := c.CertificatesV1().CertificateSigningRequests()
	return cli.EachInChunks(ctx, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return csrs.List(ctx, o) },
		cli.DefaultChunkSize, metav1.ListOptions{}, func(r *certificatesv1.CertificateSigningRequest) error {
			if len(r.Status.Conditions) == 0 {
				d.PendingCSRs = append(d.PendingCSRs, r.Name)
			}
			return nil
		})
}
