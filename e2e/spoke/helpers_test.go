//go:build e2e

package spoke

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/keyutil"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/e2e/standin/fleet"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
)

func ctx(t testing.TB) context.Context {
	t.Helper()
	return harness.Context(t, harness.StepTimeout)
}

// spoke runs `kubectl spoke ARGS -n mural-system` against the hub.
func spoke(t testing.TB, args ...string) harness.Result {
	t.Helper()
	forgetEarlierTestsClusters(t)
	return harness.Kubectl(t, hub.For(t.TempDir()), append([]string{"spoke", "-n", releaseNamespace}, args...)...)
}

// The test bed's spokes share two kwok API servers (spoke1 and spoke2), so
// by its kube-system UID every Spoke name a test adds on one of them is the
// same cluster, and add would refuse the next test's as a cluster the hub
// has already under another name. When a test first runs kubectl spoke,
// the UIDs recorded on the Spokes earlier tests left are forgotten, as if
// each test had clusters of its own; a test that holds two Spokes of one
// server at once forgets the first itself (forgetCluster). Subtests share
// their test's clusters: the tests of a package run one after another.
var (
	forgettingMu sync.Mutex
	// forgotFor is the top-level test the UIDs were last forgotten for.
	forgotFor string
)

// forgetEarlierTestsClusters forgets the recorded UIDs when t's top-level test
// runs its first command: what the tests before it left.
func forgetEarlierTestsClusters(t testing.TB) {
	t.Helper()
	top, _, _ := strings.Cut(t.Name(), "/")
	forgettingMu.Lock()
	defer forgettingMu.Unlock()
	if forgotFor == top {
		return
	}
	forgotFor = top
	l, err := hub.Dynamic.Resource(fleetconfig.SpokeResource).List(ctx(t), metav1.ListOptions{})
	if !assert.Check(t, err) {
		return
	}
	for i := range l.Items {
		if _, ok := l.Items[i].GetAnnotations()[spokekitUIDAnnotation]; ok {
			forgetClusterIn(t, l.Items[i].GetNamespace(), l.Items[i].GetName())
		}
	}
}

// spokekitUIDAnnotation is where kubectl spoke records a Spoke's cluster.
const spokekitUIDAnnotation = "spoke.spokekit.io/kube-system-uid"

// forgetCluster removes the kube-system UID recorded on Spoke name, so that
// the test may add the same API server under another name.
func forgetCluster(t testing.TB, name string) {
	t.Helper()
	forgetClusterIn(t, releaseNamespace, name)
}

func forgetClusterIn(t testing.TB, ns, name string) {
	t.Helper()
	patch := `[{"op":"remove","path":"/metadata/annotations/spoke.spokekit.io~1kube-system-uid"}]`
	_, err := hub.Dynamic.Resource(fleetconfig.SpokeResource).Namespace(ns).Patch(ctx(t), name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	// Gone meanwhile (a removal finishing), or no UID: nothing to forget.
	if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
		return
	}
	assert.Check(t, err, "forgetting the cluster of Spoke %s/%s", ns, name)
}

// writeFile writes data into the test's temp dir and returns the path.
func writeFile(t testing.TB, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	assert.NilError(t, os.WriteFile(p, []byte(data), 0o600))
	return p
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	assert.NilError(t, err)
	return string(data)
}

// kubeconfigOf loads a cluster's admin kubeconfig for editing.
func kubeconfigOf(t testing.TB, c *harness.Cluster) *clientcmdapi.Config {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig)
	assert.NilError(t, err)
	return cfg
}

func writeKubeconfig(t testing.TB, cfg *clientcmdapi.Config) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	assert.NilError(t, clientcmd.WriteToFile(*cfg, p))
	return p
}

func currentUser(cfg *clientcmdapi.Config) *clientcmdapi.AuthInfo {
	return cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
}

// signedCert returns a kubeconfig of c whose client certificate, for a new
// user in system:masters, is signed by the cluster's CA and valid until notAfter.
func signedCert(t testing.TB, c *harness.Cluster, user string, notAfter time.Time) *clientcmdapi.Config {
	t.Helper()
	// kwokctl keeps each cluster's PKI under its own workdir (harness: one per cluster).
	dir := filepath.Join(env.Workdir, "clusters", c.Name, "clusters", c.Name, "pki")
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	assert.NilError(t, err)
	block, _ := pem.Decode(caPEM)
	ca, err := x509.ParseCertificate(block.Bytes)
	assert.NilError(t, err)
	caKey, err := keyutil.PrivateKeyFromFile(filepath.Join(dir, "ca.key"))
	assert.NilError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	assert.NilError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: user, Organization: []string{"system:masters"}},
		NotBefore:    time.Now().Add(-48 * time.Hour), NotAfter: notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	assert.NilError(t, err)
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	assert.NilError(t, err)
	cfg := kubeconfigOf(t, c)
	u := currentUser(cfg)
	u.ClientCertificateData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	u.ClientKeyData = keyPEM
	return cfg
}

// spokeObject reads a Spoke of the release namespace; nil when absent.
func spokeObject(t testing.TB, name string) *unstructured.Unstructured {
	t.Helper()
	return spokeObjectIn(ctx(t), t, name)
}

// spokeObjectIn is spokeObject within cx (a poll's context).
func spokeObjectIn(cx context.Context, t testing.TB, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := hub.Dynamic.Resource(fleetconfig.SpokeResource).Namespace(releaseNamespace).Get(cx, name, metav1.GetOptions{})
	return presentOrAbsent(t, u, err)
}

// presentOrAbsent is u, or nil when the read found nothing; any other error
// fails the test, so that a hub that does not answer never passes for a
// Spoke or ManagedCluster that has gone.
func presentOrAbsent(t testing.TB, u *unstructured.Unstructured, err error) *unstructured.Unstructured {
	t.Helper()
	if apierrors.IsNotFound(err) {
		return nil
	}
	assert.NilError(t, err)
	return u
}

// managedCluster reads a ManagedCluster; nil when absent.
func managedCluster(t testing.TB, name string) *unstructured.Unstructured {
	t.Helper()
	return managedClusterIn(ctx(t), t, name)
}

// managedClusterIn is managedCluster within cx (a poll's context).
func managedClusterIn(cx context.Context, t testing.TB, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := hub.Dynamic.Resource(ocm.ManagedClusterResource).Get(cx, name, metav1.GetOptions{})
	return presentOrAbsent(t, u, err)
}

// spokeWrites counts the plugin's write requests to one object of the
// release namespace ("spokes" or "secrets"), dry runs left out, from the
// hub's audit log: the fleet controller's and the agents' own writes (which
// move the resourceVersion too) are not counted.
func spokeWrites(t testing.TB, resource, name string) int {
	t.Helper()
	n, err := hub.Writes(ctx(t), "kubectl-spoke/", resource, releaseNamespace, name)
	assert.NilError(t, err)
	return n
}

// available tells whether the ManagedCluster's Available condition is True.
func available(mc *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(mc.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == ocm.ManagedClusterConditionAvailable {
			return m["status"] == "True"
		}
	}
	return false
}

// availableManagedClusters names the ManagedClusters that are Available now.
func availableManagedClusters(t testing.TB) []string {
	t.Helper()
	l, err := hub.Dynamic.Resource(ocm.ManagedClusterResource).List(ctx(t), metav1.ListOptions{})
	assert.NilError(t, err)
	var names []string
	for i := range l.Items {
		if available(&l.Items[i]) {
			names = append(names, l.Items[i].GetName())
		}
	}
	return names
}

// waitAvailable waits until each named ManagedCluster exists and is Available.
func waitAvailable(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx(t), 300*time.Millisecond, 2*time.Minute, true, func(cx context.Context) (bool, error) {
			mc := managedClusterIn(cx, t, name)
			return mc != nil && available(mc), nil
		})
		assert.Check(t, err, "ManagedCluster %s Available", name)
	}
}

// secretExists tells whether the spoke's kubeconfig secret exists.
func secretExists(t testing.TB, name string) bool {
	t.Helper()
	return secretKubeconfig(t, name+"-kubeconfig") != nil
}

// secretKubeconfig is the kubeconfig a Secret of the release namespace
// holds; nil when there is no such Secret (any other error fails the test).
func secretKubeconfig(t testing.TB, secret string) []byte {
	t.Helper()
	return secretKubeconfigIn(ctx(t), t, secret)
}

// secretKubeconfigIn is secretKubeconfig within cx.
func secretKubeconfigIn(cx context.Context, t testing.TB, secret string) []byte {
	t.Helper()
	s, err := hub.Kube.CoreV1().Secrets(releaseNamespace).Get(cx, secret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	assert.NilError(t, err)
	return s.Data["kubeconfig"]
}

// valuesFile is a values file of the release with comments and quoting a
// hand edit would have.
const valuesFile = `# mural on the lab hub -- edited by hand, keep the comments
fleetConfig:
  enabled: true
  timeout: 300 # seconds, for clusteradm
  spokes:
  # the hub itself
  - name: hub-as-spoke
    hubRef: {name: hub, namespace: ""}
    kubeconfig:
      inCluster: true
    klusterlet:
      mode: 'Default'
      forceInternalEndpointLookup: true
    cleanupConfig:
      purgeKlusterletOperator: true
      purgeKubeconfigSecret: true
      forceClusterDrain: false
    ociRegistry:
      endpoint: "oci://registry.lab.example/mural"  # mirrored nightly

  hub:
    name: hub   # the Hub resource
image:
  tag: "v0.2.4"
`

// addAndJoin adds a spoke for cluster c with --apply --wait and requires success.
func addAndJoin(t testing.TB, name string, c *harness.Cluster, extra ...string) harness.Result {
	t.Helper()
	r := spoke(t, append([]string{"add", name, "--spoke-kubeconfig", c.Kubeconfig, "--apply", "--wait", "--timeout", "2m"}, extra...)...)
	assert.Equal(t, r.ExitCode, 0, r)
	return r
}

func b64url(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
func itoa(i int64) string    { return strconv.FormatInt(i, 10) }

// agentAddOns is the add-on list a Spoke must carry in this pass's mode:
// the agent add-on in addon mode (not for hub-as-spoke), none in unified mode.
func agentAddOns() []any {
	if mode == fleet.ModeAddon {
		return []any{map[string]any{"configName": fleet.AgentAddOn}}
	}
	return nil
}

// newSpoke is a Spoke named name joining the release's Hub through the
// secret name-kubeconfig, with what this pass's mode requires, and
// mutate's changes to its spec.
func newSpoke(name string, mutate func(spec map[string]any)) *unstructured.Unstructured {
	return newSpokeIn(releaseNamespace, name, mutate)
}

// newSpokeIn is newSpoke in namespace ns (the Hub stays the release's).
func newSpokeIn(ns, name string, mutate func(spec map[string]any)) *unstructured.Unstructured {
	spec := map[string]any{
		"hubRef":        map[string]any{"name": "hub", "namespace": releaseNamespace},
		"kubeconfig":    map[string]any{"secretReference": map[string]any{"name": name + "-kubeconfig"}},
		"cleanupConfig": map[string]any{},
	}
	if a := agentAddOns(); a != nil {
		spec["addOns"] = a
	}
	if mutate != nil {
		mutate(spec)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": fleetconfig.SpokeResource.GroupVersion().String(), "kind": "Spoke",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
}

// createSpoke writes cluster c's kubeconfig into the secret name-kubeconfig
// and creates the Spoke, as a chart install (or a user with kubectl) would.
func createSpoke(t testing.TB, name string, c *harness.Cluster, mutate func(spec map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(c.Kubeconfig)
	assert.NilError(t, err)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: releaseNamespace}, Data: map[string][]byte{"kubeconfig": data}}
	_, err = hub.Kube.CoreV1().Secrets(releaseNamespace).Create(ctx(t), sec, metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = hub.Dynamic.Resource(fleetconfig.SpokeResource).Namespace(releaseNamespace).Create(ctx(t), newSpoke(name, mutate), metav1.CreateOptions{})
	assert.NilError(t, err)
}

// spokeCondition is the status of a Spoke's condition ("" when absent).
func spokeCondition(u *unstructured.Unstructured, t string) string {
	return spokeConditionField(u, t, "status")
}

// spokeConditionField is one field of a Spoke's condition ("" when absent).
func spokeConditionField(u *unstructured.Unstructured, t, field string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == t {
			s, _ := m[field].(string)
			return s
		}
	}
	return ""
}

// waitSpoke waits until the Spoke satisfies cond (it is nil once gone).
func waitSpoke(t testing.TB, name, what string, cond func(*unstructured.Unstructured) bool) {
	t.Helper()
	var last *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(ctx(t), 300*time.Millisecond, 3*time.Minute, true, func(cx context.Context) (bool, error) {
		last = spokeObjectIn(cx, t, name)
		return cond(last), nil
	})
	if err != nil && last != nil {
		conds, _, _ := unstructured.NestedSlice(last.Object, "status", "conditions")
		assert.NilError(t, err, "Spoke %s: %s; it has finalizers %v and conditions %v", name, what, last.GetFinalizers(), conds)
	}
	assert.NilError(t, err, "Spoke %s: %s", name, what)
}

// pivoted tells whether the Spoke's PivotComplete condition is True: the
// spoke-side agent took over (addon mode) or the hub did the spoke's work
// (unified mode, hub-as-spoke).
func pivoted(u *unstructured.Unstructured) bool {
	return u != nil && spokeCondition(u, fleetconfig.SpokeConditionPivotComplete) == "True"
}
