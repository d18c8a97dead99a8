//go:build e2e

package spoke

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	release "helm.sh/helm/v4/pkg/release/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/spokekit/spokekit/e2e/harness"
)

// fluxManifest is a HelmRelease manifest of release name with values, as a
// Flux repository holds it; interval is its spec.interval.
func fluxManifest(t *testing.T, name, interval string, values map[string]any) string {
	t.Helper()
	hr := map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": name, "namespace": releaseNamespace},
		"spec": map[string]any{
			"interval": interval,
			"chart":    map[string]any{"spec": map[string]any{"chart": "mural", "sourceRef": map[string]any{"kind": "HelmRepository", "name": "mural"}}},
			"values":   values,
		},
	}
	data, err := yaml.Marshal(hr)
	assert.NilError(t, err)
	return "# the hub's release, as Flux reconciles it\n" + string(data)
}

// fluxBed is a real Helm release Flux manages on the test bed: the
// HelmRelease as Flux's kustomize-controller applied it from file, the
// helm-controller stand-in and the release's job running.
type fluxBed struct {
	file         string
	helmReleases dynamic.ResourceInterface
	// installed is the release as installed, base its revision once Flux
	// reconciled the HelmRelease.
	installed, base *release.Release
}

// startFluxRelease installs release name with one spoke, spokeName (its
// secret stored by add, the cluster spoke2), and the HelmRelease that Flux
// reconciles it from; it waits until the spoke joined.
func startFluxRelease(t *testing.T, name, spokeName string) fluxBed {
	t.Helper()
	assert.NilError(t, hub.InstallHelmReleaseCRD(ctx(t)))
	run := harness.Context(t, 10*time.Minute)
	job := hub.StartSpokesJob(run, releaseNamespace, name)
	flux := hub.StartFluxHelmController(run, releaseNamespace)
	t.Cleanup(func() {
		assert.Check(t, is.Len(job.Errors(), 0))
		assert.Check(t, is.Len(flux.Errors(), 0))
	})
	// The release starts with one spoke, its secret stored by add.
	valuesPath := writeFile(t, "values.yaml", valuesFile)
	r := spoke(t, "add", spokeName, "--spoke-kubeconfig", spoke2.Kubeconfig, "--values", valuesPath)
	assert.Equal(t, r.ExitCode, 0, r)
	var valuesDoc map[string]any
	assert.NilError(t, yaml.Unmarshal([]byte(readFile(t, valuesPath)), &valuesDoc))
	initial := otherValues()
	for _, e := range valuesDoc["fleetConfig"].(map[string]any)["spokes"].([]any) {
		if e.(map[string]any)["name"] == spokeName {
			initial["fleetConfig"].(map[string]any)["spokes"] = []any{e}
		}
	}
	installed, err := hub.HelmInstall(ctx(t), "../charts/mural", releaseNamespace, name, initial)
	assert.NilError(t, err)
	t.Cleanup(func() { assert.Check(t, hub.HelmUninstall(releaseNamespace, name)) })

	// Flux's kustomize-controller applied the manifest from Git.
	file := writeFile(t, name+".yaml", fluxManifest(t, name, "10m", initial))
	var obj map[string]any
	assert.NilError(t, yaml.Unmarshal([]byte(readFile(t, file)), &obj))
	data, err := json.Marshal(obj)
	assert.NilError(t, err)
	hrs := hub.Dynamic.Resource(harness.HelmReleaseResource).Namespace(releaseNamespace)
	force := true
	_, err = hrs.Patch(ctx(t), name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "kustomize-controller", Force: &force})
	assert.NilError(t, err)
	t.Cleanup(func() { assert.Check(t, hrs.Delete(ctx(t), name, metav1.DeleteOptions{})) })
	waitHelmReleaseObserved(t, name, 1)
	waitAvailable(t, spokeName)
	base, err := hub.HelmRevision(releaseNamespace, name, 0)
	assert.NilError(t, err)
	return fluxBed{file: file, helmReleases: hrs, installed: installed, base: base}
}

// drifted writes the manifest as it is now but for spec.interval, which
// the live HelmRelease has otherwise.
func (b fluxBed) drifted(t *testing.T) string {
	t.Helper()
	data := readFile(t, b.file)
	assert.Assert(t, strings.Contains(data, "interval: 10m"))
	return writeFile(t, "drifted.yaml", strings.Replace(data, "interval: 10m", "interval: 5m", 1))
}

// TestFluxHelmReleaseApply is add --helmrelease --apply --wait on a release
// Flux manages: the test bed's helm-controller stand-in upgrades the real
// release from the applied HelmRelease, and the release's job (played by
// the harness) applies the Spoke.
func TestFluxHelmReleaseApply(t *testing.T) {
	const name = "mural-flux"
	bed := startFluxRelease(t, name, "flux-base")
	file, hrs, installed, base := bed.file, bed.helmReleases, bed.installed, bed.base

	// A manifest that would change more than the values is refused.
	drifted := bed.drifted(t)
	r := spoke(t, "add", "flux-new", "--spoke-kubeconfig", spoke1.Kubeconfig, "--helmrelease", drifted, "--apply")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "differs from the file outside spec.values (spec.interval)"), r)
	assert.Check(t, !secretExists(t, "flux-new"), "no secret was written")
	assert.Check(t, !strings.Contains(readFile(t, drifted), "flux-new"), "the file is untouched")

	r = spoke(t, "add", "flux-new", "--spoke-kubeconfig", spoke1.Kubeconfig, "--helmrelease", file, "--apply", "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(readFile(t, file), "name: flux-new"), "the file has the entry")
	up, err := hub.HelmRevision(releaseNamespace, name, 0)
	assert.NilError(t, err)
	assert.Equal(t, up.Version, base.Version+1, "Flux upgraded the release once")
	assert.DeepEqual(t, spokeNames(up.Config), []string{"flux-base", "flux-new"})
	assert.DeepEqual(t, withoutSpokes(t, up.Config), withoutSpokes(t, installed.Config))
	live, err := hrs.Get(ctx(t), name, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Check(t, slices.ContainsFunc(live.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool { return m.Manager == "kubectl-spoke" }),
		"applied under kubectl spoke's field manager")
	interval, _, _ := unstructured.NestedString(live.Object, "spec", "interval")
	assert.Check(t, is.Equal(interval, "10m"))
	waitAvailable(t, "flux-new")
	assert.Check(t, spokeObject(t, "flux-new").GetAnnotations()[spokekitUIDAnnotation] != "", "the cluster's UID is recorded")

	for _, spokeName := range []string{"flux-new", "flux-base"} {
		r = spoke(t, "remove", spokeName, "--helmrelease", file, "--wait", "--timeout", "2m")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, spokeObject(t, spokeName) == nil)
	}
}

// TestFluxHelmReleaseRemoveApply is remove --helmrelease --apply --wait on
// a release Flux manages: the Spoke deleted, then the HelmRelease applied
// without the entry, Flux's upgrade makes the next revision with only the
// spokes changed, and the release's job does not register the spoke again.
// A manifest that differs outside its values is refused first, writing
// nothing.
func TestFluxHelmReleaseRemoveApply(t *testing.T) {
	const name = "mural-flux-remove"
	bed := startFluxRelease(t, name, "flux-gone")

	drifted := bed.drifted(t)
	r := spoke(t, "remove", "flux-gone", "--helmrelease", drifted, "--apply", "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "differs from the file outside spec.values (spec.interval)"), r)
	assert.Check(t, spokeObject(t, "flux-gone") != nil, "the Spoke is still there")
	assert.Check(t, strings.Contains(readFile(t, drifted), "name: flux-gone"), "the file is untouched")
	now, err := hub.HelmRevision(releaseNamespace, name, 0)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(now.Version, bed.base.Version), "no upgrade")

	r = spoke(t, "remove", "flux-gone", "--helmrelease", bed.file, "--apply", "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "Ready: Flux upgraded the release"), r)
	assert.Check(t, !strings.Contains(readFile(t, bed.file), "flux-gone"), "the entry left the file")
	up, err := hub.HelmRevision(releaseNamespace, name, 0)
	assert.NilError(t, err)
	assert.Equal(t, up.Version, bed.base.Version+1, "Flux upgraded the release once")
	assert.Check(t, is.Len(spokeNames(up.Config), 0))
	assert.DeepEqual(t, withoutSpokes(t, up.Config), withoutSpokes(t, bed.installed.Config))
	live, err := bed.helmReleases.Get(ctx(t), name, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Check(t, slices.ContainsFunc(live.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool { return m.Manager == "kubectl-spoke" }),
		"applied under kubectl spoke's field manager")
	assert.Check(t, is.Contains(r.Stdout, "ManagedCluster and namespace flux-gone"), r)
	assert.Check(t, spokeObject(t, "flux-gone") == nil, "the Spoke is gone, and the upgrade's job did not apply it again")
}

// waitHelmReleaseObserved waits until the HelmRelease's status says its
// generation gen was reconciled.
func waitHelmReleaseObserved(t *testing.T, name string, gen int64) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx(t), 300*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := hub.Dynamic.Resource(harness.HelmReleaseResource).Namespace(releaseNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		return observed >= gen, nil
	})
	assert.NilError(t, err, "HelmRelease %s observed at generation %d", name, gen)
}
