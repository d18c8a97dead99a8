package spoke

import (
	"encoding/json"
	"fmt"
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
	assert.Check(t, is.Len(appliedSpokes(t, srv), 2))
	assert.Check(t, is.Contains(out, "helmrelease mural-system/mural"))
	assert.Check(t, is.Contains(errOut, "commit "+path+" where Flux reads it"))
	assert.Check(t, strings.Contains(readTestFile(t, path), "- name: spoke-1"), "the file has the entry")
}

// appliedSpokes is fleetConfig.spokes of the HelmRelease the command
// applied, once it is shown to carry the live resourceVersion and the
// values it does not change.
func appliedSpokes(t *testing.T, srv *clitest.APIServer) []any {
	t.Helper()
	var sent unstructured.Unstructured
	assert.NilError(t, json.Unmarshal([]byte(srv.Body("PATCH /apis/helm.toolkit.fluxcd.io/v2/namespaces/mural-system/helmreleases/mural")), &sent.Object))
	assert.Check(t, is.Equal(sent.GetResourceVersion(), "41"))
	tag, _, _ := unstructured.NestedString(sent.Object, "spec", "values", "image", "tag")
	assert.Check(t, is.Equal(tag, "v2.3.1"))
	spokes, _, _ := unstructured.NestedSlice(sent.Object, "spec", "values", "fleetConfig", "spokes")
	return spokes
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

// fluxFileWithSpoke1 is fluxFile with an entry for spoke-1, as add left it.
var fluxFileWithSpoke1 = fluxFile + `      - name: spoke-1
        kubeconfig: {secretReference: {name: spoke-1-kubeconfig, kubeconfigKey: kubeconfig}}
        ociRegistry: {endpoint: oci://registry.example.com/mural}
`

// removeSpoke1 is a Spoke the agent took over (no credential needed to
// remove it), rendered by the release.
const removeSpoke1 = `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-1","namespace":"mural-system","uid":"u1","resourceVersion":"5"},` +
	`"spec":{"hubRef":{"name":"hub","namespace":"mural-system"},"kubeconfig":{"secretReference":{"name":"spoke-1-kubeconfig"}},"addOns":[{"configName":"fleetconfig-controller-agent"}]},` +
	`"status":{"conditions":[{"type":"PivotComplete","status":"True","reason":"x","message":"","lastTransitionTime":"2026-11-30T12:00:00Z"}]}}`

// fluxRemoval is a hub with spoke-1 and the HelmRelease live (mutate
// changes it), and the --helmrelease file with spoke-1's entry.
func fluxRemoval(t *testing.T, mutate func(u *unstructured.Unstructured)) (*clitest.APIServer, string) {
	t.Helper()
	srv := clitest.NewAPIServer(t)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, removeSpoke1)
	srv.Respond("GET /apis/work.open-cluster-management.io/v1/namespaces/spoke-1/manifestworks", 200, `{"apiVersion":"work.open-cluster-management.io/v1","kind":"ManifestWorkList","metadata":{},"items":[]}`)
	srv.Respond("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 201, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}`)
	srv.Respond("DELETE /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
	return srv, withFluxSpoke1(t, srv, mutate)
}

// withFluxSpoke1 serves the HelmRelease with spoke-1's entry live on srv
// (mutate changes it), and writes the --helmrelease file with it.
func withFluxSpoke1(t *testing.T, srv *clitest.APIServer, mutate func(u *unstructured.Unstructured)) string {
	t.Helper()
	live := liveHelmRelease(t, func(u *unstructured.Unstructured) {
		obj, err := values.ReleaseObject([]byte(fluxFileWithSpoke1))
		assert.NilError(t, err)
		spokes, _, _ := unstructured.NestedSlice(obj, "spec", "values", "fleetConfig", "spokes")
		assert.NilError(t, unstructured.SetNestedSlice(u.Object, spokes, "spec", "values", "fleetConfig", "spokes"))
		if mutate != nil {
			mutate(u)
		}
	})
	srv.Respond("GET /apis/helm.toolkit.fluxcd.io/v2/namespaces/mural-system/helmreleases/mural", 200, live)
	srv.Respond("PATCH /apis/helm.toolkit.fluxcd.io/v2/namespaces/mural-system/helmreleases/mural", 200, live)
	path := filepath.Join(t.TempDir(), "mural.yaml")
	assert.NilError(t, os.WriteFile(path, []byte(fluxFileWithSpoke1), 0o600))
	return path
}

// remove --helmrelease --apply deletes the Spoke, then applies the
// HelmRelease without the entry, as add applies it with the entry: under
// kubectl spoke's field manager, the live resourceVersion as precondition,
// every other value as it was.
func TestRemoveAppliesTheEditedHelmRelease(t *testing.T) {
	srv, path := fluxRemoval(t, nil)
	code, out, errOut := runSpoke(srv, "remove", "spoke-1", "--helmrelease", path, "--apply")
	assert.Equal(t, code, exitcode.OK, errOut)
	assert.Check(t, is.DeepEqual(writes(srv), []string{
		"DELETE /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1",
		"PATCH /apis/helm.toolkit.fluxcd.io/v2/namespaces/mural-system/helmreleases/mural?fieldManager=kubectl-spoke&force=true",
	}))
	spokes := appliedSpokes(t, srv)
	assert.Check(t, is.Len(spokes, 1))
	assert.Check(t, is.Equal(spokes[0].(map[string]any)["name"], "other"))
	assert.Check(t, is.Contains(out, "helmrelease mural-system/mural"))
	assert.Check(t, is.Contains(errOut, "commit "+path+" where Flux reads it"))
	assert.Check(t, !strings.Contains(readTestFile(t, path), "spoke-1"), "the entry left the file")
}

// A HelmRelease on the hub that differs from the file outside spec.values
// refuses the removal before anything is written: the Spoke stays, and so
// does the file.
func TestRemoveRefusesAHelmReleaseThatDiffersOutsideItsValues(t *testing.T) {
	srv, path := fluxRemoval(t, func(u *unstructured.Unstructured) {
		assert.NilError(t, unstructured.SetNestedField(u.Object, "1.5.0", "spec", "chart", "spec", "version"))
	})
	code, _, errOut := runSpoke(srv, "remove", "spoke-1", "--helmrelease", path, "--apply")
	assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
	assert.Check(t, is.Contains(errOut, "differs from the file outside spec.values (spec.chart.spec.version)"))
	assert.Check(t, is.Len(writes(srv), 0))
	assert.Check(t, is.Equal(readTestFile(t, path), fluxFileWithSpoke1))
}

// force-remove shares the removal: with no Spoke left, --apply still takes
// the entry out of the live HelmRelease, so the release's job does not
// register the spoke again.
func TestForceRemoveAppliesTheEditedHelmRelease(t *testing.T) {
	srv, path := fluxRemoval(t, nil)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 404, notFound)
	srv.Respond("GET /apis/cluster.open-cluster-management.io/v1/managedclusters/spoke-1", 404, notFound)
	code, _, errOut := runSpoke(srv, "force-remove", "spoke-1", "--helmrelease", path, "--apply", "--yes")
	assert.Equal(t, code, exitcode.OK, errOut)
	assert.Check(t, is.DeepEqual(writes(srv), []string{
		"PATCH /apis/helm.toolkit.fluxcd.io/v2/namespaces/mural-system/helmreleases/mural?fieldManager=kubectl-spoke&force=true",
	}))
}

// --apply applies the --helmrelease file: without one it is a usage error.
func TestApplyWithoutAHelmReleaseFileIsAUsageError(t *testing.T) {
	srv := clitest.NewAPIServer(t)
	for _, args := range [][]string{
		{"remove", "spoke-1", "--apply"},
		{"force-remove", "spoke-1", "--apply", "--yes"},
		{"remove", "spoke-1", "--values", "values.yaml", "--apply"},
	} {
		code, _, errOut := runSpoke(srv, args...)
		assert.Check(t, is.Equal(code, exitcode.Usage), "%v: %s", args, errOut)
		assert.Check(t, is.Contains(errOut, "--apply applies the --helmrelease file"), "%v", args)
	}
	assert.Check(t, is.Len(srv.Requests(), 0))
}

// rotate-kubeconfig --secret --helmrelease --apply points the entry at the
// new secret and applies the HelmRelease so, as add and remove apply it;
// a live HelmRelease that differs outside spec.values refuses it before
// the secret is written.
func TestRotateAppliesTheEditedHelmRelease(t *testing.T) {
	rotating := func(t *testing.T, mutate func(u *unstructured.Unstructured)) (*clitest.APIServer, string) {
		t.Helper()
		srv, _ := rotatingFleet(t)
		srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-2027", 404, notFound)
		srv.Respond("POST /api/v1/namespaces/mural-system/secrets", 201, secretJSON("spoke-1-2027", nil))
		srv.Respond("PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, fmt.Sprintf(spokeJSON, "spoke-1", "spoke-1", "spoke-1-2027"))
		return srv, withFluxSpoke1(t, srv, mutate)
	}
	t.Run("applied", func(t *testing.T) {
		srv, path := rotating(t, nil)
		code, out, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--secret", "spoke-1-2027", "--helmrelease", path, "--apply")
		assert.Equal(t, code, exitcode.OK, errOut)
		assert.Check(t, is.DeepEqual(writes(srv), []string{
			"POST /api/v1/namespaces/mural-system/secrets?fieldManager=kubectl-spoke",
			"PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1?fieldManager=kubectl-spoke",
			"PATCH /apis/helm.toolkit.fluxcd.io/v2/namespaces/mural-system/helmreleases/mural?fieldManager=kubectl-spoke&force=true",
		}))
		spokes := appliedSpokes(t, srv)
		assert.Assert(t, is.Len(spokes, 2))
		secret, _, _ := unstructured.NestedString(spokes[1].(map[string]any), "kubeconfig", "secretReference", "name")
		assert.Check(t, is.Equal(secret, "spoke-1-2027"))
		assert.Check(t, is.Contains(out, "applied (only spec.values changed)"))
	})
	t.Run("refused", func(t *testing.T) {
		srv, path := rotating(t, func(u *unstructured.Unstructured) {
			assert.NilError(t, unstructured.SetNestedField(u.Object, "1.5.0", "spec", "chart", "spec", "version"))
		})
		code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--secret", "spoke-1-2027", "--helmrelease", path, "--apply")
		assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
		assert.Check(t, is.Contains(errOut, "differs from the file outside spec.values (spec.chart.spec.version)"))
		assert.Check(t, is.Len(writes(srv), 0))
		assert.Check(t, is.Equal(readTestFile(t, path), fluxFileWithSpoke1))
	})
	t.Run("--apply and --wait need the file", func(t *testing.T) {
		clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Usage, "--apply applies the --helmrelease file",
			[]string{"rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", "x", "--secret", "s", "--apply"})
		clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Usage, "--wait waits for the HelmRelease --apply applies",
			[]string{"rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", "x", "--wait"})
	})
}
