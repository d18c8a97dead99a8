package kubeconfig

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/scrub"
)

// AllowInsecureSecrets is --allow-insecure-kubeconfig-secrets: a kubeconfig
// read from a Secret was written by whoever may write that Secret, and by
// default may not send this machine's requests over plain http, to
// link-local or metadata addresses, through a proxy or without checking the
// certificate. A process-wide flag like -v (the root command of every plugin
// binds it), so that every command reading such kubeconfigs takes it the
// same way.
var AllowInsecureSecrets bool

// FromSecret loads a kubeconfig that a cluster keeps in a Secret (a Spoke's
// kubeconfig secret, a Cluster API NAME-kubeconfig secret). Whoever may write
// that Secret wrote it, so it may not act on this machine: a kubeconfig that
// would run a program (exec, auth-provider) or read a local file
// (certificate-authority, client-certificate, client-key, tokenFile) is
// refused (exit 3) before anything runs or is read, naming the Secret. Every
// kubeconfig read from a cluster goes through here.
func FromSecret(s *corev1.Secret, key string) (*Kubeconfig, error) {
	source := "secret " + s.Namespace + "/" + s.Name
	data, ok := s.Data[key]
	if !ok {
		return nil, fmt.Errorf("%s has no key %q", source, key)
	}
	cfg, err := decode(data, "the data of "+source)
	if err != nil {
		return nil, err
	}
	if reasons := unsafeParts(cfg); len(reasons) > 0 {
		return nil, exitcode.RefusedErrorf("refusing the kubeconfig in %s: %s. A kubeconfig read from a cluster may not run programs or read files on this machine; nothing was run or read. Store one whose credential is inline (token, or client-certificate-data and client-key-data, with certificate-authority-data)",
			source, strings.Join(reasons, "; "))
	}
	if reasons := insecureParts(cfg); len(reasons) > 0 && !AllowInsecureSecrets {
		return nil, exitcode.RefusedErrorf("refusing the kubeconfig in %s: %s. Whoever may write that Secret would choose where this machine sends its requests and credentials; nothing was sent. "+
			"Store one whose server is https, checked against certificate-authority-data, reached directly, or pass --allow-insecure-kubeconfig-secrets if this is meant",
			source, strings.Join(reasons, "; "))
	}
	k, err := fromConfig(cfg, source)
	if err != nil {
		return nil, err
	}
	k.fromCluster = true
	return k, nil
}

// unsafeParts names every part of cfg that runs a program or reads a local
// file, in a stable order.
func unsafeParts(cfg *clientcmdapi.Config) []string {
	var out []string
	for _, name := range sortedKeys(cfg.AuthInfos) {
		u := cfg.AuthInfos[name]
		if u == nil {
			continue
		}
		if u.Exec != nil {
			out = append(out, fmt.Sprintf("user %q runs the exec plugin %q", name, u.Exec.Command))
		}
		if u.AuthProvider != nil {
			out = append(out, fmt.Sprintf("user %q uses the auth-provider %q", name, u.AuthProvider.Name))
		}
	}
	return append(out, fileParts(cfg)...)
}

// fileParts names every local file cfg refers to, in a stable order. The
// fields are clientcmd's own list of file references, so a field clientcmd
// learns to read is named too.
func fileParts(cfg *clientcmdapi.Config) []string {
	var out []string
	for _, name := range sortedKeys(cfg.AuthInfos) {
		u := cfg.AuthInfos[name]
		if u == nil {
			continue
		}
		refs := clientcmd.GetAuthInfoFileReferences(u)
		if u.Exec != nil {
			// The exec command is named above; a path in it is not a file to read.
			refs = slices.DeleteFunc(refs, func(p *string) bool { return p == &u.Exec.Command })
		}
		out = append(out, fileFields(fmt.Sprintf("user %q", name), u, refs)...)
	}
	for _, name := range sortedKeys(cfg.Clusters) {
		c := cfg.Clusters[name]
		if c == nil {
			continue
		}
		out = append(out, fileFields(fmt.Sprintf("cluster %q", name), c, clientcmd.GetClusterFileReferences(c))...)
	}
	return out
}

// fileFields names the non-empty file references of one stanza.
func fileFields(owner string, stanza any, refs []*string) []string {
	var out []string
	for _, ref := range refs {
		if *ref != "" {
			out = append(out, fmt.Sprintf("%s names the local file %q (%s)", owner, *ref, fieldName(stanza, ref)))
		}
	}
	return out
}

// fieldName is the kubeconfig key of a file reference, for the message.
func fieldName(stanza any, ref *string) string {
	switch s := stanza.(type) {
	case *clientcmdapi.AuthInfo:
		switch ref {
		case &s.ClientCertificate:
			return "client-certificate"
		case &s.ClientKey:
			return "client-key"
		case &s.TokenFile:
			return "tokenFile"
		}
	case *clientcmdapi.Cluster:
		if ref == &s.CertificateAuthority {
			return "certificate-authority"
		}
	}
	return "a file reference"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkFromCluster is the last guard before a client is built from a
// kubeconfig read from a cluster: whatever FromSecret let through, the
// client may not run a program or read a file.
func checkFromCluster(c *rest.Config, source string) error {
	if c.ExecProvider != nil || c.AuthProvider != nil || c.CertFile != "" || c.KeyFile != "" || c.CAFile != "" || c.BearerTokenFile != "" {
		return exitcode.RefusedErrorf("the kubeconfig from %s would run a program or read a local file; it was not used", source)
	}
	c.Wrap(boundResponses)
	if AllowInsecureSecrets {
		return nil
	}
	if c.Insecure || c.Proxy != nil || !strings.HasPrefix(strings.ToLower(c.Host), "https://") {
		return exitcode.RefusedErrorf("the kubeconfig from %s would send requests over http, through a proxy or without checking the certificate; it was not used", source)
	}
	// A host name may resolve to a metadata address: check where each
	// connection really goes.
	c.Dial = guardedDial
	return nil
}

// InsecureParts names what in the kubeconfig would send requests where a
// Secret's writer should not send them (see insecureParts); nil when
// AllowInsecureSecrets lets them through. add checks the file it is about
// to store with it, so that it never stores what every later command,
// reading it from the Secret, refuses.
func (k *Kubeconfig) InsecureParts() []string {
	if AllowInsecureSecrets {
		return nil
	}
	return insecureParts(k.config)
}

// insecureParts names every cluster of cfg that would send requests where a
// Secret's writer should not send them from this machine. Loopback stays
// allowed: a kubeconfig for an API server on this machine is the user's own
// set-up (the test beds run theirs on 127.0.0.1, over https).
func insecureParts(cfg *clientcmdapi.Config) []string {
	var out []string
	for _, name := range sortedKeys(cfg.Clusters) {
		c := cfg.Clusters[name]
		if c == nil {
			continue
		}
		owner := fmt.Sprintf("cluster %q", name)
		// The server is not quoted: without a scheme, what precedes the
		// host may be a password.
		if !strings.HasPrefix(strings.ToLower(c.Server), "https://") {
			out = append(out, owner+" does not send its requests over https (its server must start with https://)")
		}
		if u, err := url.Parse(c.Server); err == nil && metadataHost(u.Hostname()) {
			out = append(out, fmt.Sprintf("%s sends requests to the link-local or cloud metadata address %s", owner, u.Hostname()))
		}
		if c.ProxyURL != "" {
			out = append(out, fmt.Sprintf("%s sends requests through the proxy %s", owner, scrub.URLs(c.ProxyURL)))
		}
		if c.InsecureSkipTLSVerify {
			out = append(out, owner+" does not check the server's certificate (insecure-skip-tls-verify)")
		}
	}
	return out
}

// metadataNames are the host names of cloud instance metadata services.
var metadataNames = []string{"metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal"}

// metadataPrefixes are the link-local ranges and the metadata addresses
// outside them (AWS's IPv6 one, Alibaba's).
var metadataPrefixes = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("fd00:ec2::254/128"),
	netip.MustParsePrefix("100.100.100.200/32"),
}

// metadataHost says whether host (a name or an address) is link-local or
// a cloud metadata service.
func metadataHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if slices.Contains(metadataNames, host) {
		return true
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	addr = addr.WithZone("").Unmap()
	for _, p := range metadataPrefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// guardedDial connects as client-go would, but refuses a connection to a
// link-local or metadata address, after name resolution.
var guardedDial = (&net.Dialer{
	Timeout:   30 * time.Second,
	KeepAlive: 30 * time.Second,
	Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		if metadataHost(host) {
			return fmt.Errorf("refusing to connect to %s: a link-local or cloud metadata address, named by a kubeconfig from a Secret", address)
		}
		return nil
	},
}).DialContext
