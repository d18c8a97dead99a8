//go:build e2e

package park

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/spokekit/spokekit/e2e/harness"
	capiapi "github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/kubeconfig/leaktest"
)

// bareCluster creates a Cluster object and its NAME-kubeconfig secret
// holding kubeconfig: all these tests need of Cluster API.
func bareCluster(t *testing.T, name string, kubeconfig []byte) {
	t.Helper()
	assert.NilError(t, platform.ApplyYAML(ctx(t), `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: `+name+`
  namespace: `+namespace+`
spec:
  paused: true # no controller acts on it
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DevCluster, name: `+name+`}
`))
	_, err := platform.Kube.CoreV1().Secrets(namespace).Create(ctx(t), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: capiapi.KubeconfigSecretName(name), Namespace: namespace, Labels: map[string]string{capiapi.ClusterNameLabel: name}},
		Type:       "cluster.x-k8s.io/secret",
		Data:       map[string][]byte{capiapi.KubeconfigSecretKey: kubeconfig},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
}

// The NAME-kubeconfig secret is written by whoever may write Secrets in the
// Environment namespace: no command may run its exec plugin here.
func TestClusterKubeconfigSecretNeverRunsExecPlugins(t *testing.T) {
	t.Parallel()
	execConfig, err := tenant.ExecKubeconfig(t.TempDir())
	assert.NilError(t, err)
	bareCluster(t, "untrusted", execConfig)
	for _, args := range [][]string{
		{"status", "untrusted"},
		{"cluster", "untrusted", "--wait", "--timeout", "1m"},
		{"resume", "untrusted", "--wait", "--timeout", "1m"},
	} {
		t.Run(args[0], func(t *testing.T) {
			home := t.TempDir()
			marker := filepath.Join(home, "exec-plugin-ran")
			r := harness.Kubectl(t, platform.For(home).WithExecMarker(marker), append([]string{"park", "-n", namespace}, args...)...)
			_, statErr := os.Stat(marker)
			assert.Check(t, os.IsNotExist(statErr), "the exec plugin ran on the operator's machine: %s", r)
			assert.Equal(t, r.ExitCode, 3, r)
			assert.Check(t, is.Contains(r.Stderr, "refusing the kubeconfig in secret "+namespace+"/untrusted-kubeconfig"), r)
		})
	}
	assert.Equal(t, parkWrites(t, namespace, "untrusted"), 0, "the Cluster is untouched")
}

// At -v=10 client-go logs request and response bodies; the secret these
// commands read on their own never shows, in any encoding.
func TestVerboseLogsNeverShowTheClusterKubeconfig(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(tenant.Kubeconfig)
	assert.NilError(t, err)
	bareCluster(t, "verbose", data)
	cfg, err := clientcmd.LoadFromFile(tenant.Kubeconfig)
	assert.NilError(t, err)
	creds := map[string][]byte{"client key": cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo].ClientKeyData}
	assert.Check(t, is.Len(leaktest.Find(string(data), creds), 1), "the search finds the key in the kubeconfig, so it can fail")
	for _, args := range [][]string{
		{"status", "verbose"},
		{"cluster", "verbose", "--wait", "--timeout", "1m"},
		{"resume", "verbose", "--wait", "--timeout", "1m"},
	} {
		t.Run(args[0], func(t *testing.T) {
			r := kubectl(t, append([]string{"park", "-n", namespace, "-v=10"}, args...)...)
			assert.Check(t, is.Contains(r.Stderr, "/secrets/verbose-kubeconfig"), "the Secret request is logged, without its body: %s", r)
			assert.Check(t, is.Len(leaktest.Find(r.Stdout+r.Stderr, creds), 0), "credentials in the output of %v", args)
		})
	}
}
