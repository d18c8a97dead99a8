package kubeconfig

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// klusterletBootstrapSecret is where `clusteradm join` leaves the hub's
// bootstrap kubeconfig for the klusterlet in its Default mode; the agent
// keeps it for as long as the cluster is registered, to bootstrap again.
const klusterletBootstrapSecret = "bootstrap-hub-kubeconfig" //nolint:gosec // G101: a Secret's name, no credential

// HubEndpoint is a hub's API server as a kubeconfig names it: its URL and
// the CA bundle trusted for it.
type HubEndpoint struct {
	Server string
	CA     []byte
}

// RegisteredHub is the hub the cluster's klusterlet was joined to, read
// from the bootstrap kubeconfig in open-cluster-management-agent; nil when
// there is none (the cluster was never joined, or was unjoined). The join
// needs get on that Secret (JoinPermissions), so a refusal to read it is an
// error, as is a Secret holding no kubeconfig: the caller cannot tell. The
// kubeconfig is the cluster's data: it is parsed for its server and CA, never
// used to connect.
func (k *Kubeconfig) RegisteredHub(ctx context.Context) (*HubEndpoint, error) {
	c, err := k.Client()
	if err != nil {
		return nil, err
	}
	s, err := c.CoreV1().Secrets(klusterletAgentNamespace).Get(ctx, klusterletBootstrapSecret, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading secret %s/%s on %s as user %q: %s", klusterletAgentNamespace, klusterletBootstrapSecret, k.Server, k.User, k.scrub(err))
	}
	source := "secret " + klusterletAgentNamespace + "/" + klusterletBootstrapSecret + " on " + k.Server
	data, ok := s.Data["kubeconfig"]
	if !ok {
		return nil, fmt.Errorf("%s has no key kubeconfig", source)
	}
	cfg, err := decode(data, source)
	if err != nil {
		return nil, err
	}
	// The current context's cluster; without one, the only cluster.
	name := ""
	if ctx, ok := cfg.Contexts[cfg.CurrentContext]; ok && ctx != nil {
		name = ctx.Cluster
	} else if len(cfg.Clusters) == 1 {
		for n := range cfg.Clusters {
			name = n
		}
	}
	cluster, ok := cfg.Clusters[name]
	if !ok || cluster == nil || cluster.Server == "" {
		return nil, fmt.Errorf("%s names no hub server", source)
	}
	return &HubEndpoint{Server: redactURL(cluster.Server), CA: cluster.CertificateAuthorityData}, nil
}

// SameHub says whether e is one of the endpoints known for a hub: the same
// URL (scheme, host and default port compared as a client would), or a CA
// bundle sharing a certificate with one known, since the hub's own CA signs
// for every address it is reached at (spokes often reach it at another
// name than its operators do). A hub not shown to be the same is another.
func (e HubEndpoint) SameHub(known ...HubEndpoint) bool {
	for _, k := range known {
		if k.Server != "" && sameURL(e.Server, k.Server) {
			return true
		}
		if shareCertificate(e.CA, k.CA) {
			return true
		}
	}
	return false
}

func sameURL(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if errA != nil || errB != nil {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(hostPort(ua), hostPort(ub)) &&
		strings.TrimSuffix(ua.Path, "/") == strings.TrimSuffix(ub.Path, "/")
}

// hostPort is u's host with the scheme's default port written out.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if strings.EqualFold(u.Scheme, "http") {
		return u.Host + ":80"
	}
	return u.Host + ":443"
}

// shareCertificate says whether two CA bundles hold a certificate in
// common. A bundle may be PEM, or PEM encoded once more in base64 (as a
// Hub's spec.ca may be written).
func shareCertificate(a, b []byte) bool {
	ca, cb := certificates(a), certificates(b)
	for _, x := range ca {
		for _, y := range cb {
			if bytes.Equal(x.Raw, y.Raw) {
				return true
			}
		}
	}
	return false
}

func certificates(bundle []byte) []*x509.Certificate {
	if decoded, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(bundle))); err == nil {
		bundle = decoded
	}
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			return out
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil && block.Type == "CERTIFICATE" {
			out = append(out, c)
		}
	}
}
