package kubeconfig

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The token kubeconfig keeps the admin one's cluster and nothing of its
// credential.
func TestWithTokenKeepsTheClusterAndDropsTheAdminCredential(t *testing.T) {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app-kubeconfig"},
		Data:       map[string][]byte{"value": []byte(fromCluster("", "    certificate-authority-data: Y2E=\n    tls-server-name: app.internal\n", ""))},
	}
	k, err := FromSecret(s, "value")
	assert.NilError(t, err)
	data, err := k.WithToken("app-view", "spokekit-park-view", "view-token")
	assert.NilError(t, err)
	got := string(data)
	for _, want := range []string{"server: https://127.0.0.1:6443", "certificate-authority-data: Y2E=", "tls-server-name: app.internal", "token: view-token", "current-context: app-view"} {
		assert.Check(t, strings.Contains(got, want), "%s in:\n%s", want, got)
	}
	assert.Check(t, !strings.Contains(got, "admin-token") && !strings.Contains(got, "unused-token"), got)
	back, err := FromSecret(&corev1.Secret{ObjectMeta: s.ObjectMeta, Data: map[string][]byte{"value": data}}, "value")
	assert.NilError(t, err)
	assert.Equal(t, back.User, "spokekit-park-view")
}
