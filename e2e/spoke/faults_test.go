//go:build e2e

package spoke

import (
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
)

// Each scenario makes the hub's API server fail in the middle of a command
// (through a fault proxy in front of it), checks the command says what it
// did and did not do and exits 1, and then runs the same command again,
// straight to the hub, to show it finishes with nothing lost or left over.

// throughFault returns a `kubectl spoke` runner through a fault proxy in
// front of the hub.
func throughFault(t *testing.T, f *harness.Fault) func(args ...string) harness.Result {
	t.Helper()
	p := hub.WithFault(ctx(t), t, f)
	return func(args ...string) harness.Result {
		t.Helper()
		forgetEarlierTestsClusters(t)
		r := harness.Kubectl(t, p.For(t.TempDir()), append([]string{"spoke", "-n", releaseNamespace}, args...)...)
		return r
	}
}

func entries(t *testing.T, path, name string) int {
	t.Helper()
	return strings.Count(readFile(t, path), "- name: "+name+"\n")
}

func secretReference(t *testing.T, name string) string {
	t.Helper()
	ref, _, _ := unstructured.NestedString(spokeObject(t, name).Object, "spec", "kubeconfig", "secretReference", "name")
	return ref
}

// clientCert is the client certificate of a kubeconfig's current user.
func clientCert(t *testing.T, kubeconfig []byte) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	assert.NilError(t, err)
	assert.Assert(t, cfg.Contexts[cfg.CurrentContext] != nil, "a current context")
	cert := currentUser(cfg).ClientCertificateData
	assert.Assert(t, len(cert) > 0, "a client certificate")
	return cert
}

func TestFaultAddSecretWriteFails(t *testing.T) {
	values := writeFile(t, "values.yaml", valuesFile)
	// The create of the secret (the only secret it writes) hangs until the
	// client gives up.
	viaFault := throughFault(t, &harness.Fault{Method: "POST", PathContains: "/namespaces/" + releaseNamespace + "/secrets", Action: harness.Stall})
	args := []string{"add", "fault-secret", "--spoke-kubeconfig", spoke1.Kubeconfig, "--values", values, "--apply"}

	r := viaFault(append(args, "--request-timeout", "5s")...)
	assert.Equal(t, r.ExitCode, 1, r)
	assert.Check(t, is.Contains(r.Stderr, "writing secret mural-system/fault-secret-kubeconfig"), r)
	assert.Check(t, is.Contains(r.Stderr, "nothing else was changed"), r)
	assert.Check(t, !secretExists(t, "fault-secret"))
	assert.Equal(t, readFile(t, values), valuesFile, "the values file is untouched")
	assert.Check(t, spokeObject(t, "fault-secret") == nil)

	r = spoke(t, args...)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, secretExists(t, "fault-secret"))
	assert.Equal(t, entries(t, values, "fault-secret"), 1)
	assert.Equal(t, secretReference(t, "fault-secret"), "fault-secret-kubeconfig")
}

func TestFaultAddSpokeAnswerLost(t *testing.T) {
	values := writeFile(t, "values.yaml", valuesFile)
	// The API server creates the Spoke; the answer never reaches the command.
	viaFault := throughFault(t, &harness.Fault{Method: "POST", PathContains: "/namespaces/" + releaseNamespace + "/spokes", Action: harness.LoseResponse})
	args := []string{"add", "fault-spoke", "--spoke-kubeconfig", spoke1.Kubeconfig, "--values", values, "--apply"}

	r := viaFault(args...)
	assert.Equal(t, r.ExitCode, 1, r)
	assert.Check(t, is.Contains(r.Stderr, "creating Spoke mural-system/fault-spoke"), r)
	assert.Check(t, is.Contains(r.Stderr, "the secret and values entry are in place: run the same command again"), r)
	assert.Check(t, secretExists(t, "fault-spoke"))
	assert.Equal(t, entries(t, values, "fault-spoke"), 1)
	edited := readFile(t, values)
	created := spokeObject(t, "fault-spoke")
	assert.Assert(t, created != nil, "the API server made the Spoke whose answer was lost")

	r = spoke(t, args...)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "entry already in fleetConfig.spokes"), r)
	assert.Check(t, is.Contains(r.Stdout, "already there"), r)
	assert.Equal(t, readFile(t, values), edited, "no second entry")
	assert.Equal(t, secretReference(t, "fault-spoke"), "fault-spoke-kubeconfig")
	assert.Equal(t, spokeObject(t, "fault-spoke").GetUID(), created.GetUID(), "the Spoke is the one made the first time")
}

func TestFaultRemoveAnswerLost(t *testing.T) {
	values := writeFile(t, "values.yaml", valuesFile)
	// Not joined yet when the DELETE lands (no --wait), with the chart's
	// cleanupConfig (forceClusterDrain on). Upstream's hubCleanupPreflight
	// (fleetconfig-controller internal/controller/v1beta1/spoke_handler.go)
	// taints and deletes as for any delete: the lost answer is the client's
	// alone, and nothing of the spoke may be left on the hub.
	r := spoke(t, "add", "fault-remove", "--spoke-kubeconfig", spoke1.Kubeconfig, "--values", values, "--apply")
	assert.Equal(t, r.ExitCode, 0, r)
	viaFault := throughFault(t, &harness.Fault{Method: "DELETE", PathContains: "/spokes/fault-remove", Action: harness.LoseResponse})
	args := []string{"remove", "fault-remove", "--values", values, "--wait", "--timeout", "2m"}

	r = viaFault(args...)
	assert.Equal(t, r.ExitCode, 1, r)
	assert.Check(t, is.Contains(r.Stderr, "deleting Spoke mural-system/fault-remove"), r)
	assert.Check(t, is.Contains(r.Stderr, "the values entry was not removed: run the same command again"), r)
	assert.Equal(t, entries(t, values, "fault-remove"), 1)
	s := spokeObject(t, "fault-remove")
	assert.Check(t, s == nil || s.GetDeletionTimestamp() != nil, "the delete whose answer was lost reached the hub")

	r = spoke(t, args...)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "entry removed"), r)
	assert.Equal(t, readFile(t, values), valuesFile, "the file is back to what it was")
	assert.Check(t, spokeObject(t, "fault-remove") == nil)
	assert.Check(t, managedCluster(t, "fault-remove") == nil)
}

func TestFaultRotateIntoNewSecret(t *testing.T) {
	// Joined, so the fleet controller no longer changes the Spoke under the
	// rotation's guarded patch.
	addAndJoin(t, "fault-rotate", spoke1)
	viaFault := throughFault(t, &harness.Fault{Method: "PATCH", PathContains: "/spokes/fault-rotate", Action: harness.Unavailable})
	rotated := writeKubeconfig(t, signedCert(t, spoke1, "rotated", time.Now().Add(2*365*24*time.Hour)))
	args := []string{"rotate-kubeconfig", "fault-rotate", "--secret", "fault-rotate-2027", "--spoke-kubeconfig", rotated}
	old := secretKubeconfig(t, "fault-rotate-kubeconfig")

	r := viaFault(args...)
	assert.Equal(t, r.ExitCode, 1, r)
	assert.Check(t, is.Contains(r.Stderr, "pointing Spoke fault-rotate at secret fault-rotate-2027"), r)
	assert.Check(t, is.Contains(r.Stderr, "the secret was written, the Spoke still uses the old one: run this again"), r)
	assert.Equal(t, secretReference(t, "fault-rotate"), "fault-rotate-kubeconfig")
	assert.Check(t, is.DeepEqual(secretKubeconfig(t, "fault-rotate-kubeconfig"), old), "the old secret stays as it was")
	assert.Check(t, is.DeepEqual(clientCert(t, secretKubeconfig(t, "fault-rotate-2027")), clientCert(t, []byte(readFile(t, rotated)))), "the new secret holds the new credential")

	r = spoke(t, args...)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "Spoke points at it"), r)
	assert.Equal(t, secretReference(t, "fault-rotate"), "fault-rotate-2027")
	assert.Check(t, is.DeepEqual(clientCert(t, secretKubeconfig(t, "fault-rotate-2027")), clientCert(t, []byte(readFile(t, rotated)))))
}

func TestFaultForceRemoveDeleteFails(t *testing.T) {
	// Joined: the ManagedCluster force-remove deletes is there before it runs.
	addAndJoin(t, "fault-force", spoke1)
	viaFault := throughFault(t, &harness.Fault{Method: "DELETE", PathContains: "/spokes/fault-force", Action: harness.Unavailable})
	args := []string{"force-remove", "fault-force", "--yes", "--even-if-reachable", "--timeout", "2m"}

	r := viaFault(args...)
	assert.Equal(t, r.ExitCode, 1, r)
	assert.Check(t, is.Contains(r.Stderr, "deleting Spoke mural-system/fault-force"), r)
	assert.Check(t, is.Contains(r.Stderr, "it is annotated for force-delete: run the same command again"), r)
	s := spokeObject(t, "fault-force")
	assert.Assert(t, s != nil)
	assert.Equal(t, s.GetAnnotations()[fleetconfig.ForceDeleteAnnotation], "true")
	assert.Check(t, s.GetDeletionTimestamp() == nil, "not deleted")

	old := managedCluster(t, "fault-force")
	assert.Assert(t, old != nil)
	oldNS, err := hub.Kube.CoreV1().Namespaces().Get(ctx(t), "fault-force", metav1.GetOptions{})
	assert.NilError(t, err)
	r = spoke(t, args...)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "gone"), r)
	assert.Check(t, spokeObject(t, "fault-force") == nil)
	// force-delete leaves the klusterlet running (upstream does), and with
	// its bootstrap credential it may register again, before or after the
	// command ends: a new ManagedCluster, never accepted, and a new cluster
	// namespace for it. What force-remove deleted stays gone.
	mc := managedCluster(t, "fault-force")
	if mc != nil {
		assert.Check(t, mc.GetUID() != old.GetUID(), "the ManagedCluster force-remove deleted is gone")
		accepted, _, _ := unstructured.NestedBool(mc.Object, "spec", "hubAcceptsClient")
		assert.Check(t, !accepted)
	}
	if strings.Contains(r.Stderr, "registered again") {
		assert.Check(t, mc != nil, "the command named a registration the hub does not have: %s", r.Stderr)
	}
	ns, err := hub.Kube.CoreV1().Namespaces().Get(ctx(t), "fault-force", metav1.GetOptions{})
	if err == nil {
		assert.Check(t, ns.UID != oldNS.UID, "the cluster namespace force-remove deleted is still there")
	} else {
		assert.Check(t, apierrors.IsNotFound(err), "reading the cluster namespace: %v", err)
	}
}
