package kubeconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/internal/cli"
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
		{name: "exec plugin", user: "    exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, args: [-c, 'touch " + marker + "'], interactiveMode: Never}\n",
			want: `user "admin" runs the exec plugin "sh"`},
		{name: "exec plugin by path", user: "    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, interactiveMode: Never}\n",
			want: `user "admin" runs the exec plugin "/bin/sh"`},
		{name: "auth-provider", user: "    auth-provider: {name: oidc, config: {idp-issuer-url: https://idp.example}}\n", want: `user "admin" uses the auth-provider "oidc"`},
		{name: "tokenFile", user: "    tokenFile: " + local + "\n", want: `user "admin" names the local file "` + local + `" (tokenFile)`},
		{name: "client-certificate", user: "    client-certificate: " + local + "\n", want: `(client-certificate)`},
		{name: "client-key", user: "    client-key: relative/key\n", want: `names the local file "relative/key" (client-key)`},
		{name: "certificate-authority", cluster: "    certificate-authority: " + local + "\n", want: `cluster "spoke" names the local file "` + local + `" (certificate-authority)`},
		{name: "exec in a user no context uses", otherUser: "- name: sneaky\n  user:\n    exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, interactiveMode: Never}\n",
			want: `user "sneaky" runs the exec plugin "sh"`},
		{name: "terminal escapes in the command", user: "    exec: {apiVersion: client.authentication.k8s.io/v1, command: \"sh\\e[2J\", interactiveMode: Never}\n",
			want: `"sh\x1b[2J"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, err := FromSecret(secretWith(fromCluster(tc.user, tc.cluster, tc.otherUser)), "kubeconfig")
			assert.Check(t, k == nil)
			assert.Equal(t, cli.ExitCode(err), cli.ExitRefused, "%v", err)
			assert.ErrorContains(t, err, "refusing the kubeconfig in secret mural-system/spoke-kubeconfig: ")
			assert.ErrorContains(t, err, tc.want)
			assert.Check(t, !strings.Contains(err.Error(), "admin-token"), "no credential in the message")
			assert.Check(t, !strings.ContainsRune(err.Error(), '\x1b'), "quoted, never raw: %q", err)
			_, statErr := os.Stat(marker)
			assert.Check(t, os.IsNotExist(statErr), "the exec plugin did not run")
		})
	}
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
	assert.Check(t, cli.ExitCode(err) != cli.ExitRefused)
}

func TestRESTConfigOfClusterKubeconfigNeverReadsFiles(t *testing.T) {
	// The last guard: had the loader let a file reference through, the
	// client is still refused.
	k, err := FromSecret(secretWith(fromCluster("", "", "")), "kubeconfig")
	assert.NilError(t, err)
	k.config.AuthInfos[k.User].TokenFile = "/etc/hostname"
	_, err = k.RESTConfig()
	assert.Equal(t, cli.ExitCode(err), cli.ExitRefused)
	assert.Check(t, is.ErrorContains(err, "secret mural-system/spoke-kubeconfig"))
}
