//go:build e2e

package spoke

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/spokekit/spokekit/e2e/harness"
)

// A cluster whose klusterlet was joined to another hub, as `clusteradm
// join` leaves it (its bootstrap kubeconfig in
// open-cluster-management-agent), is refused until it is removed there.
// It is a cluster of its own: on spoke-1, where this hub's agents run,
// deleting that Secret afterwards made every agent there rebootstrap and
// exit, which failed the test bed.
func TestAddRefusesAClusterOfAnotherHub(t *testing.T) {
	other, err := env.StartCluster(harness.Context(t, harness.SetupTimeout), "other-hubs")
	assert.NilError(t, err)
	t.Cleanup(func() { assert.Check(t, other.Stop(ctx(t))) })
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: "https://old-hub.example.com:6443"}
	cfg.AuthInfos["bootstrap"] = &clientcmdapi.AuthInfo{Token: "bootstrap-token"}
	cfg.Contexts["bootstrap"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "bootstrap"}
	cfg.CurrentContext = "bootstrap"
	data, err := clientcmd.Write(*cfg)
	assert.NilError(t, err)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management-agent"}}
	_, err = other.Kube.CoreV1().Namespaces().Create(ctx(t), ns, metav1.CreateOptions{})
	assert.NilError(t, err)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-hub-kubeconfig", Namespace: ns.Name}, Data: map[string][]byte{"kubeconfig": data}}
	_, err = other.Kube.CoreV1().Secrets(ns.Name).Create(ctx(t), secret, metav1.CreateOptions{})
	assert.NilError(t, err)

	values := writeFile(t, "values.yaml", valuesFile)
	r := spoke(t, "add", "elsewhere", "--spoke-kubeconfig", other.Kubeconfig, "--values", values, "--apply")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "still registered with another hub"), r)
	assert.Check(t, is.Contains(r.Stderr, "https://old-hub.example.com:6443"), r)
	assert.Check(t, is.Contains(r.Stderr, "nothing was changed"), r)
	assert.Equal(t, readFile(t, values), valuesFile, "the values file is untouched")
	assert.Check(t, !secretExists(t, "elsewhere"), "no secret was written")
	assert.Check(t, spokeObject(t, "elsewhere") == nil, "no Spoke was written")
}

// A cluster this hub has already under another name is refused, naming
// that Spoke (a second join would take over its one klusterlet); once it
// is removed there, the cluster may be added under the new name.
func TestAddRefusesAClusterTheHubHasUnderAnotherName(t *testing.T) {
	addAndJoin(t, "twin-a", spoke2)
	assert.Check(t, spokeObject(t, "twin-a").GetAnnotations()[spokekitUIDAnnotation] != "", "add records the cluster's kube-system UID")

	values := writeFile(t, "values.yaml", valuesFile)
	r := spoke(t, "add", "twin-b", "--spoke-kubeconfig", spoke2.Kubeconfig, "--values", values, "--apply")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "the hub already has this cluster as spoke "+releaseNamespace+"/twin-a"), r)
	assert.Check(t, is.Contains(r.Stderr, "nothing was changed"), r)
	assert.Equal(t, readFile(t, values), valuesFile, "the values file is untouched")
	assert.Check(t, !secretExists(t, "twin-b"), "no secret was written")
	assert.Check(t, spokeObject(t, "twin-b") == nil, "no Spoke was written")

	r = spoke(t, "remove", "twin-a", "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	addAndJoin(t, "twin-b", spoke2)
}
