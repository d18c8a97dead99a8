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
	name, file   string
	helmReleases dynamic.ResourceInterface
	// installed is the release as installed (name), base its revision once
	// Flux reconciled the HelmRelease (file).
	installed, base *release.Release
}

// startFluxRelease installs release name with one spoke, spokeName (as
// installRelease does), and the HelmRelease that Flux reconciles it from,
// with the helm-controller stand-in running.
func startFluxRelease(t *testing.T, name, spokeName string) fluxBed {
	t.Helper()
	assert.NilError(t, hub.InstallHelmReleaseCRD(ctx(t)))
	flux := hub.StartFluxHelmController(harness.Context(t, 10*time.Minute), releaseNamespace)
	t.Cleanup(func() { assert.Check(t, is.Len(flux.Errors(), 0)) })
	installed, _ := installRelease(t, name, spokeName)

	// Flux's kustomize-controller applied the manifest from Git.
	file := writeFile(t, name+".yaml", fluxManifest(t, name, "10m", installed.Config))
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
	base, err := hub.HelmRevision(releaseNamespace, name, 0)
	assert.NilError(t, err)
	return fluxBed{name: name, file: file, helmReleases: hrs, installed: installed, base: base}
}

// refusesDrift runs the command args with --helmrelease FILE --apply, FILE
// the manifest as it is now but for spec.interval, which the live
// HelmRelease has otherwise: refused (exit 3), the file untouched and no
// upgrade. The caller checks that the command wrote nothing on the hub.
func (b fluxBed) refusesDrift(t *testing.T, args ...string) {
	t.Helper()
	data := readFile(t, b.file)
	assert.Assert(t, strings.Contains(data, "interval: 10m"))
	drifted := writeFile(t, "drifted.yaml", strings.Replace(data, "interval: 10m", "interval: 5m", 1))
	before := readFile(t, drifted)
	r := spoke(t, append(args, "--helmrelease", drifted, "--apply")...)
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "differs from the file outside spec.values (spec.interval)"), r)
	assert.Check(t, is.Equal(readFile(t, drifted), before), "the file is untouched")
	now, err := hub.HelmRevision(releaseNamespace, b.name, 0)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(now.Version, b.base.Version), "no upgrade")
}

// fileValues is the manifest's spec.values as the file has them now.
func (b fluxBed) fileValues(t *testing.T) map[string]any {
	t.Helper()
	var hr map[string]any
	assert.NilError(t, yaml.Unmarshal([]byte(readFile(t, b.file)), &hr))
	v, _, _ := unstructured.NestedFieldNoCopy(hr, "spec", "values")
	values, _ := v.(map[string]any)
	return values
}

// upgradedOnce checks that the command's apply made Flux upgrade the
// release once, with every value but the spokes as installed, and that the
// live HelmRelease was applied under kubectl spoke's field manager with
// nothing but its values changed; it returns the new revision.
func (b fluxBed) upgradedOnce(t *testing.T) *release.Release {
	t.Helper()
	up, err := hub.HelmRevision(releaseNamespace, b.name, 0)
	assert.NilError(t, err)
	assert.Equal(t, up.Version, b.base.Version+1, "Flux upgraded the release once")
	assert.DeepEqual(t, withoutSpokes(t, up.Config), withoutSpokes(t, b.installed.Config))
	live, err := b.helmReleases.Get(ctx(t), b.name, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Check(t, slices.ContainsFunc(live.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool { return m.Manager == "kubectl-spoke" }),
		"applied under kubectl spoke's field manager")
	interval, _, _ := unstructured.NestedString(live.Object, "spec", "interval")
	assert.Check(t, is.Equal(interval, "10m"))
	return up
}

// TestFluxHelmReleaseApply is add --helmrelease --apply --wait on a release
// Flux manages: the test bed's helm-controller stand-in upgrades the real
// release from the applied HelmRelease, and the release's job (played by
// the harness) applies the Spoke.
func TestFluxHelmReleaseApply(t *testing.T) {
	bed := startFluxRelease(t, "mural-flux", "flux-base")

	// A manifest that would change more than the values is refused.
	bed.refusesDrift(t, "add", "flux-new", "--spoke-kubeconfig", spoke1.Kubeconfig)
	assert.Check(t, !secretExists(t, "flux-new"), "no secret was written")

	r := spoke(t, "add", "flux-new", "--spoke-kubeconfig", spoke1.Kubeconfig, "--helmrelease", bed.file, "--apply", "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.DeepEqual(spokeNames(bed.fileValues(t)), []string{"flux-base", "flux-new"}), "the file has the entry")
	up := bed.upgradedOnce(t)
	assert.DeepEqual(t, spokeNames(up.Config), []string{"flux-base", "flux-new"})
	waitAvailable(t, "flux-new")
	assert.Check(t, spokeObject(t, "flux-new").GetAnnotations()[spokekitUIDAnnotation] != "", "the cluster's UID is recorded")

	for _, spokeName := range []string{"flux-new", "flux-base"} {
		r = spoke(t, "remove", spokeName, "--helmrelease", bed.file, "--wait", "--timeout", "2m")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, spokeObject(t, spokeName) == nil)
	}
}

// TestFluxHelmReleaseRemoveApply is remove and force-remove --helmrelease
// --apply --wait on a release Flux manages: the Spoke deleted, then the
// HelmRelease applied without the entry, Flux's upgrade makes the next
// revision with only the spokes changed, and the release's job does not
// register the spoke again. A manifest that differs outside its values is
// refused first, writing nothing.
func TestFluxHelmReleaseRemoveApply(t *testing.T) {
	for _, c := range []struct {
		command string
		flags   []string
	}{
		{"remove", []string{"--wait"}},
		{"force-remove", []string{"--yes", "--even-if-reachable"}}, // it always waits
	} {
		t.Run(c.command, func(t *testing.T) {
			spokeName := "flux-" + c.command
			bed := startFluxRelease(t, "mural-"+spokeName, spokeName)
			args := append([]string{c.command, spokeName, "--timeout", "2m"}, c.flags...)

			bed.refusesDrift(t, args...)
			assert.Check(t, spokeObject(t, spokeName) != nil, "the Spoke is still there")

			r := spoke(t, append(args, "--helmrelease", bed.file, "--apply")...)
			assert.Equal(t, r.ExitCode, 0, r)
			assert.Check(t, is.Contains(r.Stdout, "Ready: Flux upgraded the release"), r)
			assert.Check(t, is.Len(spokeNames(bed.fileValues(t)), 0), "the entry left the file")
			up := bed.upgradedOnce(t)
			assert.Check(t, is.Len(spokeNames(up.Config), 0))
			assert.Check(t, is.Contains(r.Stdout, "ManagedCluster and namespace "+spokeName), r)
			assert.Check(t, spokeObject(t, spokeName) == nil, "the Spoke is gone, and the upgrade's job did not apply it again")
		})
	}
}

// TestFluxHelmReleaseRotateApply is rotate-kubeconfig --secret
// --helmrelease --apply --wait on a release Flux manages: the entry points
// at the new secret in the file, on the hub and in the revision Flux makes,
// so the release's job keeps the Spoke on it. A manifest that differs
// outside its values is refused first, writing no secret.
func TestFluxHelmReleaseRotateApply(t *testing.T) {
	const spokeName, secret = "flux-rotate", "flux-rotate-2027"
	bed := startFluxRelease(t, "mural-flux-rotate", spokeName)
	args := []string{"rotate-kubeconfig", spokeName, "--spoke-kubeconfig", spoke2.Kubeconfig, "--secret", secret}

	bed.refusesDrift(t, args...)
	assert.Check(t, !secretExists(t, secret), "no secret was written")
	assert.Check(t, is.Equal(secretReference(t, spokeName), spokeName+"-kubeconfig"), "the Spoke is not re-pointed")

	r := spoke(t, append(args, "--helmrelease", bed.file, "--apply", "--wait", "--timeout", "2m")...)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "Ready: Flux upgraded the release"), r)
	assert.Check(t, is.Equal(spokeSecret(bed.fileValues(t), spokeName), secret), "the file's entry names the new secret")
	up := bed.upgradedOnce(t)
	assert.Check(t, is.Equal(spokeSecret(up.Config, spokeName), secret), "the revision's entry names the new secret")
	// Flux's upgrade waited for its job, which applied the entry again.
	assert.Check(t, is.Equal(secretReference(t, spokeName), secret), "the Spoke stays on the new secret")

	r = spoke(t, "remove", spokeName, "--helmrelease", bed.file, "--apply", "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, spokeObject(t, spokeName) == nil)
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
