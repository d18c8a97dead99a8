package kubeconfig

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/spokekit/spokekit/internal/exitcode"
)

const twoContexts = `apiVersion: v1
kind: Config
current-context: a
contexts:
- name: a
  context: {cluster: a, user: a}
- name: b
  context: {cluster: b, user: b}
clusters:
- name: a
  cluster: {server: "https://a.example.com"}
- name: b
  cluster: {server: "https://b.example.com"}
users:
- name: a
  user: {token: a-token}
- name: b
`

const tokenUser = "  user: {token: b-token}\n"

const execUser = "  user:\n    exec: {command: /bin/sh, apiVersion: client.authentication.k8s.io/v1}\n"

func secretOf(data string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"kubeconfig": []byte(data)}}
}

// The context a Spoke names is the one read, and it passes the same
// checks as the current one.
func TestFromSecretContext(t *testing.T) {
	k, err := FromSecretContext(secretOf(twoContexts+tokenUser), "kubeconfig", "")
	assert.NilError(t, err)
	assert.Check(t, is.Equal(k.Server, "https://a.example.com"))
	_, err = FromSecretContext(secretOf(twoContexts+execUser), "kubeconfig", "b")
	assert.Check(t, is.Equal(exitcode.Of(err), exitcode.Refused), "context b runs a program: %v", err)
	_, err = FromSecretContext(secretOf(twoContexts+tokenUser), "kubeconfig", "c")
	assert.ErrorContains(t, err, `has no context "c"`)

	k, err = FromSecretContext(secretOf(twoContexts+tokenUser), "kubeconfig", "b")
	assert.NilError(t, err)
	assert.Check(t, is.Equal(k.Server, "https://b.example.com"))

	// Stored again under the name the Spoke reads.
	data, err := k.BytesAs("spoke-ctx")
	assert.NilError(t, err)
	cfg, err := clientcmd.Load(data)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(cfg.CurrentContext, "spoke-ctx"))
	assert.Check(t, is.Len(cfg.Contexts, 1))
	assert.Check(t, is.Equal(cfg.Clusters[cfg.Contexts["spoke-ctx"].Cluster].Server, "https://b.example.com"))
}
