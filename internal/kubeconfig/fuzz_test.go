package kubeconfig

import (
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// FuzzFromSecret feeds the loader of kubeconfigs from a cluster any bytes.
// Whatever it accepts must give a client that runs nothing and reads no
// file; whatever names a program or a file anywhere, or sends requests
// other than straight over https with the certificate checked, must be
// refused (exit 3). The checks below list the fields themselves, apart from
// the loader's lists.
func FuzzFromSecret(f *testing.F) {
	for _, seed := range []string{
		fromCluster("", "", ""),
		fromCluster("    exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, interactiveMode: Never}\n", "", ""),
		fromCluster("    auth-provider: {name: oidc}\n", "", ""),
		fromCluster("    tokenFile: /var/run/token\n", "", ""),
		fromCluster("    client-certificate: a.crt\n    client-key: a.key\n", "", ""),
		fromCluster("", "    certificate-authority: /etc/ca.crt\n", ""),
		fromCluster("", "    proxy-url: http://u:p@proxy:3128\n", ""),
		fromCluster("", "    insecure-skip-tls-verify: true\n", ""),
		strings.Replace(fromCluster("", "", ""), "https://127.0.0.1:6443", "http://169.254.169.254", 1),
		`{"apiVersion":"v1","kind":"Config","current-context":"a","contexts":[{"name":"a","context":{"cluster":"a","user":"a"}}],"clusters":[{"name":"a","cluster":{"server":"https://h"}}],"users":[{"name":"a","user":{"exec":{"command":"x"}}}]}`,
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := secretWith("")
		s.Data["kubeconfig"] = data
		k, err := FromSecret(s, "kubeconfig")
		if raw, perr := decode(data, "fuzz input"); perr == nil && (runsOrReads(raw) || leavesHTTPS(raw)) {
			if exitcode.Of(err) != exitcode.Refused {
				t.Fatalf("a kubeconfig that runs a program or reads a file was not refused: %v", err)
			}
		}
		if err != nil {
			return
		}
		cfg, err := k.RESTConfig()
		if err != nil {
			return
		}
		if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.CertFile != "" || cfg.KeyFile != "" || cfg.CAFile != "" || cfg.BearerTokenFile != "" {
			t.Fatalf("a client from a cluster's kubeconfig would run a program or read a file: %+v", cfg)
		}
		if cfg.Insecure || cfg.Proxy != nil || !strings.HasPrefix(strings.ToLower(cfg.Host), "https://") || cfg.Dial == nil {
			t.Fatalf("a client from a cluster's kubeconfig would leave https or go unguarded: %+v", cfg)
		}
	})
}

func runsOrReads(c *clientcmdapi.Config) bool {
	for _, u := range c.AuthInfos {
		if u != nil && (u.Exec != nil || u.AuthProvider != nil || u.TokenFile != "" || u.ClientCertificate != "" || u.ClientKey != "") {
			return true
		}
	}
	for _, cl := range c.Clusters {
		if cl != nil && cl.CertificateAuthority != "" {
			return true
		}
	}
	return false
}

func leavesHTTPS(c *clientcmdapi.Config) bool {
	for _, cl := range c.Clusters {
		if cl != nil && (!strings.HasPrefix(strings.ToLower(cl.Server), "https://") || cl.ProxyURL != "" || cl.InsecureSkipTLSVerify) {
			return true
		}
	}
	return false
}
