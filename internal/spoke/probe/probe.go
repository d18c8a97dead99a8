// Package probe reaches a spoke's own API server through a kubeconfig and
// says what health --deep reports of it: Ready nodes, kube-system pods not
// ready, pending CSRs and the serving certificate's expiry. It reads the
// spoke only, never the hub: what a kubeconfig is and where it came from
// (a Secret of the hub, judged first) is the caller's business.
package probe

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/kubeconfig"
)

// Result is what health --deep found on a spoke through its stored
// kubeconfig (Reach fills in what the spoke said).
type Result struct {
	// Skipped says why the spoke was not tried (no usable stored
	// kubeconfig); the caller says so.
	Skipped string `json:"skipped,omitempty"`
	// Error says why reaching it failed (timed out, refused); the caller
	// words it from Reach's error.
	Error             string       `json:"error,omitempty"`
	Nodes             int          `json:"nodes"`
	NodesReady        int          `json:"nodesReady"`
	NotReadyNodes     []string     `json:"notReadyNodes,omitempty"`
	UnreadySystemPods []string     `json:"unreadySystemPods,omitempty"`
	PendingCSRs       []string     `json:"pendingCSRs,omitempty"`
	APIServerCert     *metav1.Time `json:"apiServerCertificateExpires,omitempty"`
	// Unchecked names what the stored credential may not read there.
	Unchecked []string `json:"unchecked,omitempty"`
}

// Reach asks the spoke's API server what --deep reports: its serving
// certificate (from the TLS handshake), nodes, kube-system pods and CSRs.
// What the credential may not list is noted in Unchecked; CSRs are only
// read, never approved.
func Reach(ctx context.Context, kc *kubeconfig.Kubeconfig, timeout time.Duration, d *Result) error {
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(host, "/")+"/version", http.NoBody)
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

func nodeHealth(ctx context.Context, c kubernetes.Interface, d *Result) error {
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
func systemPodHealth(ctx context.Context, c kubernetes.Interface, d *Result) error {
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
func pendingCSRs(ctx context.Context, c kubernetes.Interface, d *Result) error {
	csrs := c.CertificatesV1().CertificateSigningRequests()
	return cli.EachInChunks(ctx, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return csrs.List(ctx, o) },
		cli.DefaultChunkSize, metav1.ListOptions{}, func(r *certificatesv1.CertificateSigningRequest) error {
			if len(r.Status.Conditions) == 0 {
				d.PendingCSRs = append(d.PendingCSRs, r.Name)
			}
			return nil
		})
}
