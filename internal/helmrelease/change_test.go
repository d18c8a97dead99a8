package helmrelease

import (
	"reflect"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"sigs.k8s.io/yaml"

	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/values"
)

// spokesTemplate stands for a chart template that reads the spokes.
const spokesTemplate = `{{- range .Values.fleetConfig.spokes }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: spoke-{{ .name }}
{{- end }}
`

// muralChart is a chart whose default values list one spoke.
func muralChart() *chart.Chart {
	return &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: "v2", Name: "mural", Version: "1.2.0"},
		Templates: []*common.File{{Name: "templates/spokes.yaml", Data: []byte(spokesTemplate)}},
		Values: map[string]any{
			"replicas": 1,
			"fleetConfig": map[string]any{
				"logVerbosity": 0,
				"spokes":       []any{map[string]any{"name": "hub-as-spoke", "ociRegistry": map[string]any{"endpoint": "oci://default"}}},
			},
		},
	}
}

func entry(name string) map[string]any {
	return map[string]any{
		"name":        name,
		"ociRegistry": map[string]any{"endpoint": "oci://registry.example.com/mural"},
		"kubeconfig":  map[string]any{"inCluster": false, "secretReference": map[string]any{"name": name + "-kubeconfig", "kubeconfigKey": "kubeconfig"}},
		"klusterlet":  map[string]any{"mode": "Default", "forceInternalEndpointLookup": false},
	}
}

// userValues are a release's user-supplied values: the spokes and others.
func userValues() map[string]any {
	return map[string]any{
		"replicas": 3,
		"image":    map[string]any{"tag": "v2.1.0", "pullPolicy": "Always"},
		"fleetConfig": map[string]any{
			"logVerbosity": 4,
			"spokes":       []any{entry("spoke-1")},
		},
	}
}

func deployed(config map[string]any) *release.Release {
	return &release.Release{
		Name: "mural", Namespace: "mural-system", Version: 3,
		Info:   &release.Info{Status: rcommon.StatusDeployed},
		Chart:  muralChart(),
		Config: config,
	}
}

// edit runs a values edit on the release's spokes section.
func edit(t *testing.T, r *Release, change func([]byte) ([]byte, bool, error)) *Change {
	t.Helper()
	doc, err := r.Values()
	assert.NilError(t, err)
	edited, changed, err := change(doc)
	assert.NilError(t, err)
	assert.Assert(t, changed)
	c, err := r.Plan(edited)
	assert.NilError(t, err)
	return c
}

func addSpoke2(doc []byte) ([]byte, bool, error) {
	return values.Add(doc, values.HelmValues, values.Entry{Name: "spoke-2", SecretName: "spoke-2-kubeconfig", HubName: "hub"})
}

func TestPlanMovesNoValueButTheSpokes(t *testing.T) {
	before := userValues()
	kept := userValues()
	r := newRelease(deployed(before))
	c := edit(t, r, addSpoke2)

	assert.Equal(t, c.Revision, 4)
	names := []string{}
	for _, e := range c.Values["fleetConfig"].(map[string]any)["spokes"].([]any) {
		names = append(names, e.(map[string]any)["name"].(string))
	}
	assert.DeepEqual(t, names, []string{"spoke-1", "spoke-2"})
	// Every other value is the one the release had, and the release's own
	// values are left as they were.
	assert.DeepEqual(t, withoutSpokes(c.Values), withoutSpokes(kept))
	assert.DeepEqual(t, before, kept)
	golden.Assert(t, c.Diff(), "add.diff")
}

func TestPlanRemovesAndRepoints(t *testing.T) {
	cfg := userValues()
	fc := cfg["fleetConfig"].(map[string]any)
	fc["spokes"] = append(fc["spokes"].([]any), entry("spoke-2"))
	r := newRelease(deployed(cfg))

	removed := edit(t, r, func(doc []byte) ([]byte, bool, error) { return values.Remove(doc, values.HelmValues, "spoke-2") })
	golden.Assert(t, removed.Diff(), "remove.diff")
	assert.DeepEqual(t, withoutSpokes(removed.Values), withoutSpokes(userValues()))

	repointed := edit(t, r, func(doc []byte) ([]byte, bool, error) {
		return values.SetSecret(doc, values.HelmValues, "spoke-1", "spoke-1-rotated")
	})
	golden.Assert(t, repointed.Diff(), "repoint.diff")
	assert.DeepEqual(t, withoutSpokes(repointed.Values), withoutSpokes(userValues()))
}

// A release whose user values list no spokes renders the chart's: the
// change starts from those, and writes the whole list into the values.
func TestPlanStartsFromTheChartsSpokes(t *testing.T) {
	r := newRelease(deployed(map[string]any{"replicas": 2}))
	c := edit(t, r, addSpoke2)
	golden.Assert(t, c.Diff(), "add-to-chart-default.diff")
	assert.Equal(t, c.Values["replicas"], 2)
}

func TestPlanRefusesAnEditOfOtherValues(t *testing.T) {
	r := newRelease(deployed(userValues()))
	c, err := r.Plan([]byte("fleetConfig:\n  spokes: []\n"))
	assert.NilError(t, err)
	// The edited document's other keys never reach the values.
	c2, err := r.Plan([]byte("replicas: 9\nfleetConfig:\n  logVerbosity: 9\n  spokes: []\n"))
	assert.NilError(t, err)
	assert.DeepEqual(t, c.Values, c2.Values)
	assert.Equal(t, c2.Values["replicas"], 3)
}

func TestRefusals(t *testing.T) {
	withStatus := func(s rcommon.Status) *release.Release {
		r := deployed(userValues())
		r.Info.Status = s
		return r
	}
	noSpokes := deployed(userValues())
	noSpokes.Chart.Templates = []*common.File{{Name: "templates/cm.yaml", Data: []byte("kind: ConfigMap\n")}}
	subcharts := deployed(userValues())
	subcharts.Chart.Metadata.Dependencies = []*chart.Dependency{{Name: "fleetconfig-controller", Version: "0.2.4"}}
	notAList := deployed(map[string]any{"fleetConfig": map[string]any{"spokes": "spoke-1"}})

	var out strings.Builder
	for _, tc := range []struct {
		name string
		rel  *release.Release
	}{
		{"pending upgrade", withStatus(rcommon.StatusPendingUpgrade)},
		{"pending install", withStatus(rcommon.StatusPendingInstall)},
		{"pending rollback", withStatus(rcommon.StatusPendingRollback)},
		{"failed", withStatus(rcommon.StatusFailed)},
		{"uninstalled", withStatus(rcommon.StatusUninstalled)},
		{"chart renders no spokes", noSpokes},
		{"chart with subcharts", subcharts},
		{"spokes not a list", notAList},
	} {
		r := newRelease(tc.rel)
		err := r.Refusal()
		assert.Assert(t, err != nil, tc.name)
		assert.Equal(t, exitcode.Of(err), exitcode.Refused, tc.name)
		_, err = r.Plan([]byte("fleetConfig:\n  spokes: []\n"))
		assert.Equal(t, exitcode.Of(err), exitcode.Refused, tc.name)
		out.WriteString(tc.name + ": " + err.Error() + "\n")
	}
	golden.Assert(t, out.String(), "refusals.golden")
	assert.NilError(t, newRelease(deployed(userValues())).Refusal())
}

func TestTemplatesSpokes(t *testing.T) {
	r := deployed(userValues())
	r.Manifest = "---\n# Source: mural/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mural-spokes\ndata:\n  spokes.yaml: |\n    kind: Spoke\n"
	assert.Assert(t, !newRelease(r).TemplatesSpokes(), "a Spoke inside a ConfigMap's data is the job's, not Helm's")
	r.Manifest += "---\n# Source: mural/templates/spokes.yaml\napiVersion: fleetconfig.open-cluster-management.io/v1beta1\nkind: Spoke\nmetadata:\n  name: spoke-1\n"
	assert.Assert(t, newRelease(r).TemplatesSpokes())
}

func TestValuesCarriesTheSpokeFeatureGates(t *testing.T) {
	cfg := userValues()
	cfg["fleetConfig"].(map[string]any)["spokeFeatureGates"] = map[string]any{"RawFeedbackJsonString": true}
	doc, err := newRelease(deployed(cfg)).Values()
	assert.NilError(t, err)
	var got map[string]any
	assert.NilError(t, yaml.Unmarshal(doc, &got))
	assert.Assert(t, reflect.DeepEqual(lookup(got, []string{"fleetConfig", "spokeFeatureGates"}), map[string]any{"RawFeedbackJsonString": true}))
}
