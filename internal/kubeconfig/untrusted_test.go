package kubeconfig

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// fromCluster is a kubeconfig as a Secret may hold it, with extra lines for
// the current user, the current cluster and a second user that no context uses.
func fromCluster(user, cluster, otherUser string) string {
	return `apiVersion: v1
kind: Config
current-context: spoke
contexts:
- name: spoke
  context: {cluster: spoke, user: admin}
clusters:
- name: spoke
  cluster:
    server: https://127.0.0.1:6443
` + cluster + `users:
- name: unused
  user:
    token: unused-token
` + otherUser + `- name: admin
  user:
    token: admin-token
` + user
}

func TestFromSecretRefusesWhatRunsOrReads(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	local := filepath.Join(dir, "local-file")
	assert.NilError(t, os.WriteFile(local, []byte("local"), 0o600))
	cases := []struct {
		name, user, cluster, otherUser, want string
	}{
		{
			name: "exec plugin", user: "    exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, args: [-c, 'touch " + marker + "'], interactiveMode: Never}\n",
			want: `user "admin" runs the exec plugin "sh"`,
		},
		{
			name: "exec plugin by path", user: "    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, interactiveMode: Never}\n",
			want: `user "admin" runs the exec plugin "/bin/sh"`,
		},
		{name: "auth-provider", user: "    auth-provider: {name: oidc, config: {idp-issuer-url: https://idp.example}}\n", want: `user "admin" uses the auth-provider "oidc"`},
		{name: "tokenFile", user: "    tokenFile: " + local + "\n", want: `user "admin" names the local file "` + local + `" (tokenFile)`},
		{name: "client-certificate", user: "    client-certificate: " + local + "\n", want: `(client-certificate)`},
		{name: "client-key", user: "    client-key: relative/key\n", want: `names the local file "relative/key" (client-key)`},
		{name: "certificate-authority", cluster: "    certificate-authority: " + local + "\n", want: `cluster "spoke" names the local file "` + local + `" (certificate-authority)`},
		{
			name: "exec in a user no context uses", otherUser: "- name: sneaky\n  user:\n    exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, interactiveMode: Never}\n",
			want: `user "sneaky" runs the exec plugin "sh"`,
		},
		{
			name: "terminal escapes in the command", user: "    exec: {apiVersion: client.authentication.k8s.io/v1, command: \"sh\\e[2J\", interactiveMode: Never}\n",
			want: `"sh\x1b[2J"`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, err := FromSecret(secretWith(fromCluster(tc.user, tc.cluster, tc.otherUser)), "kubeconfig")
			assert.Check(t, k == nil)
			assert.Equal(t, exitcode.Of(err), exitcode.Refused, "%v", err)
			assert.ErrorContains(t, err, "refusing the kubeconfig in secret mural-system/spoke-kubeconfig: ")
			assert.ErrorContains(t, err, tc.want)
			assert.Check(t, !strings.Contains(err.Error(), "admin-token"), "no credential in the message")
			assert.Check(t, !strings.ContainsRune(err.Error(), '\x1b'), "quoted, never raw: %q", err)
			_, statErr := os.Stat(marker)
			assert.Check(t, os.IsNotExist(statErr), "the exec plugin did not run")
		})
	}
	t.Run("exec plugin that would run", func(t *testing.T) {
		k, err := FromSecret(secretWith(execTouching(marker)), "kubeconfig")
		assert.Check(t, k == nil)
		assert.Equal(t, exitcode.Of(err), exitcode.Refused, "%v", err)
		_, statErr := os.Stat(marker)
		assert.Check(t, os.IsNotExist(statErr), "the exec plugin did not run")
	})
}

// execTouching is a kubeconfig whose user's only credential is an exec
// plugin that creates marker: client-go runs it for the first request (a
// token beside it would be sent instead, and the plugin never run).
func execTouching(marker string) string {
	return strings.Replace(fromCluster("    exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, args: [-c, 'touch "+marker+"'], interactiveMode: Never}\n", "", ""),
		"    token: admin-token\n", "", 1)
}

func TestFromSecretLoadsInlineCredentials(t *testing.T) {
	k, err := FromSecret(secretWith(fromCluster("", "    certificate-authority-data: Y2E=\n", "")), "kubeconfig")
	assert.NilError(t, err)
	assert.Equal(t, k.User, "admin")
	cfg, err := k.RESTConfig()
	assert.NilError(t, err)
	assert.Equal(t, cfg.BearerToken, "admin-token")
	assert.Equal(t, string(cfg.CAData), "ca")
}

func TestFromSecretBrokenData(t *testing.T) {
	s := secretWith("")
	s.Data = map[string][]byte{"value": []byte("x")}
	_, err := FromSecret(s, "kubeconfig")
	assert.ErrorContains(t, err, `secret mural-system/spoke-kubeconfig has no key "kubeconfig"`)
	_, err = FromSecret(secretWith("token: [unclosed secret-looking-bytes"), "kubeconfig")
	assert.ErrorContains(t, err, "the data of secret mural-system/spoke-kubeconfig is not a kubeconfig")
	assert.Check(t, !strings.Contains(err.Error(), "secret-looking-bytes"), "the input is never echoed: %v", err)
	assert.Check(t, exitcode.Of(err) != exitcode.Refused)
}

func TestRESTConfigOfClusterKubeconfigNeverReadsFiles(t *testing.T) {
	// The last guard: had the loader let a file reference through, the
	// client is still refused.
	k, err := FromSecret(secretWith(fromCluster("", "", "")), "kubeconfig")
	assert.NilError(t, err)
	k.config.AuthInfos[k.User].TokenFile = "/etc/hostname"
	_, err = k.RESTConfig()
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	assert.Check(t, is.ErrorContains(err, "secret mural-system/spoke-kubeconfig"))
}

// A kubeconfig from a Secret chooses where this machine sends requests and
// credentials: not over plain http, not to link-local or cloud metadata
// addresses, not through a proxy, not without checking the server's
// certificate, unless --allow-insecure-kubeconfig-secrets says so.
func TestFromSecretRefusesInsecureTransport(t *testing.T) {
	server := func(url string) string {
		return strings.Replace(fromCluster("", "", ""), "server: https://127.0.0.1:6443", "server: "+url, 1)
	}
	cases := map[string]struct{ data, want string }{
		"plain http":               {server("http://spoke.example:6443"), `cluster "spoke" does not send its requests over https`},
		"link-local address":       {server("https://169.254.169.254"), `cluster "spoke" sends requests to the link-local or cloud metadata address 169.254.169.254`},
		"no scheme, a password":    {server("admin:pw-0123456789@spoke.example:6443"), `cluster "spoke" does not send its requests over https`},
		"link-local IPv6":          {server("https://[fe80::1%25eth0]:6443"), "link-local or cloud metadata address fe80::1"},
		"IPv4 in IPv6":             {server("https://[::ffff:169.254.169.254]"), "link-local or cloud metadata address"},
		"metadata host name":       {server("https://metadata.google.internal."), "link-local or cloud metadata address metadata.google.internal"},
		"a proxy":                  {fromCluster("", "    proxy-url: http://proxy.example:3128\n", ""), `cluster "spoke" sends requests through the proxy http://proxy.example:3128`},
		"no certificate check":     {fromCluster("", "    insecure-skip-tls-verify: true\n", ""), `cluster "spoke" does not check the server's certificate (insecure-skip-tls-verify)`},
		"a cluster no context use": {fromCluster("", "- name: other\n  cluster: {server: http://10.0.0.1}\n", ""), `cluster "other" does not send its requests over https`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := FromSecret(secretWith(tc.data), "kubeconfig")
			assert.Equal(t, exitcode.Of(err), exitcode.Refused, "%v", err)
			assert.Check(t, is.ErrorContains(err, tc.want))
			assert.Check(t, is.ErrorContains(err, "--allow-insecure-kubeconfig-secrets"))
			assert.Check(t, !strings.Contains(err.Error(), "pw-0123456789"), "the server is never quoted whole")
		})
	}
	t.Run("allowed by the flag", func(t *testing.T) {
		AllowInsecureSecrets = true
		t.Cleanup(func() { AllowInsecureSecrets = false })
		for name, tc := range cases {
			_, err := FromSecret(secretWith(tc.data), "kubeconfig")
			assert.Check(t, err, name)
		}
	})
}

// A host name that only resolves to a metadata address is caught when the
// connection is made: the dial itself is refused.
func TestClientOfSecretKubeconfigRefusesLinkLocalDial(t *testing.T) {
	k, err := FromSecret(secretWith(fromCluster("", "", "")), "kubeconfig")
	assert.NilError(t, err)
	cfg, err := k.RESTConfig()
	assert.NilError(t, err)
	assert.Assert(t, cfg.Dial != nil)
	_, err = cfg.Dial(context.Background(), "tcp", "169.254.169.254:80")
	assert.ErrorContains(t, err, "link-local or cloud metadata address")
}

// The positive control of the marker above: the same exec plugin, in the
// user's own kubeconfig, does run when a request is made, so a marker that
// stays missing means the loader refused it, not that the plugin could not run.
func TestExecMarkerAppearsWhenThePluginRuns(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	path := filepath.Join(dir, "config")
	assert.NilError(t, os.WriteFile(path, []byte(execTouching(marker)), 0o600))
	cfg, err := UserRESTConfig(path)
	assert.NilError(t, err)
	cfg.Timeout = time.Second
	c, err := kubernetes.NewForConfig(cfg)
	assert.NilError(t, err)
	_, _ = c.CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{})
	_, err = os.Stat(marker)
	assert.NilError(t, err, "the plugin ran")
}

// The second guard: a kubeconfig from a cluster that got past FromSecret
// some other way still builds no client that runs a program, reads a file,
// or sends requests over http, through a proxy or unchecked.
func TestRESTConfigGuardsAKubeconfigFromACluster(t *testing.T) {
	for name, cluster := range map[string]string{
		"http":     "    insecure-skip-tls-verify: false\n",
		"proxy":    "    proxy-url: http://proxy.example:3128\n",
		"insecure": "    insecure-skip-tls-verify: true\n",
		"ca file":  "    certificate-authority: /etc/hosts\n",
	} {
		t.Run(name, func(t *testing.T) {
			data := fromCluster("", cluster, "")
			if name == "http" {
				data = strings.Replace(data, "https://", "http://", 1)
			}
			cfg, err := decode([]byte(data), "test")
			assert.NilError(t, err)
			// Past FromSecret's checks: only RESTConfig's guard is left.
			k, err := fromConfig(cfg, "secret mural-system/spoke-1-kubeconfig")
			assert.NilError(t, err)
			k.fromCluster = true
			_, err = k.RESTConfig()
			assert.Check(t, is.Equal(exitcode.Of(err), exitcode.Refused), "%v", err)
			assert.Check(t, is.ErrorContains(err, "secret mural-system/spoke-1-kubeconfig"))
		})
	}
}
