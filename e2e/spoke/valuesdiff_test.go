//go:build e2e

package spoke

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
)

// driftEntries are the values' spokes: in-step is as its Spoke, fields
// has other settings, no-oci lacks ociRegistry, not-registered has no
// Spoke and deleting's Spoke is being deleted.
const driftEntries = `
  - name: in-step
    kubeconfig: {context: "", inCluster: false, secretReference: {name: in-step-kubeconfig, kubeconfigKey: kubeconfig}}
    klusterlet: {mode: Default, forceInternalEndpointLookup: false}
    cleanupConfig: {purgeKlusterletOperator: true, purgeKubeconfigSecret: false, purgeAgentNamespace: false, forceClusterDrain: true}
    ociRegistry: {endpoint: "oci://registry.lab.example/mural"}
  - name: fields
    kubeconfig: {secretReference: {name: fields-kubeconfig}}
    klusterlet: {mode: Hosted}
    logVerbosity: 2
    ociRegistry: {endpoint: "oci://registry.lab.example/mural"}
  - name: no-oci
    kubeconfig: {secretReference: {name: no-oci-kubeconfig}}
  - name: not-registered
    kubeconfig: {secretReference: {name: not-registered-kubeconfig}}
    ociRegistry: {endpoint: "oci://registry.lab.example/mural"}
  - name: deleting
    kubeconfig: {secretReference: {name: deleting-kubeconfig}}
    ociRegistry: {endpoint: "oci://registry.lab.example/mural"}
`

// createDriftSpoke creates a Spoke in ns as the chart (or a hand, or a Compute
// Pool) would have made it.
func createDriftSpoke(t *testing.T, ns, name, spec string, labels, annotations map[string]string, finalizers ...string) {
	t.Helper()
	var s map[string]any
	assert.NilError(t, yaml.Unmarshal([]byte(spec), &s))
	s["hubRef"] = map[string]any{"name": "hub", "namespace": ns}
	if _, set := s["addOns"]; !set && agentAddOns() != nil {
		s["addOns"] = agentAddOns() // the webhook's rule in addon mode
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": fleetconfig.GroupVersion.String(), "kind": "Spoke", "spec": s}}
	u.SetName(name)
	u.SetNamespace(ns)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	u.SetFinalizers(finalizers)
	_, err := hub.Dynamic.Resource(fleetconfig.SpokeResource).Namespace(ns).Create(ctx(t), u, metav1.CreateOptions{})
	assert.NilError(t, err)
}

func driftNamespace(t *testing.T, ns string) {
	t.Helper()
	_, err := hub.Kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	assert.NilError(t, err)
}

const testFinalizer = "e2e.spokekit.io/keep"

// TestValuesDiffEachKindOfDrift compares a values file with Spokes of a
// namespace of their own (the fleet stand-in reconciles another), made as
// Helm renders them, by hand and by a Compute Pool: one of each kind of
// drift, through the API server that stores them with its defaults.
func TestValuesDiffEachKindOfDrift(t *testing.T) {
	const ns = "values-diff"
	driftNamespace(t, ns)
	helm := map[string]string{"meta.helm.sh/release-name": "mural", "meta.helm.sh/release-namespace": ns}
	keep := map[string]string{"meta.helm.sh/release-name": "mural", "meta.helm.sh/release-namespace": ns, "helm.sh/resource-policy": "keep"}
	byHelm := map[string]string{"app.kubernetes.io/managed-by": "Helm"}
	createDriftSpoke(t, ns, "in-step", `{kubeconfig: {secretReference: {name: in-step-kubeconfig, kubeconfigKey: kubeconfig}}, klusterlet: {mode: Default},
		cleanupConfig: {purgeKlusterletOperator: true, purgeKubeconfigSecret: false, purgeAgentNamespace: false, forceClusterDrain: true}}`, byHelm, keep)
	createDriftSpoke(t, ns, "fields", `{kubeconfig: {secretReference: {name: fields-kubeconfig}}, klusterlet: {mode: Default}, logVerbosity: 4}`, byHelm, keep)
	createDriftSpoke(t, ns, "no-oci", `{kubeconfig: {secretReference: {name: no-oci-kubeconfig}}}`, byHelm, keep)
	createDriftSpoke(t, ns, "deleting", `{kubeconfig: {secretReference: {name: deleting-kubeconfig}}}`, byHelm, keep, testFinalizer)
	createDriftSpoke(t, ns, "kept", `{kubeconfig: {secretReference: {name: kept-kubeconfig}}}`, byHelm, keep)
	createDriftSpoke(t, ns, "deleted-by-upgrade", `{kubeconfig: {secretReference: {name: x-kubeconfig}}}`, byHelm, helm)
	createDriftSpoke(t, ns, "by-hand", `{kubeconfig: {secretReference: {name: by-hand-kubeconfig}}}`, nil, nil)
	createDriftSpoke(t, ns, "pool-a-1", `{kubeconfig: {secretReference: {name: pool-a-1-kubeconfig}}}`, map[string]string{fleetconfig.ComputePoolLabel: "pool-a"}, nil)
	spokes := hub.Dynamic.Resource(fleetconfig.SpokeResource).Namespace(ns)
	assert.NilError(t, spokes.Delete(ctx(t), "deleting", metav1.DeleteOptions{}))
	t.Cleanup(func() {
		_, err := spokes.Patch(ctx(t), "deleting", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		if !apierrors.IsNotFound(err) {
			assert.Check(t, err)
		}
	})

	values := writeFile(t, "values.yaml", "fleetConfig:\n  spokes:"+driftEntries)
	r := spoke(t, "values-diff", "-n", ns, "--values", values, "-o", "json")
	assert.Equal(t, r.ExitCode, 1, r)
	var diff struct {
		Items []struct {
			Metadata    struct{ Name string }
			Drift       string
			HelmRelease string
			Fields      []struct {
				Path         string
				Values, Live any
				Immutable    bool
			}
		}
		ComputePool []string
		Next        string
	}
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &diff), r)
	got := map[string]string{}
	for _, it := range diff.Items {
		got[it.Metadata.Name] += it.Drift + " "
		if it.Drift == "FieldsDiffer" {
			var fields []string
			for _, f := range it.Fields {
				fields = append(fields, f.Path)
				assert.Check(t, is.Equal(f.Immutable, f.Path == "klusterlet.mode"), "%+v", f)
			}
			// The chart renders no per-spoke logVerbosity (RenderSpoke), so
			// the entry's 2 against the live 4 is no drift of the values.
			assert.Check(t, is.DeepEqual(fields, []string{"klusterlet.mode"}))
		}
	}
	assert.Check(t, is.DeepEqual(got, map[string]string{
		"fields":             "FieldsDiffer ",
		"no-oci":             "MissingOCIRegistry ",
		"not-registered":     "NotRegistered ",
		"deleting":           "DeletedButInValues ",
		"kept":               "NotInValues ",
		"deleted-by-upgrade": "NotInValues ",
		"by-hand":            "NotInValues ",
	}), r)
	assert.Check(t, is.DeepEqual(diff.ComputePool, []string{"pool-a-1"}))
	assert.Check(t, is.Contains(diff.Next, "helm upgrade mural CHART -n values-diff -f "+values), r)

	// The table says what the next upgrade does to each Spoke with no entry:
	// the release's job only applies the Spokes of its values, so none is
	// deleted, whatever Helm marks it carries.
	r = spoke(t, "values-diff", "-n", ns, "--values", values)
	assert.Equal(t, r.ExitCode, 1, r)
	assert.Check(t, !strings.Contains(r.Stdout, "deletes it"), r)
	for _, want := range []string{"no upgrade deletes a Spoke", "made outside Helm", "klusterlet.mode: values \"Hosted\", live \"Default\""} {
		assert.Check(t, is.Contains(r.Stdout, want), r)
	}
	assert.Check(t, is.Contains(r.Stderr, "Next: helm upgrade mural"), r)

	// The same list in a Flux HelmRelease: the Flux step.
	release := writeFile(t, "mural.yaml", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: mural, namespace: flux-system}\nspec:\n  values:\n    fleetConfig:\n      spokes:"+
		strings.ReplaceAll(driftEntries, "\n  ", "\n      "))
	r = spoke(t, "values-diff", "-n", ns, "--helmrelease", release, "-o", "name")
	assert.Equal(t, r.ExitCode, 1, r)
	assert.Check(t, is.Contains(r.Stdout, "spoke.fleetconfig.open-cluster-management.io/not-registered\n"), r)

	// In step: only in-step's entry, in a namespace with only its Spoke.
	const okNS = "values-diff-ok"
	driftNamespace(t, okNS)
	createDriftSpoke(t, okNS, "in-step", `{kubeconfig: {secretReference: {name: in-step-kubeconfig, kubeconfigKey: kubeconfig}}, klusterlet: {mode: Default},
		cleanupConfig: {purgeKlusterletOperator: true, purgeKubeconfigSecret: false, purgeAgentNamespace: false, forceClusterDrain: true}}`, byHelm, keep)
	stepped, _, found := strings.Cut(driftEntries, "  - name: fields")
	assert.Assert(t, found, "driftEntries has the entry fields")
	inStep := writeFile(t, "in-step.yaml", "fleetConfig:\n  spokes:"+stepped)
	r = spoke(t, "values-diff", "-n", okNS, "--values", inStep)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Equal(r.Stdout, ""), r)
	assert.Check(t, is.Contains(r.Stderr, "In step"), r)

	// A comparison that cannot be made is not drift: exit 3, never 1.
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	r = spoke(t, "values-diff", "-n", ns, "--values", missing)
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, missing), r)
	r = spoke(t, "values-diff", "-n", ns, "--values", writeFile(t, "bad.yaml", "fleetConfig: {spokes: 3}\n"))
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "fleetConfig.spokes is not a list"), r)
	r = spoke(t, "values-diff", "-n", ns)
	assert.Equal(t, r.ExitCode, 2, r)
}
