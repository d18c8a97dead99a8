package spoke

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/values"
)

// diffValuesFile has an entry of each kind: in step, not registered, with
// drifted fields, one without ociRegistry, and one whose Spoke is being
// deleted.
const diffValuesFile = `fleetConfig:
  spokes:
  - name: hub-as-spoke
    hubRef: {name: hub, namespace: ""}
    kubeconfig: {context: "", inCluster: true, secretReference: {name: "", kubeconfigKey: kubeconfig}}
    klusterlet:
      mode: Default
      forceInternalEndpointLookup: true
      managedClusterKubeconfig: {context: "", inCluster: false, secretReference: {name: "", kubeconfigKey: kubeconfig}}
      resources: {limits: {cpu: "", memory: ""}, requests: {cpu: "", memory: ""}, qosClass: Default}
      values: {}
    cleanupConfig: {purgeKlusterletOperator: true, purgeKubeconfigSecret: true, purgeAgentNamespace: true, forceClusterDrain: false}
    ociRegistry: &oci {url: oci://registry.example.com/mural}
  - name: spoke-1
    kubeconfig: {context: "", inCluster: false, secretReference: {name: spoke-1-kubeconfig, kubeconfigKey: kubeconfig}}
    klusterlet: {mode: Default, forceInternalEndpointLookup: false}
    cleanupConfig: {purgeKlusterletOperator: true, purgeKubeconfigSecret: false, purgeAgentNamespace: false, forceClusterDrain: true}
    logVerbosity: 2
    ociRegistry: *oci
  - name: spoke-2
    kubeconfig: {inCluster: false, secretReference: {name: spoke-2-kubeconfig, kubeconfigKey: kubeconfig}}
    klusterlet: {mode: Default}
    ociRegistry: *oci
  - name: spoke-3
    kubeconfig: {inCluster: false, secretReference: {name: spoke-3-kubeconfig}}
    klusterlet: {mode: Default}
  - name: spoke-5
    kubeconfig: {inCluster: false, secretReference: {name: spoke-5-kubeconfig}}
    ociRegistry: *oci
`

func liveSpoke(name, spec string, meta ...func(*metav1.ObjectMeta)) LiveSpoke {
	s := LiveSpoke{Metadata: metav1.ObjectMeta{Name: name, Namespace: "mural-system"}}
	if err := yaml.Unmarshal([]byte(spec), &s.Spec); err != nil {
		panic(err)
	}
	for _, m := range meta {
		m(&s.Metadata)
	}
	return s
}

func helmOwned(keep bool) func(*metav1.ObjectMeta) {
	return func(m *metav1.ObjectMeta) {
		m.Labels = map[string]string{fleetconfig.ManagedByLabel: "Helm"}
		m.Annotations = map[string]string{fleetconfig.HelmReleaseNameAnnotation: "mural", fleetconfig.HelmReleaseNamespaceAnnotation: "mural-system"}
		if keep {
			m.Annotations[fleetconfig.HelmResourcePolicyAnnotation] = "keep"
		}
	}
}

// diffSpokes are the live Spokes: hub-as-spoke as the chart rendered it
// (with the API server's defaults), spoke-1 with other settings, spoke-3
// in step but without ociRegistry in its entry, spoke-5 being deleted,
// and four with no entry: Helm's with and without keep, one made outside
// Helm, one of a Compute Pool.
func diffSpokes() []LiveSpoke {
	now := metav1.Now()
	return []LiveSpoke{
		liveSpoke("hub-as-spoke", `{hubRef: {name: hub, namespace: mural-system}, createNamespace: true, timeout: 300, logVerbosity: 0,
			kubeconfig: {inCluster: true}, klusterlet: {mode: Default, forceInternalEndpointLookup: true, featureGates: "AddonManagement=true,ClusterClaim=true"},
			cleanupConfig: {purgeKlusterletOperator: true, purgeKubeconfigSecret: true, purgeAgentNamespace: true, forceClusterDrain: false}}`, helmOwned(true)),
		liveSpoke("spoke-1", `{hubRef: {name: hub, namespace: mural-system}, kubeconfig: {secretReference: {name: spoke-1-kubeconfig-2027, kubeconfigKey: kubeconfig}},
			klusterlet: {mode: Hosted}, logVerbosity: 4,
			cleanupConfig: {purgeKlusterletOperator: true, purgeKubeconfigSecret: false, purgeAgentNamespace: false, forceClusterDrain: true}}`, helmOwned(true)),
		liveSpoke("spoke-3", `{kubeconfig: {secretReference: {name: spoke-3-kubeconfig, kubeconfigKey: kubeconfig}}, klusterlet: {mode: Default}}`),
		liveSpoke("spoke-5", `{kubeconfig: {secretReference: {name: spoke-5-kubeconfig}}}`, func(m *metav1.ObjectMeta) { m.DeletionTimestamp = &now }),
		liveSpoke("spoke-6", `{}`, helmOwned(true)),
		liveSpoke("spoke-7", `{}`, helmOwned(false)),
		liveSpoke("spoke-8", `{}`),
		liveSpoke("pool-a-1", `{}`, func(m *metav1.ObjectMeta) { m.Labels = map[string]string{fleetconfig.ComputePoolLabel: "pool-a"} }),
	}
}

func TestDiffValues(t *testing.T) {
	entries, err := values.Entries([]byte(diffValuesFile), values.HelmValues)
	assert.NilError(t, err)
	r := DiffValues(ValuesDiffInput{Path: "values.yaml", Namespace: "mural-system", Entries: entries, Spokes: diffSpokes()})
	var buf bytes.Buffer
	assert.NilError(t, cli.WriteTable(&buf, r.table(), true))
	golden.Assert(t, buf.String(), "values-diff.golden")
	assert.Check(t, is.DeepEqual(r.ComputePool, []string{"pool-a-1"}))
	assert.Check(t, is.Equal(exitcode.Of(r.differ()), exitcode.Failed))

	data, err := json.Marshal(r)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(string(data), `{"path":"klusterlet.mode","values":"Default","live":"Hosted","immutable":true}`))
	assert.Check(t, is.Contains(string(data), `{"path":"kubeconfig.secretReference.name","values":"spoke-1-kubeconfig","live":"spoke-1-kubeconfig-2027"}`))
	// Helm neither adopts nor deletes a Spoke under the product's job model:
	// one no longer in the values stays, with or without the keep policy.
	assert.Check(t, !strings.Contains(buf.String(), "deletes it"), buf.String())
	// The chart renders no logVerbosity into a Spoke: no upgrade changes it.
	assert.Check(t, !strings.Contains(string(data), `logVerbosity`))
}

// In step: exit 0, whatever the server defaults.
func TestDiffValuesInStep(t *testing.T) {
	entries, err := values.Entries([]byte(diffValuesFile), values.HelmValues)
	assert.NilError(t, err)
	r := DiffValues(ValuesDiffInput{Path: "values.yaml", Namespace: "mural-system", Entries: entries[:1], Spokes: diffSpokes()[:1]})
	assert.Check(t, is.Len(r.Items, 0))
	assert.NilError(t, r.differ())
}

// A comparison that cannot be made is never exit 1 (drift): a missing file
// and an unreachable hub exit 3.
func TestValuesDiffCannotCompareIsNotDrift(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	code, _, stderr := clitest.RunCommand(NewCmdSpoke, "values-diff", "--values", missing, "--kubeconfig", clitest.UnreachableKubeconfig(t))
	assert.Check(t, is.Equal(code, exitcode.Refused), stderr)
	assert.Check(t, is.Contains(stderr, missing))

	file := filepath.Join(t.TempDir(), "values.yaml")
	assert.NilError(t, os.WriteFile(file, []byte(diffValuesFile), 0o600))
	code, _, stderr = clitest.RunCommand(NewCmdSpoke, "values-diff", "--values", file, "-n", "mural-system", "--kubeconfig", clitest.UnreachableKubeconfig(t))
	assert.Check(t, is.Equal(code, exitcode.Refused), stderr)
	assert.Check(t, is.Contains(stderr, "cannot reach the API server"))

	code, _, stderr = clitest.RunCommand(NewCmdSpoke, "values-diff", "--values", file, "--helmrelease", file)
	assert.Check(t, is.Equal(code, exitcode.Usage), stderr)
}

// What add writes agrees with itself: the entry add appends and the Spoke
// add --apply creates from it are in step for values-diff, klusterlet
// settings copied from the hub's entry included.
func TestValuesDiffAgreesWithAdd(t *testing.T) {
	src, _, err := values.Add([]byte(diffValuesFile), values.HelmValues, values.Entry{Name: "spoke-9", SecretName: "spoke-9-kubeconfig", Cleanup: fleetconfig.ChartCleanupDefaults, HubName: planHub().Name})
	assert.NilError(t, err)
	entry, err := values.EntryValues(src, values.HelmValues, "spoke-9")
	assert.NilError(t, err)
	s, err := RenderSpoke("spoke-9", planHub(), "spoke-9-kubeconfig", entry, ChartSettings{Cleanup: fleetconfig.ChartCleanupDefaults, Mode: modeUnified})
	assert.NilError(t, err)
	data, err := json.Marshal(s)
	assert.NilError(t, err)
	var live LiveSpoke
	assert.NilError(t, json.Unmarshal(data, &live))

	entries, err := values.Entries(src, values.HelmValues)
	assert.NilError(t, err)
	r := DiffValues(ValuesDiffInput{Path: "values.yaml", Namespace: "mural-system", Entries: entries[len(entries)-1:], Spokes: []LiveSpoke{live}})
	assert.Check(t, is.Len(r.Items, 0), "%+v", r.Items)
}

// Through the command, as a script sees it: Spokes that differ from the
// file exit 1, with the differences on stdout; in step, exit 0.
func TestValuesDiffExitsOneOnDrift(t *testing.T) {
	file := filepath.Join(t.TempDir(), "values.yaml")
	assert.NilError(t, os.WriteFile(file, []byte(diffValuesFile), 0o600))
	list := func(spokes ...LiveSpoke) string {
		items := make([]map[string]any, len(spokes))
		for i, s := range spokes {
			items[i] = map[string]any{"apiVersion": fleetconfig.SpokeResource.GroupVersion().String(), "kind": "Spoke", "metadata": s.Metadata, "spec": s.Spec}
		}
		data, err := json.Marshal(map[string]any{"apiVersion": fleetconfig.SpokeResource.GroupVersion().String(), "kind": "SpokeList", "metadata": map[string]any{}, "items": items})
		assert.NilError(t, err)
		return string(data)
	}
	const spokes = "GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes"

	srv := clitest.NewAPIServer(t)
	srv.Respond(spokes, 200, list(diffSpokes()...))
	code, out, errOut := runSpoke(srv, "values-diff", "--values", file)
	assert.Check(t, is.Equal(code, exitcode.Failed), errOut)
	assert.Check(t, is.Contains(out, "klusterlet.mode"), out)
	assert.Check(t, is.Contains(errOut, "Next: helm upgrade mural"), errOut)

	entries, err := values.Entries([]byte(diffValuesFile), values.HelmValues)
	assert.NilError(t, err)
	one, err := yaml.Marshal(map[string]any{"fleetConfig": map[string]any{"spokes": []any{entries[0]}}})
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(file, one, 0o600))
	srv.Respond(spokes, 200, list(diffSpokes()[0]))
	code, out, errOut = runSpoke(srv, "values-diff", "--values", file)
	assert.Check(t, is.Equal(code, exitcode.OK), "%s%s", out, errOut)
	assert.Check(t, is.Contains(errOut, "In step"), errOut)
}
