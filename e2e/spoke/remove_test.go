//go:build e2e

package spoke

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/internal/api/ocm"
)

// createWork creates a ManifestWork in the cluster namespace, optionally
// owned by an add-on or labelled by a placement.
func createWork(t *testing.T, cluster, name string, mutate func(*unstructured.Unstructured)) {
	t.Helper()
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
		"metadata": map[string]any{"name": name, "namespace": cluster},
		"spec": map[string]any{"workload": map[string]any{"manifests": []any{map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "default"},
		}}}},
	}}
	if mutate != nil {
		mutate(w)
	}
	_, err := hub.Dynamic.Resource(ocm.ManifestWorkResource).Namespace(cluster).Create(ctx(t), w, metav1.CreateOptions{})
	assert.NilError(t, err)
}

func TestRemoveBlockedByManifestWorkThenAllowed(t *testing.T) {
	// forceClusterDrain is on by default (the chart's default): this spoke opts out.
	addAndJoin(t, "blocked", spoke2, "--force-cluster-drain=false")
	writes := spokeWrites(t, "spokes", "blocked")
	createWork(t, "blocked", "hand-made", nil)
	// An add-on's work, owned by a ManagedClusterAddOn that exists, so the
	// garbage collector keeps it while remove looks.
	addon := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ocm.ManagedClusterAddOnResource.GroupVersion().String(), "kind": ocm.ManagedClusterAddOnKind,
		"metadata": map[string]any{"name": "e2e-addon", "namespace": "blocked"},
		"spec":     map[string]any{},
	}}
	addon, err := hub.Dynamic.Resource(ocm.ManagedClusterAddOnResource).Namespace("blocked").Create(ctx(t), addon, metav1.CreateOptions{})
	assert.NilError(t, err)
	createWork(t, "blocked", "from-addon", func(u *unstructured.Unstructured) {
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: addon.GetAPIVersion(), Kind: addon.GetKind(), Name: addon.GetName(), UID: addon.GetUID()}})
	})
	createWork(t, "blocked", "from-placement", func(u *unstructured.Unstructured) {
		u.SetLabels(map[string]string{ocm.PlacementLabel: "spokes"})
	})
	// The spoke's work agent applies the hand-made work.
	waitConfigMap(t, spoke2, "hand-made", true)

	r := spoke(t, "status", "blocked")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Regexp(`blocking ManifestWorks\s+hand-made \(they block removal`, r.Stdout), r)
	assert.Check(t, is.Regexp(`helm release\s+none`, r.Stdout), r)
	assert.Check(t, is.Regexp(`credential\s+client certificate, expires`, r.Stdout), r)

	r = spoke(t, "remove", "blocked", "--wait")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "ManifestWorks that no placement or add-on owns"), r)
	assert.Check(t, is.Contains(r.Stderr, "hand-made"), r)
	assert.Check(t, !strings.Contains(r.Stderr, "from-addon") && !strings.Contains(r.Stderr, "from-placement"), r)
	_, err = hub.Dynamic.Resource(ocm.ManifestWorkResource).Namespace("blocked").Get(ctx(t), "from-addon", metav1.GetOptions{})
	assert.NilError(t, err, "the add-on's work was there when remove looked past it")
	// The add-on goes as `clusteradm addon disable` takes it: the garbage
	// collector deletes its work (upstream's hub cleanup would wait for it).
	assert.NilError(t, hub.Dynamic.Resource(ocm.ManagedClusterAddOnResource).Namespace("blocked").Delete(ctx(t), "e2e-addon", metav1.DeleteOptions{}))
	waitGone(t, "blocked", "from-addon")
	assert.Check(t, is.Contains(r.Stderr, "kubectl delete manifestwork -n blocked hand-made"), r)
	s := spokeObject(t, "blocked")
	assert.Assert(t, s != nil && s.GetDeletionTimestamp() == nil, "the Spoke is not deleted")
	assert.Equal(t, spokeWrites(t, "spokes", "blocked"), writes, "the Spoke is untouched")

	// Deleted on the hub, the work leaves the spoke: the agent removes it.
	deleteWork(t, "blocked", "hand-made")
	waitConfigMap(t, spoke2, "hand-made", false)

	// Placement works block too while forceClusterDrain is off: upstream's
	// controller would wait for them forever.
	r = spoke(t, "remove", "blocked", "--wait")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "from-placement"), r)
	assert.Check(t, is.Contains(r.Stderr, "run `kubectl fleetdrain cluster blocked` first"), r)
	assert.Check(t, spokeObject(t, "blocked").GetDeletionTimestamp() == nil, "the Spoke is not deleted")
	assert.Equal(t, spokeWrites(t, "spokes", "blocked"), writes, "the Spoke is untouched")

	// No placement made it (it is made by hand), so no drain takes it away.
	deleteWork(t, "blocked", "from-placement")
	r = spoke(t, "remove", "blocked", "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "gone"), r)
	assert.Check(t, spokeObject(t, "blocked") == nil)
	assert.Check(t, managedCluster(t, "blocked") == nil)
	_, err = hub.Kube.CoreV1().Namespaces().Get(ctx(t), "blocked", metav1.GetOptions{})
	assert.Check(t, apierrors.IsNotFound(err), "the cluster namespace is gone: %v", err)

	r = spoke(t, "remove", "blocked", "--wait")
	assert.Equal(t, r.ExitCode, 0, "removing again is a no-op: %s", r)
	assert.Check(t, is.Contains(r.Stdout, "already deleted"), r)
}

func TestRemoveHelmOwnedSpoke(t *testing.T) {
	values := writeFile(t, "values.yaml", valuesFile)
	addAndJoin(t, "helm-owned", spoke1, "--values", values)
	// The release's chart renders no Spoke in the test bed (its job applies
	// them): --apply leaves Helm's marks off. Marked by hand, as upstream's
	// chart, which renders Spokes itself, would mark it.
	assert.Equal(t, spokeObject(t, "helm-owned").GetAnnotations()["meta.helm.sh/release-name"], "", "Helm owns no Spoke here")
	for _, args := range [][]string{
		{"annotate", "spoke", "helm-owned", "meta.helm.sh/release-name=mural", "meta.helm.sh/release-namespace=" + releaseNamespace},
		{"label", "spoke", "helm-owned", "app.kubernetes.io/managed-by=Helm"},
	} {
		r := harness.Kubectl(t, hub.For(t.TempDir()), append(args, "-n", releaseNamespace)...)
		assert.Equal(t, r.ExitCode, 0, r)
	}

	// Without a file, the warning comes from the release named on the Spoke.
	r := spoke(t, "remove", "helm-owned", "--dry-run=client")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stderr, `Warning: spoke helm-owned is rendered by Helm release "mural"`), r)
	assert.Check(t, is.Contains(r.Stderr, "the next helm upgrade registers it again"), r)

	// A file without its entry: the release's values must live elsewhere.
	elsewhere := writeFile(t, "elsewhere.yaml", valuesFile)
	r = spoke(t, "remove", "helm-owned", "--values", elsewhere, "--wait")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stderr, `Warning: spoke helm-owned is rendered by Helm release "mural", but `+elsewhere+` has no entry for it`), r)
	assert.Check(t, is.Contains(r.Stderr, "the release's values live elsewhere"), r)
	assert.Check(t, is.Contains(r.Stdout, "no entry there"), r)
	assert.Equal(t, readFile(t, elsewhere), valuesFile)
	assert.Check(t, spokeObject(t, "helm-owned") == nil)

	// With the file, the entry leaves and nothing is left to warn about.
	assert.Check(t, is.Contains(readFile(t, values), "- name: helm-owned"))
	r = spoke(t, "remove", "helm-owned", "--values", values)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "entry removed"), r)
	assert.Equal(t, readFile(t, values), valuesFile, "the file is back to what it was, byte for byte")
}
