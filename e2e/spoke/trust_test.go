//go:build e2e

package spoke

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/kubeconfig/leaktest"
)

// spokeMarked runs `kubectl spoke ARGS` with the exec marker set, and says
// whether the command ran an exec plugin.
func spokeMarked(t *testing.T, args ...string) (harness.Result, bool) {
	t.Helper()
	home := t.TempDir()
	marker := filepath.Join(home, "exec-plugin-ran")
	r := harness.Kubectl(t, hub.For(home).WithExecMarker(marker), append([]string{"spoke", "-n", releaseNamespace}, args...)...)
	_, statErr := os.Stat(marker)
	return r, statErr == nil
}

// A kubeconfig in a Secret of the hub is written by whoever may write that
// Secret: no command may run its exec plugin on the operator's machine.
func TestStoredKubeconfigsNeverRunExecPlugins(t *testing.T) {
	addAndJoin(t, "untrusted", spoke2)
	// orphan is added on the same API server (see forgetting).
	forgetCluster(t, "untrusted")
	execConfig, err := spoke2.ExecKubeconfig(t.TempDir())
	assert.NilError(t, err)
	secrets := hub.Kube.CoreV1().Secrets(releaseNamespace)
	good, err := secrets.Get(ctx(t), "untrusted-kubeconfig", metav1.GetOptions{})
	assert.NilError(t, err)
	bad := good.DeepCopy()
	bad.Data["kubeconfig"] = execConfig
	_, err = secrets.Update(ctx(t), bad, metav1.UpdateOptions{})
	assert.NilError(t, err)
	_, err = secrets.Create(ctx(t), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan-kubeconfig", Namespace: releaseNamespace},
		Data:       map[string][]byte{"kubeconfig": execConfig},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	t.Cleanup(func() {
		_ = secrets.Delete(context.Background(), "orphan-kubeconfig", metav1.DeleteOptions{})
	})
	// The klusterlet agent's lease keeps the ManagedCluster Available (it
	// does not use this secret), and the stand-in, in the test process,
	// reaches the spoke through the exec plugin (without the marker): the
	// spoke stays available and force-remove has to ask the cluster.
	waitAvailable(t, "untrusted")
	spokeBefore, secretBefore := spokeWrites(t, "spokes", "untrusted"), spokeWrites(t, "secrets", "untrusted-kubeconfig")

	cases := []struct {
		name   string
		args   []string
		secret string
	}{
		{"add, run again", []string{"add", "untrusted", "--spoke-kubeconfig", spoke2.Kubeconfig, "--apply"}, "untrusted-kubeconfig"},
		{"add, the secret exists", []string{"add", "orphan", "--spoke-kubeconfig", spoke2.Kubeconfig}, "orphan-kubeconfig"},
		{"rotate-kubeconfig", []string{"rotate-kubeconfig", "untrusted", "--spoke-kubeconfig", spoke2.Kubeconfig}, "untrusted-kubeconfig"},
	}
	// force-remove never reads the secret: the hub's view alone decides, and
	// while the ManagedCluster is Available it refuses before anything runs.
	t.Run("force-remove", func(t *testing.T) {
		r, ran := spokeMarked(t, "force-remove", "untrusted", "--yes")
		assert.Check(t, !ran, "the exec plugin ran on the operator's machine: %s", r)
		assert.Equal(t, r.ExitCode, 3, r)
		assert.Check(t, is.Contains(r.Stderr, "spoke untrusted is reachable"), r)
	})
	// status reads the credential's record on the Spoke, never the secret.
	t.Run("status", func(t *testing.T) {
		r, ran := spokeMarked(t, "status", "untrusted")
		assert.Check(t, !ran, "the exec plugin ran on the operator's machine: %s", r)
		assert.Equal(t, r.ExitCode, 0, r)
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ran := spokeMarked(t, tc.args...)
			assert.Check(t, !ran, "the exec plugin ran on the operator's machine: %s", r)
			assert.Equal(t, r.ExitCode, 3, r)
			assert.Check(t, is.Contains(r.Stderr, "refusing the kubeconfig in secret "+releaseNamespace+"/"+tc.secret), r)
			assert.Check(t, is.Contains(r.Stderr, `runs the exec plugin "sh"`), r)
		})
	}
	assert.Equal(t, spokeWrites(t, "spokes", "untrusted"), spokeBefore, "the Spoke is untouched")
	assert.Equal(t, spokeWrites(t, "secrets", "untrusted-kubeconfig"), secretBefore, "the secret is untouched")
	assert.Equal(t, spokeWrites(t, "secrets", "orphan-kubeconfig"), 0, "the orphan secret is untouched")
	now, err := secrets.Get(ctx(t), "untrusted-kubeconfig", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, string(now.Data["kubeconfig"]), string(execConfig), "the secret holds what the test put there")
}

// At -v=10 client-go logs request and response bodies; the Secrets these
// commands read and write on their own never show, in any encoding.
func TestVerboseLogsNeverShowStoredCredentials(t *testing.T) {
	addAndJoin(t, "verbose", spoke2)
	// verbose-secret-only is added on the same API server (see forgetting).
	forgetCluster(t, "verbose")
	rotated := signedCert(t, spoke2, "verbose-rotated", time.Now().Add(2*365*24*time.Hour))
	creds := map[string][]byte{
		"stored client key":  currentUser(kubeconfigOf(t, spoke2)).ClientKeyData,
		"rotated client key": currentUser(rotated).ClientKeyData,
	}
	rotatedFile := writeKubeconfig(t, rotated)
	assert.Check(t, is.Len(leaktest.Find(readFile(t, rotatedFile), creds), 1), "the search finds a key in a kubeconfig, so it can fail")
	// A ManifestWork carries what it applies, a Secret here: status and
	// fleetdrain cluster read the cluster's works, never showing them.
	creds["a Secret in a ManifestWork"] = []byte(rand.Text())
	createWork(t, "verbose", "verbose-secret", func(w *unstructured.Unstructured) {
		w.Object["spec"] = map[string]any{"workload": map[string]any{"manifests": []any{map[string]any{
			"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "verbose-secret", "namespace": "default"},
			"stringData": map[string]any{"token": string(creds["a Secret in a ManifestWork"])},
		}}}}
	})
	t.Cleanup(func() {
		err := hub.Dynamic.Resource(ocm.ManifestWorkResource).Namespace("verbose").Delete(context.Background(), "verbose-secret", metav1.DeleteOptions{})
		assert.Check(t, err)
	})
	t.Run("fleetdrain cluster", func(t *testing.T) {
		r := harness.Kubectl(t, hub.For(t.TempDir()), "fleetdrain", "cluster", "verbose", "--dry-run", "-v=10")
		assert.Check(t, r.ExitCode == 0 || r.ExitCode == 3, r)
		assert.Check(t, is.Contains(r.Stderr, "/namespaces/verbose/manifestworks"), "the works request is logged, without its body")
		assert.Check(t, is.Len(leaktest.Find(r.Stdout+r.Stderr, creds), 0), "credentials in the output of fleetdrain cluster")
	})
	for _, tc := range []struct {
		args    []string
		exit    int
		secrets bool // whether the command requests a Secret
	}{
		// status reads the credential's record on the Spoke, no Secret, and
		// the cluster's ManifestWorks.
		{[]string{"status", "verbose"}, 0, false},
		// verbose-secret-only first: the run again of verbose records its cluster anew.
		{[]string{"add", "verbose-secret-only", "--spoke-kubeconfig", spoke2.Kubeconfig}, 0, true},
		{[]string{"add", "verbose", "--spoke-kubeconfig", spoke2.Kubeconfig, "--apply"}, 0, true},
		{[]string{"rotate-kubeconfig", "verbose", "--spoke-kubeconfig", rotatedFile}, 0, true},
		// Refused while the spoke is reachable; it reads no Secret.
		{[]string{"force-remove", "verbose", "--yes"}, 3, false},
	} {
		args := tc.args
		t.Run(args[0], func(t *testing.T) {
			r := spoke(t, append(args, "-v=10")...)
			assert.Check(t, is.Equal(r.ExitCode, tc.exit), r)
			secretRequest := regexp.MustCompile(`/secrets/verbose[a-z-]*-kubeconfig`).MatchString(r.Stderr)
			assert.Check(t, secretRequest == tc.secrets, "a Secret request logged: %v, want %v", secretRequest, tc.secrets)
			if args[0] == "status" {
				assert.Check(t, is.Contains(r.Stderr, "/namespaces/verbose/manifestworks"), "the works request is logged, without its body")
			}
			assert.Check(t, is.Len(leaktest.Find(r.Stdout+r.Stderr, creds), 0), "credentials in the output of %v", args)
		})
	}
}
