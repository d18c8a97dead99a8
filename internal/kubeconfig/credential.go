// Package kubeconfig checks the kubeconfig a hub keeps for a spoke: that it
// names a context, carries long-lived credentials, reaches the cluster and is
// allowed what the join needs; that a replacement reaches the same cluster.
// It also minifies a kubeconfig to its one context and redacts it for printing.
//
// Kubeconfig files the user names are loaded with Load; kubeconfigs read
// from a cluster only with FromSecret, which refuses any that would run a
// program or read a local file.
package kubeconfig

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/spokekit/spokekit/internal/clientrate"
)

// DefaultMinLifetime is how long a credential must stay valid to be stored
// on the hub: the hub uses it again at removal time, maybe a year later.
const DefaultMinLifetime = 365 * 24 * time.Hour

// Kubeconfig is a parsed kubeconfig reduced to its current context, which
// names no local file (Load and FromSecret refuse those).
type Kubeconfig struct {
	config *clientcmdapi.Config
	// source names where it came from (a file, a secret), for messages.
	source string
	// fromCluster marks a kubeconfig read from a cluster (FromSecret).
	fromCluster bool
	// Context, Cluster and User name what the current context selects;
	// Server is its server URL for messages (any user:password@ redacted).
	Context, Cluster, User, Server string
}

// Credential says what kind of credential a kubeconfig carries and until when
// it is valid (nil when it does not expire).
type Credential struct {
	Kind    string     `json:"kind"`
	Expires *time.Time `json:"expires,omitempty"`
}

// ExpiryString is the expiry in words for tables.
func (c Credential) ExpiryString() string {
	if c.Expires == nil {
		return "never"
	}
	return c.Expires.UTC().Format(time.RFC3339)
}

func fromConfig(cfg *clientcmdapi.Config, source string) (*Kubeconfig, error) {
	if cfg.CurrentContext == "" {
		return nil, fmt.Errorf("%s has no current-context: set one with `kubectl config use-context --kubeconfig %s NAME`", source, source)
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok || ctx == nil {
		return nil, fmt.Errorf("%s: current-context %q is not defined in the file", source, cfg.CurrentContext)
	}
	cluster, ok := cfg.Clusters[ctx.Cluster]
	if !ok || cluster == nil || cluster.Server == "" {
		return nil, fmt.Errorf("%s: context %q names cluster %q, which is not defined or has no server", source, cfg.CurrentContext, ctx.Cluster)
	}
	if u, ok := cfg.AuthInfos[ctx.AuthInfo]; !ok || u == nil {
		return nil, fmt.Errorf("%s: context %q names user %q, which is not defined", source, cfg.CurrentContext, ctx.AuthInfo)
	}
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return &Kubeconfig{config: cfg, source: source, Context: cfg.CurrentContext, Cluster: ctx.Cluster, User: ctx.AuthInfo, Server: redactURL(cluster.Server)}, nil
}

func (k *Kubeconfig) user() *clientcmdapi.AuthInfo { return k.config.AuthInfos[k.User] }

// CA is the certificate authority data the kubeconfig trusts for its server.
func (k *Kubeconfig) CA() []byte { return k.config.Clusters[k.Cluster].CertificateAuthorityData }

// Bytes is the minified kubeconfig, to store in the spoke's secret.
func (k *Kubeconfig) Bytes() ([]byte, error) {
	return clientcmd.Write(*k.config)
}

// Redacted is the kubeconfig with every secret replaced, for dry-run output.
func (k *Kubeconfig) Redacted() ([]byte, error) {
	c := k.config.DeepCopy()
	clientcmdapi.ShortenConfig(c)
	for _, u := range c.AuthInfos {
		if u.Token != "" {
			u.Token = redacted
		}
		if u.Password != "" {
			u.Password = redacted
		}
	}
	for _, cl := range c.Clusters {
		cl.Server = redactURL(cl.Server)
		cl.ProxyURL = redactURL(cl.ProxyURL)
	}
	return clientcmd.Write(*c)
}

// RESTConfig is a client configuration for the kubeconfig's cluster, at
// the plugins' request rate.
func (k *Kubeconfig) RESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.NewDefaultClientConfig(*k.config, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("building a client for %s: %s", k.Server, k.scrub(err))
	}
	if k.fromCluster {
		if err := checkFromCluster(cfg, k.source); err != nil {
			return nil, err
		}
	}
	return clientrate.Set(cfg), nil
}

// Credential checks that the kubeconfig carries a credential the hub can keep
// using for at least minLifetime after now, and says which one it is. The
// error says why a credential is not fit to be stored.
func (k *Kubeconfig) Credential(now time.Time, minLifetime time.Duration) (Credential, error) {
	u := k.user()
	switch {
	case u.Exec != nil:
		return Credential{}, fmt.Errorf("user %q runs the exec plugin %q to get a token: the hub cannot run it, and its tokens are short-lived; use a service-account token or a client certificate", k.User, u.Exec.Command)
	case u.AuthProvider != nil:
		return Credential{}, fmt.Errorf("user %q uses the auth-provider %q, whose tokens are short-lived and refreshed on the client; use a service-account token or a client certificate", k.User, u.AuthProvider.Name)
	}
	var c Credential
	switch {
	case len(u.ClientCertificateData) > 0:
		notAfter, err := certNotAfter(u.ClientCertificateData)
		if err != nil {
			return Credential{}, fmt.Errorf("user %q: %w", k.User, err)
		}
		c = Credential{Kind: "client certificate", Expires: &notAfter}
	case u.Token != "":
		c = Credential{Kind: "token"}
		if exp, ok := jwtExpiry(u.Token); ok {
			c.Expires = &exp
		}
	case u.Username != "":
		c = Credential{Kind: "basic auth"}
	default:
		return Credential{}, fmt.Errorf("user %q has no credential (no client certificate, token or password)", k.User)
	}
	if c.Expires != nil && c.Expires.Before(now.Add(minLifetime)) {
		left := "expired " + now.Sub(*c.Expires).Round(time.Second).String() + " ago"
		if c.Expires.After(now) {
			left = "expires in " + c.Expires.Sub(now).Round(time.Second).String()
		}
		return c, fmt.Errorf("the %s of user %q %s (at %s), sooner than --min-credential-lifetime %s: use a long-lived credential", c.Kind, k.User, left, c.Expires.UTC().Format(time.RFC3339), minLifetime)
	}
	return c, nil
}

func certNotAfter(data []byte) (time.Time, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return time.Time{}, errors.New("client-certificate-data is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return time.Time{}, fmt.Errorf("client-certificate-data is not a certificate: %w", err)
	}
	return cert.NotAfter, nil
}

// jwtExpiry reads the exp claim of a JWT. Opaque tokens and JWTs without exp
// (legacy service-account tokens) do not expire.
func jwtExpiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	secs, err := claims.Exp.Float64()
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(int64(secs), 0), true
}
