package spoke

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/values"
)

func helmRendered(s *fleetconfig.Spoke) {
	s.Labels = map[string]string{fleetconfig.ManagedByLabel: "Helm"}
	s.Annotations = map[string]string{fleetconfig.HelmReleaseNameAnnotation: "mural"}
}

func removing(s *fleetconfig.Spoke) {
	s.DeletionTimestamp = &metav1.Time{Time: now}
	s.Finalizers = []string{"fleetconfig.open-cluster-management.io/cleanup"}
}

// TestPlanRemoval shows, for what remove and force-remove can find, the plan
// and the steps printed, written and under a dry run.
func TestPlanRemoval(t *testing.T) {
	spoke := func(opts ...func(*fleetconfig.Spoke)) *fleetconfig.Spoke {
		s := newSpoke("spoke-1", opts...)
		s.UID, s.ResourceVersion = "u-1", "41"
		return &s
	}
	withEntry := &values.File{Path: "values.yaml", Kind: values.HelmValues, Data: []byte(planValues)}
	without := &values.File{Path: "other.yaml", Kind: values.HelmRelease, Data: []byte("kind: HelmRelease\nspec:\n  values:\n    fleetConfig:\n      spokes: []\n")}
	cases := []struct {
		name string
		in   removalInput
	}{
		{"remove, Helm-rendered, no file", removalInput{Spoke: spoke(helmRendered)}},
		{"remove, Helm-rendered, file with the entry, wait", removalInput{Spoke: spoke(helmRendered), File: withEntry, Wait: true}},
		{"remove, Helm-rendered, file without the entry", removalInput{Spoke: spoke(helmRendered), File: without}},
		{"remove, not Helm's, being deleted", removalInput{Spoke: spoke(removing)}},
		{"remove, gone, file with the entry", removalInput{File: withEntry, Wait: true}},
		{"force-remove, Helm-rendered", removalInput{Spoke: spoke(helmRendered), Force: true, Wait: true}},
		{"force-remove, no annotations, file with the entry", removalInput{Spoke: spoke(), File: withEntry, Force: true, Wait: true}},
		{"force-remove again, annotated and being deleted", removalInput{Spoke: spoke(removing, func(s *fleetconfig.Spoke) {
			s.Annotations = map[string]string{fleetconfig.ForceDeleteAnnotation: "true"}
		}), Force: true, Wait: true}},
		{"force-remove, gone", removalInput{Force: true, Wait: true}},
	}
	var out strings.Builder
	for _, tc := range cases {
		tc.in.Namespace, tc.in.Name = "mural-system", "spoke-1"
		p, err := planRemoval(tc.in)
		assert.NilError(t, err, tc.name)
		describePlan(t, &out, tc.name, p, p.Edited, p.steps)
		fmt.Fprintf(&out, "-- when the delete fails: %s\n", p.undone())
	}
	golden.Assert(t, out.String(), "removal-plans.golden")
}

// The force-delete patch adds the annotation and keeps the others; a status
// update in between does not stop it, a Spoke made again under the name or
// annotated in between by someone else does.
func TestForceDeletePatch(t *testing.T) {
	for name, annotations := range map[string]map[string]string{
		"no annotations": nil,
		"Helm's":         {fleetconfig.HelmReleaseNameAnnotation: "mural"},
	} {
		t.Run(name, func(t *testing.T) {
			read := newSpoke("spoke-1", func(s *fleetconfig.Spoke) { s.UID, s.ResourceVersion, s.Annotations = "u-1", "41", annotations })
			patch := forceDeletePatch(&read)

			now := read
			now.ResourceVersion, now.Status.Phase = "42", fleetconfig.SpokePhaseUnhealthy
			after, err := applyPatch(t, now, patch)
			assert.NilError(t, err)
			want := map[string]string{fleetconfig.ForceDeleteAnnotation: "true"}
			for k, v := range annotations {
				want[k] = v
			}
			assert.Check(t, is.DeepEqual(after.Annotations, want))

			again := now
			again.UID = "u-2"
			_, err = applyPatch(t, again, patch)
			assert.Check(t, err != nil, "a Spoke made again under the name is not patched")

			raced := now
			raced.Annotations = map[string]string{"team": "ml"}
			for k, v := range annotations {
				raced.Annotations[k] = v
			}
			if annotations != nil {
				raced.Annotations[fleetconfig.ForceDeleteAnnotation] = "false"
			}
			_, err = applyPatch(t, raced, patch)
			assert.Check(t, err != nil, "annotations someone else wrote in between are not overwritten")
		})
	}
}

// applyPatch applies a JSON patch to s as the API server would.
func applyPatch(t *testing.T, s fleetconfig.Spoke, ops []api.PatchOp) (*fleetconfig.Spoke, error) {
	t.Helper()
	data, err := json.Marshal(ops)
	assert.NilError(t, err)
	p, err := jsonpatch.DecodePatch(data)
	assert.NilError(t, err)
	doc, err := json.Marshal(s)
	assert.NilError(t, err)
	out, err := p.Apply(doc)
	if err != nil {
		return nil, err
	}
	var after fleetconfig.Spoke
	assert.NilError(t, json.Unmarshal(out, &after))
	return &after, nil
}

func TestPlanRemovalRefusesAFileItCannotEdit(t *testing.T) {
	s := newSpoke("spoke-1")
	_, err := planRemoval(removalInput{
		Namespace: "mural-system", Name: "spoke-1", Spoke: &s,
		File: &values.File{Path: "v.yaml", Kind: values.HelmValues, Data: []byte("fleetConfig:\n  spokes: [{name: spoke-1}]\n")},
	})
	assert.ErrorContains(t, err, "v.yaml: fleetConfig.spokes is written in flow style")
	assert.ErrorContains(t, err, "nothing was changed")
	assert.Check(t, exitcode.IsRefused(err))
}

// Removing hub-as-spoke (by name or in-cluster credentials) names what it
// does; any other spoke gets no such line.
func TestPlanRemovalNamesWhatRemovingHubAsSpokeDoes(t *testing.T) {
	for _, s := range []fleetconfig.Spoke{
		newSpoke(fleetconfig.HubAsSpokeName),
		newSpoke("local", func(s *fleetconfig.Spoke) { s.Spec.Kubeconfig = fleetconfig.Kubeconfig{InCluster: true} }),
	} {
		p, err := planRemoval(removalInput{Namespace: "mural-system", Name: s.Name, Spoke: &s})
		assert.NilError(t, err)
		assert.Check(t, is.Contains(p.HubAsSpoke, "unjoins the hub from its own fleet"), s.Name)
	}
	s := newSpoke("spoke-1")
	p, err := planRemoval(removalInput{Namespace: "mural-system", Name: s.Name, Spoke: &s})
	assert.NilError(t, err)
	assert.Check(t, is.Equal(p.HubAsSpoke, ""))
}

// A klusterlet left running by force-delete registers again under the same
// name: the ManagedCluster the removal deleted is gone all the same, and the
// new one is said to be a new registration, not waited on forever.
func TestManagedClusterGoneOrRegisteredAgain(t *testing.T) {
	mc := func(uid types.UID) []any {
		u := &unstructured.Unstructured{}
		u.SetUID(uid)
		return []any{u}
	}
	for _, c := range []struct {
		name        string
		objs        []any
		gone, again bool
	}{
		{"none left", nil, true, false},
		{"the one deleted, still there", mc("old"), false, false},
		{"another one in its place", mc("new"), true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			gone, again := managedClusterGone(c.objs, "old")
			assert.Check(t, is.Equal(gone, c.gone))
			assert.Check(t, is.Equal(again, c.again))
		})
	}
}

// remove's help says who unjoins the cluster as FleetConfig does it: in
// addon mode the agent on the spoke, not the hub.
func TestRemoveHelpSaysWhoUnjoins(t *testing.T) {
	cmd, _, err := NewCmdSpoke(genericiooptions.NewTestIOStreamsDiscard()).Find([]string{"remove"})
	assert.NilError(t, err)
	help := strings.Join(strings.Fields(cmd.Long), " ")
	assert.Check(t, is.Contains(help, "In addon mode (the chart's default) the fleetconfig-controller-agent on the spoke does that part"))
	assert.Check(t, !strings.Contains(help, "the hub then unjoins"), help)
}

// removeServer answers remove spoke-1 of a hub whose Spoke has metadata
// meta (its name and namespace given here) and which has no ManifestWork.
func removeServer(t *testing.T, meta string) *clitest.APIServer {
	t.Helper()
	srv := clitest.NewAPIServer(t)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200,
		`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-1","namespace":"mural-system","uid":"u1","resourceVersion":"5"`+meta+`},`+
			`"spec":{"hubRef":{"name":"hub","namespace":"mural-system"},"kubeconfig":{"secretReference":{"name":"spoke-1-kubeconfig"}},"addOns":[{"configName":"fleetconfig-controller-agent"}]},`+
			`"status":{"conditions":[{"type":"PivotComplete","status":"True","reason":"x","message":"","lastTransitionTime":"2026-11-30T12:00:00Z"}]}}`)
	srv.Respond("GET /apis/work.open-cluster-management.io/v1/namespaces/spoke-1/manifestworks", 200, `{"apiVersion":"work.open-cluster-management.io/v1","kind":"ManifestWorkList","metadata":{},"items":[]}`)
	srv.Respond("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 201, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}`)
	srv.Respond("DELETE /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
	// In a directory of its own, holding values.yaml: the output names the
	// file as the user gave it.
	t.Chdir(t.TempDir())
	assert.NilError(t, os.WriteFile("values.yaml", []byte(planValues), 0o600))
	return srv
}

// remove --values, having taken the entry out of the file, names the Helm
// upgrade the product requires, as add names the one that registers.
func TestRemoveWithValuesNamesTheHelmUpgrade(t *testing.T) {
	goldenFile, err := filepath.Abs(golden.Path("remove-values-output.golden"))
	assert.NilError(t, err)
	srv := removeServer(t, `,"labels":{"app.kubernetes.io/managed-by":"Helm"},"annotations":{"meta.helm.sh/release-name":"mural","meta.helm.sh/release-namespace":"mural-system"}`)
	var out strings.Builder
	for _, dry := range []string{"--dry-run=client", "--dry-run=none"} {
		code, stdout, stderr := runSpoke(srv, "remove", "spoke-1", "--values", "values.yaml", dry)
		assert.Check(t, is.Equal(code, exitcode.OK), stderr)
		fmt.Fprintf(&out, "== remove spoke-1 --values values.yaml %s\n-- stdout\n%s-- stderr\n%s", dry, stdout, stderr)
	}
	golden.Assert(t, out.String(), goldenFile)
}

// Under the seed's job model a Spoke carries no Helm marks: the upgrade
// remove --values names is the release of the Hub the spoke joined, the
// one add names, not a placeholder.
func TestRemoveWithValuesNamesTheHubsRelease(t *testing.T) {
	srv := removeServer(t, "")
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/hubs", 200,
		`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"HubList","metadata":{},"items":[`+
			`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Hub","metadata":{"name":"other","namespace":"mural-system","annotations":{"meta.helm.sh/release-name":"other"}}},`+
			`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Hub","metadata":{"name":"hub","namespace":"mural-system","annotations":{"meta.helm.sh/release-name":"mural"}}}]}`)
	code, _, stderr := runSpoke(srv, "remove", "spoke-1", "--values", "values.yaml")
	assert.Check(t, is.Equal(code, exitcode.OK), stderr)
	assert.Check(t, is.Contains(stderr, "Next: commit values.yaml and run `helm upgrade mural CHART -n mural-system -f values.yaml`"))
}
