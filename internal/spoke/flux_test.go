package spoke

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/values"
)

// fluxFile is a HelmRelease manifest as a Flux repository holds it.
const fluxFile = `# the hub's release, reconciled by Flux
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: mural
  namespace: mural-system
  labels: {team: platform}
spec:
  interval: 10m
  chart:
    spec:
      chart: mural
      version: 1.4.0
  values:
    image: {tag: v2.3.1}
    fleetConfig:
      spokes:
      - name: other
        ociRegistry: {endpoint: oci://registry.example.com/mural}
`

// liveHelmRelease is the HelmRelease on the hub: the file as Flux applied
// it, with what the server and Flux add, and mutate's changes.
func liveHelmRelease(t *testing.T, mutate func(u *unstructured.Unstructured)) string {
	t.Helper()
	obj, err := values.ReleaseObject([]byte(fluxFile))
	assert.NilError(t, err)
	u := &unstructured.Unstructured{Object: obj}
	u.SetResourceVersion("41")
	u.SetGeneration(3)
	u.SetLabels(map[string]string{"team": "platform", "kustomize.toolkit.fluxcd.io/name": "hub"})
	assert.NilError(t, unstructured.SetNestedField(u.Object, "Reconcile", "spec", "upgrade", "strategy", "name"))
	assert.NilError(t, unstructured.SetNestedField(u.Object, int64(3), "status", "observedGeneration"))
	if mutate != nil {
		mutate(u)
	}
	data, err := json.Marshal(u.Object)
	assert.NilError(t, err)
	return string(data)
}

func fluxFleet(t *testing.T, live string) (*clitest.APIServer, string) {
	t.Helper()
	srv := fakeFleet(t)
	if live == "" {
		srv.Respond("GET /apis/helm.toolkit.fluxcd.io/v2/namespaces/mural-system/helmreleases/mural", 404, notFound)
	} else {
		srv.Respond("GET /apis/helm.toolkit.fluxcd.io/v2/namespaces/mural-system/helmreleases/mural", 200, live)
	}
	srv.Respond("PATCH /apis/helm.toolkit.fluxcd.io/v2/namespaces/mural-system/helmreleases/mural", 200, live)
	srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 404, notFound)
	srv.Respond("POST /api/v1/namespaces/mural-system/secrets", 201, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"spoke-1-kubeconfig"}}`)
	path := filepath.Join(t.TempDir(), "mural.yaml")
	assert.NilError(t, os.WriteFile(path, []byte(fluxFile), 0o600))
	return srv, path
}

// add --helmrelease --apply applies the edited HelmRelease to the hub,
// server-side under kubectl spoke's field manager with the live
// resourceVersion as precondition, and creates no Spoke: Flux's upgrade
// does, through the release's job.
func TestAddAppliesTheEditedHelmRelease(t *testing.T) {
	srv, path := fluxFleet(t, liveHelmRelease(t, nil))
	code, out, errOut := runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--helmrelease", path, "--apply")
	assert.Equal(t, code, exitcode.OK, errOut)
	assert.Check(t, is.DeepEqual(writes(srv), []string{
		"POST /api/v1/namespaces/mural-system/secrets?fieldManager=kubectl-spoke",
		"PATCH /apis/helm.toolkit.fluxcd.io/v2/namespaces/mural-system/helmreleases/mural?fieldManager=kubectl-spoke&force=true",
	}))
	var sent unstructured.Unstructured
	assert.NilError(t, json.Unmarshal([]byte(srv.Body("PATCH /apis/helm.toolkit.fluxcd.io/v2/namespaces/mural-system/helmreleases/mural")), &sent.Object))
	assert.Check(t, is.Equal(sent.GetResourceVersion(), "41"))
	names, _, _ := unstructured.NestedSlice(sent.Object, "spec", "values", "fleetConfig", "spokes")
	assert.Check(t, is.Len(names, 2))
	tag, _, _ := unstructured.NestedString(sent.Object, "spec", "values", "image", "tag")
	assert.Check(t, is.Equal(tag, "v2.3.1"))
	assert.Check(t, is.Contains(out, "helmrelease mural-system/mural"))
	assert.Check(t, is.Contains(errOut, "commit "+path+" where Flux reads it"))
	assert.Check(t, strings.Contains(readTestFile(t, path), "- name: spoke-1"), "the file has the entry")
}

// What the file would change outside spec.values, or a HelmRelease that is
// not on the hub, is refused before anything is written.
func TestAddRefusesAHelmReleaseThatDiffersOutsideItsValues(t *testing.T) {
	for name, tc := range map[string]struct {
		live    string
		wantErr string
	}{
		"another chart version": {liveHelmRelease(t, func(u *unstructured.Unstructured) {
			assert.NilError(t, unstructured.SetNestedField(u.Object, "1.5.0", "spec", "chart", "spec", "version"))
		}), "differs from the file outside spec.values (spec.chart.spec.version)"},
		"a label the file sets otherwise": {liveHelmRelease(t, func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{"team": "ml"})
		}), "(metadata.labels.team)"},
		"not on the hub": {"", "there is no HelmRelease mural-system/mural on the hub"},
	} {
		t.Run(name, func(t *testing.T) {
			srv, path := fluxFleet(t, tc.live)
			code, _, errOut := runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--helmrelease", path, "--apply")
			assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
			assert.Check(t, is.Contains(errOut, tc.wantErr))
			assert.Check(t, is.Contains(errOut, "nothing was changed"))
			assert.Check(t, is.Len(writes(srv), 0))
			assert.Check(t, is.Equal(readTestFile(t, path), fluxFile))
		})
	}
}

// Ready counts only at the applied generation; Stalled ends the wait.
func TestHelmReleaseReady(t *testing.T) {
	hr := func(observed int64, conds ...map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"observedGeneration": observed}}}
		var list []any
		for _, c := range conds {
			list = append(list, c)
		}
		u.Object["status"].(map[string]any)["conditions"] = list
		return u
	}
	ready := map[string]any{"type": "Ready", "status": "True", "message": "Helm upgrade succeeded"}
	done, state, err := helmReleaseReady(hr(3, ready), 4)
	assert.Check(t, !done && err == nil && strings.Contains(state, "generation 4"), state)
	done, _, err = helmReleaseReady(hr(4, ready), 4)
	assert.Check(t, done && err == nil)
	done, _, err = helmReleaseReady(hr(4, map[string]any{"type": "Ready", "status": "False", "message": "upgrading"}), 4)
	assert.Check(t, !done && err == nil)
	_, _, err = helmReleaseReady(hr(4, map[string]any{"type": "Stalled", "status": "True", "message": "retries exhausted"}), 4)
	assert.Check(t, is.ErrorContains(err, "retries exhausted"))
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	assert.NilError(t, err)
	return string(data)
}
