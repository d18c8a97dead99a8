package kubeconfig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/kubeconfig/leaktest"
)

// writeTemp writes a kubeconfig file and returns its path.
func writeTemp(t *testing.T, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	assert.NilError(t, os.WriteFile(p, []byte(data), 0o600))
	return p
}

// secretWith is a Secret mural-system/spoke-kubeconfig holding data.
func secretWith(data string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mural-system", Name: "spoke-kubeconfig"}, Data: map[string][]byte{"kubeconfig": []byte(data)}}
}

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func certPEM(t *testing.T, notAfter time.Time) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	assert.NilError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "admin"}, NotBefore: now.Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	assert.NilError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func jwt(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(claims)) + ".c2ln"
}

func kubeconfigWithUser(user string) string {
	return `apiVersion: v1
kind: Config
current-context: spoke
contexts:
- name: spoke
  context: {cluster: spoke, user: admin}
- name: other
  context: {cluster: other, user: other}
clusters:
- name: spoke
  cluster: {server: "https://127.0.0.1:6443"}
- name: other
  cluster: {server: "https://10.0.0.1:6443"}
users:
- name: other
  user: {token: other-secret-token}
- name: admin
  user:
` + user
}

func TestCredential(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	cases := []struct {
		name, user, wantErr, kind string
		expires                   *time.Time
	}{
		{name: "long-lived certificate", user: "    client-certificate-data: " + b64(certPEM(t, now.Add(10*365*24*time.Hour))) + "\n    client-key-data: a2V5\n", kind: "client certificate"},
		{name: "certificate expiring in a month", user: "    client-certificate-data: " + b64(certPEM(t, now.Add(30*24*time.Hour))) + "\n", wantErr: "expires in 720h0m0s"},
		{name: "expired certificate", user: "    client-certificate-data: " + b64(certPEM(t, now.Add(-time.Hour))) + "\n", wantErr: "expired 1h0m0s ago"},
		{name: "certificate that is not one", user: "    client-certificate-data: " + b64("nope") + "\n", wantErr: "not PEM"},
		{name: "opaque token", user: "    token: abcdef\n", kind: "token"},
		{name: "JWT without exp", user: "    token: " + jwt(`{"sub":"system:serviceaccount:a:b"}`) + "\n", kind: "token"},
		{name: "JWT expiring in an hour", user: fmt.Sprintf("    token: %s\n", jwt(fmt.Sprintf(`{"exp":%d}`, now.Add(time.Hour).Unix()))), wantErr: "token of user \"admin\" expires in 1h0m0s"},
		{name: "JWT valid for two years", user: fmt.Sprintf("    token: %s\n", jwt(fmt.Sprintf(`{"exp":%d}`, now.Add(2*365*24*time.Hour).Unix()))), kind: "token"},
		{name: "exec plugin", user: "    exec: {apiVersion: client.authentication.k8s.io/v1, command: aws-iam-authenticator}\n", wantErr: "exec plugin \"aws-iam-authenticator\""},
		{name: "auth-provider", user: "    auth-provider: {name: oidc}\n", wantErr: "auth-provider \"oidc\""},
		{name: "token file", user: "    tokenFile: /var/run/token\n", wantErr: `names the local file "/var/run/token" (tokenFile)`},
		{name: "no credential", user: "    {}\n", wantErr: "has no credential"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, err := Load(writeTemp(t, kubeconfigWithUser(tc.user)))
			var c Credential
			if err == nil {
				c, err = k.Credential(now, DefaultMinLifetime)
			}
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				assert.Check(t, !strings.Contains(err.Error(), "other-secret-token"))
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, c.Kind, tc.kind)
		})
	}
}

func TestParseRefusesBrokenFiles(t *testing.T) {
	cases := map[string]struct{ data, wantErr string }{
		"garbage":                 {"\x00\x01 not: [yaml", "is not a kubeconfig"},
		"no current context":      {"apiVersion: v1\nkind: Config\n", "has no current-context"},
		"missing current context": {"apiVersion: v1\nkind: Config\ncurrent-context: gone\n", `current-context "gone" is not defined`},
		"context without cluster": {"apiVersion: v1\nkind: Config\ncurrent-context: a\ncontexts:\n- name: a\n  context: {cluster: x, user: u}\n", `names cluster "x"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := FromSecret(secretWith(tc.data), "kubeconfig")
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}

// everyCredential is a kubeconfig file whose current context carries every
// kind of credential a kubeconfig can hold, and the bytes of each.
func everyCredential(t *testing.T) (path string, creds map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	cert := certPEM(t, now.Add(time.Hour))
	key := "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIHNwb2tla2l0LXRlc3Qta2V5LW5vdC1hLXJlYWwta2V5LWF0LWFsbA==\n-----END EC PRIVATE KEY-----\n"
	path = filepath.Join(dir, "config")
	b64 := base64.StdEncoding.EncodeToString
	data := strings.Replace(kubeconfigWithUser(`    client-certificate-data: `+b64([]byte(cert))+`
    client-key-data: `+b64([]byte(key))+`
    token: secret-token-value-0123456789
    username: admin
    password: basic-auth-password-0123456789
`), `server: "https://127.0.0.1:6443"`, `server: "https://server-user-0123:server-password-0123456789@127.0.0.1:6443", proxy-url: "http://proxy-user-0123:proxy-password-0123456789@10.0.0.9:3128"`, 1)
	assert.NilError(t, os.WriteFile(path, []byte(data), 0o600))
	return path, map[string][]byte{
		"client certificate": []byte(cert),
		"client key":         []byte(key),
		"token":              []byte("secret-token-value-0123456789"),
		"password":           []byte("basic-auth-password-0123456789"),
		"server user":        []byte("server-user-0123:"),
		"server password":    []byte("server-password-0123456789"),
		"proxy user":         []byte("proxy-user-0123:"),
		"proxy password":     []byte("proxy-password-0123456789"),
	}
}

func TestMinifiedAndRedacted(t *testing.T) {
	path, creds := everyCredential(t)
	k, err := Load(path)
	assert.NilError(t, err)
	data, err := k.Bytes()
	assert.NilError(t, err)
	s := string(data)
	assert.Check(t, !strings.Contains(s, "other"), "only the current context stays:\n%s", s)
	assert.Check(t, is.Contains(s, "client-certificate-data: "+base64.StdEncoding.EncodeToString(creds["client certificate"])))
	assert.Check(t, is.Contains(s, "client-key-data: "+base64.StdEncoding.EncodeToString(creds["client key"])))
	assert.Check(t, is.Len(leaktest.Find(s, creds), len(creds)), "the fixture carries every credential, so the search below can fail")
	red, err := k.Redacted()
	assert.NilError(t, err)
	assert.Check(t, is.Len(leaktest.Find(string(red), creds), 0), "redacted:\n%s", red)
	assert.Check(t, is.Contains(string(red), "https://REDACTED@127.0.0.1:6443"), "the server stays readable")
	assert.Check(t, is.Len(leaktest.Find(k.Server, creds), 0), "Server is for messages: %s", k.Server)
}

func TestErrorsHideURLCredentials(t *testing.T) {
	_, creds := everyCredential(t)
	// Port 1 answers nobody, so every request fails at once.
	k, err := Load(writeTemp(t, strings.Replace(kubeconfigWithUser("    token: secret-token-value-0123456789\n"),
		`server: "https://127.0.0.1:6443"`, `server: "https://server-user-0123:server-password-0123456789@127.0.0.1:1"`, 1)))
	assert.NilError(t, err)
	_, err = k.Reach(t.Context())
	assert.ErrorContains(t, err, "did not answer")
	assert.Check(t, is.Len(leaktest.Find(err.Error(), creds), 0), err.Error())
	_, err = k.MissingPermissions(t.Context(), JoinPermissions)
	assert.Check(t, err != nil)
	assert.Check(t, is.Len(leaktest.Find(err.Error(), creds), 0), err.Error())
}

func TestSameAs(t *testing.T) {
	a := Identity{UID: "1", Server: "https://a", CA: []byte("ca")}
	same, by := a.SameAs(Identity{UID: "1", Server: "https://b"})
	assert.Check(t, same && by == "kube-system namespace UID")
	same, _ = a.SameAs(Identity{UID: "2", Server: "https://a", CA: []byte("ca")})
	assert.Check(t, !same)
	same, by = a.SameAs(Identity{Server: "https://a", CA: []byte("ca")})
	assert.Check(t, same && by == "server URL and CA")
	same, _ = a.SameAs(Identity{Server: "https://a", CA: []byte("other")})
	assert.Check(t, !same)
}
