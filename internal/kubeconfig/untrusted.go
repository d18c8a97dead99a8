package kubeconfig

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/spokekit/spokekit/internal/cli"
)

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
		return nil, cli.Refusedf("refusing the kubeconfig in %s: %s. A kubeconfig read from a cluster may not run programs or read files on this machine; nothing was run or read. Store one whose credential is inline (token, or client-certificate-data and client-key-data, with certificate-authority-data)",
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
// file, in a stable order. The file fields are clientcmd's own list of file
// references, so a field clientcmd learns to read is refused too.
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
		return cli.Refusedf("the kubeconfig from %s would run a program or read a local file; it was not used", source)
	}
	return nil
}
