package helmrelease

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"io"
	"os"
	"testing"

	"gotest.tools/v3/assert"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/kube"
	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// memoryClient is a Client over in-memory release storage and a cluster
// that takes every object.
func memoryClient(t *testing.T, recs ...*release.Release) *Client {
	t.Helper()
	cfg := &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: common.DefaultCapabilities,
	}
	for _, r := range recs {
		assert.NilError(t, cfg.Releases.Create(r))
	}
	return newClient(cfg, "mural-system")
}

func revision(t *testing.T, c *Client, v int) *release.Release {
	t.Helper()
	r, err := c.cfg.Releases.Get("mural", v)
	assert.NilError(t, err)
	rel, err := v1Release(r)
	assert.NilError(t, err)
	return rel
}

func TestUpgradeMakesTheNextRevisionWithTheRecordsChart(t *testing.T) {
	c := memoryClient(t, deployed(userValues()))
	r, err := c.Read("mural")
	assert.NilError(t, err)
	ch := edit(t, r, addSpoke2)

	got, err := c.Upgrade(context.Background(), ch, UpgradeOptions{})
	assert.NilError(t, err)
	assert.Equal(t, got.Revision, 4)
	assert.Equal(t, got.Status, "deployed")
	next := revision(t, c, 4)
	assert.DeepEqual(t, next.Config, ch.Values)
	assert.DeepEqual(t, withoutSpokes(next.Config), withoutSpokes(userValues()))
	assert.Equal(t, next.Chart.Metadata.Version, "1.2.0")
	assert.Assert(t, bytes.Contains([]byte(next.Manifest), []byte("name: spoke-spoke-2")), next.Manifest)
	assert.Equal(t, revision(t, c, 3).Info.Status, rcommon.StatusSuperseded)
}

func TestServerDryRunWritesNoRevision(t *testing.T) {
	c := memoryClient(t, deployed(userValues()))
	r, err := c.Read("mural")
	assert.NilError(t, err)
	_, err = c.Upgrade(context.Background(), edit(t, r, addSpoke2), UpgradeOptions{ServerDryRun: true})
	assert.NilError(t, err)
	_, err = c.cfg.Releases.Get("mural", 4)
	assert.ErrorIs(t, err, driver.ErrReleaseNotFound)
}

// An upgrade another client made after the change was planned is never
// overwritten with values computed from the revision before it.
func TestUpgradeRefusedWhenAnotherUpgradeMovedOn(t *testing.T) {
	for _, status := range []rcommon.Status{rcommon.StatusDeployed, rcommon.StatusPendingUpgrade} {
		c := memoryClient(t, deployed(userValues()))
		r, err := c.Read("mural")
		assert.NilError(t, err)
		ch := edit(t, r, addSpoke2)

		other := deployed(userValues())
		other.Version, other.Info = 4, &release.Info{Status: status}
		assert.NilError(t, c.cfg.Releases.Create(other))

		_, err = c.Upgrade(context.Background(), ch, UpgradeOptions{})
		assert.Equal(t, exitcode.Of(err), exitcode.Refused, "%v", err)
		assert.ErrorContains(t, err, "revision 4 now")
		_, err = c.cfg.Releases.Get("mural", 5)
		assert.ErrorIs(t, err, driver.ErrReleaseNotFound)
		assert.DeepEqual(t, revision(t, c, 4).Config, userValues())
	}
}

// The guard's last line: a revision of the same number written between
// Helm's read and its write fails the create, and is left alone.
func TestGuardRefusesARevisionTakenMeanwhile(t *testing.T) {
	c := memoryClient(t, deployed(userValues()))
	c.guard.expect("mural", 4)
	taken := deployed(userValues())
	taken.Version = 4
	assert.NilError(t, c.guard.Driver.Create("sh.helm.release.v1.mural.v4", taken))
	mine := deployed(nil)
	mine.Version = 4
	err := c.guard.Create("sh.helm.release.v1.mural.v4", mine)
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	assert.DeepEqual(t, revision(t, c, 4).Config, userValues())
}

func TestReadRefusesAReleaseThatIsNotThere(t *testing.T) {
	_, err := memoryClient(t).Read("mural")
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	assert.ErrorContains(t, err, `there is no Helm release "mural" in namespace mural-system`)
}

// secretsClient is a Client over release Secrets in a fake cluster.
func secretsClient(secrets ...*corev1.Secret) *Client {
	cs := fake.NewClientset()
	for _, s := range secrets {
		_, _ = cs.CoreV1().Secrets("mural-system").Create(context.Background(), s, metav1.CreateOptions{})
	}
	cfg := &action.Configuration{
		Releases:     storage.Init(driver.NewSecrets(cs.CoreV1().Secrets("mural-system"))),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: common.DefaultCapabilities,
	}
	return newClient(cfg, "mural-system")
}

// helm3Secret is a release record as Helm 3 writes it: the record's JSON
// (testdata/helm3-record.json, in Helm 3's fields, without Helm 4's
// apply_method), gzipped, base64 encoded, in a Secret of type
// helm.sh/release.v1.
func helm3Secret(t *testing.T) *corev1.Secret {
	t.Helper()
	data, err := os.ReadFile("testdata/helm3-record.json")
	assert.NilError(t, err)
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err = w.Write(data)
	assert.NilError(t, err)
	assert.NilError(t, w.Close())
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "sh.helm.release.v1.mural.v2", Namespace: "mural-system",
			Labels: map[string]string{"name": "mural", "owner": "helm", "status": "deployed", "version": "2"},
		},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(gz.Bytes()))},
	}
}

func TestReadsAndUpgradesAHelm3Record(t *testing.T) {
	c := secretsClient(helm3Secret(t))
	r, err := c.Read("mural")
	assert.NilError(t, err)
	assert.Equal(t, r.Revision, 2)
	assert.Equal(t, r.Status, "deployed")
	assert.Equal(t, r.Chart, "mural-1.2.0")
	assert.NilError(t, r.Refusal())
	ch := edit(t, r, addSpoke2)
	assert.Equal(t, withoutSpokes(ch.Values)["image"].(map[string]any)["tag"], "v2.1.0")

	got, err := c.Upgrade(context.Background(), ch, UpgradeOptions{})
	assert.NilError(t, err)
	assert.Equal(t, got.Revision, 3)
	// Helm 4 wrote revision 3 beside Helm 3's revision 2; both read back.
	again, err := c.Read("mural")
	assert.NilError(t, err)
	assert.Equal(t, again.Revision, 3)
	assert.DeepEqual(t, withoutSpokes(revision(t, c, 3).Config), withoutSpokes(revision(t, c, 2).Config))
}

// The upgrade applies as the helm CLI does, under its field manager: a
// release `helm install` made holds its objects' fields under that name,
// and an apply under any other conflicts with each field it changes (the
// e2e upgrade of the test bed's release failed so, on the ConfigMap of its
// Spokes, with the manager taken from the binary's name).
func TestOpenAppliesUnderTheHelmCLIsFieldManager(t *testing.T) {
	kube.ManagedFieldsManager = ""
	t.Cleanup(func() { kube.ManagedFieldsManager = "" })
	_, err := Open(genericclioptions.NewConfigFlags(false), "mural-system")
	assert.NilError(t, err)
	assert.Equal(t, kube.ManagedFieldsManager, "helm")
}
