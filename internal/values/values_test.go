package values

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	assert.NilError(t, err)
	return data
}

func TestAddToValuesFile(t *testing.T) {
	src := read(t, "values.yaml")
	out, changed, err := Add(src, HelmValues, Entry{Name: "spoke-2", SecretName: "spoke-2-kubeconfig", Cleanup: fleetconfig.ChartCleanupDefaults, HubName: "hub"})
	assert.NilError(t, err)
	assert.Check(t, changed)
	golden.Assert(t, string(out), "values-add.golden")
	assertOnlyInserted(t, src, out)

	again, changed, err := Add(out, HelmValues, Entry{Name: "spoke-2", SecretName: "spoke-2-kubeconfig", Cleanup: fleetconfig.ChartCleanupDefaults, HubName: "hub"})
	assert.NilError(t, err)
	assert.Check(t, !changed, "adding twice is a no-op")
	assert.Equal(t, string(again), string(out))

	names, err := Names(out, HelmValues)
	assert.NilError(t, err)
	assert.DeepEqual(t, names, []string{"hub-as-spoke", "spoke-1", "spoke-2"})
}

func TestAddCopiesFromNamedEntry(t *testing.T) {
	out, _, err := Add(read(t, "values.yaml"), HelmValues, Entry{Name: "spoke-2", SecretName: "s", CopyFrom: "spoke-1", Cleanup: fleetconfig.ChartCleanupDefaults, HubName: "hub"})
	assert.NilError(t, err)
	golden.Assert(t, string(out), "values-add-copy-from.golden")

	_, _, err = Add(read(t, "values.yaml"), HelmValues, Entry{Name: "spoke-2", SecretName: "s", CopyFrom: "nope"})
	assert.ErrorContains(t, err, `--copy-from "nope": no such entry in fleetConfig.spokes (entries: hub-as-spoke, spoke-1)`)
}

func TestAddToHelmRelease(t *testing.T) {
	src := read(t, "helmrelease.yaml")
	out, changed, err := Add(src, HelmRelease, Entry{Name: "spoke-2", SecretName: "spoke-2-kubeconfig", CopyFrom: "spoke-1", Cleanup: fleetconfig.ChartCleanupDefaults, HubName: "hub"})
	assert.NilError(t, err)
	assert.Check(t, changed)
	golden.Assert(t, string(out), "helmrelease-add.golden")
	assertOnlyInserted(t, src, out)
}

func TestRemove(t *testing.T) {
	for _, tc := range []struct{ file, name string }{
		{"values.yaml", "spoke-1"}, {"values.yaml", "hub-as-spoke"}, {"helmrelease.yaml", "spoke-1"},
	} {
		t.Run(tc.file+"/"+tc.name, func(t *testing.T) {
			kind := HelmValues
			if strings.HasPrefix(tc.file, "helmrelease") {
				kind = HelmRelease
			}
			src := read(t, tc.file)
			out, changed, err := Remove(src, kind, tc.name)
			assert.NilError(t, err)
			assert.Check(t, changed)
			golden.Assert(t, string(out), strings.TrimSuffix(tc.file, ".yaml")+"-remove-"+tc.name+".golden")
			assertOnlyInserted(t, out, src)
			names, err := Names(out, kind)
			assert.NilError(t, err)
			assert.Check(t, !is.Contains(names, tc.name)().Success())

			same, changed, err := Remove(out, kind, tc.name)
			assert.NilError(t, err)
			assert.Check(t, !changed)
			assert.Equal(t, string(same), string(out))
		})
	}
}

func TestRemoveLastEntry(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"block":      {"fleetConfig:\n  spokes:\n  # the only one\n  - name: a\n    x: 1\n  hub: {}\n", "fleetConfig:\n  spokes: []\n  hub: {}\n"},
		"comment":    {"fleetConfig:\n  spokes: # list\n  - name: a\n", "fleetConfig:\n  spokes: [] # list\n"},
		"release":    {"kind: HelmRelease\nspec:\n  values:\n    fleetConfig:\n      spokes:\n        - name: a\n", "kind: HelmRelease\nspec:\n  values:\n    fleetConfig:\n      spokes: []\n"},
		"end no eol": {"fleetConfig:\r\n  spokes:\r\n  - name: a", "fleetConfig:\r\n  spokes: []\r\n"},
	} {
		t.Run(name, func(t *testing.T) {
			kind := HelmValues
			if name == "release" {
				kind = HelmRelease
			}
			out, changed, err := Remove([]byte(tc.src), kind, "a")
			assert.NilError(t, err)
			assert.Check(t, changed)
			assert.Equal(t, string(out), tc.want)
			names, err := Names(out, kind)
			assert.NilError(t, err)
			assert.Check(t, is.Len(names, 0))

			_, changed, err = Remove(out, kind, "a")
			assert.NilError(t, err)
			assert.Check(t, !changed, "removing it again is a no-op")
		})
	}
}

// The list Remove empties ("spokes: []") takes a first entry again, made
// from the Entry alone: removing it gives back the file as it was.
func TestAddIntoEmptyList(t *testing.T) {
	e := Entry{Name: "new", SecretName: "new-kubeconfig", HubName: "hub", OCIRegistry: map[string]any{"endpoint": "oci://r"}}
	entry := "- name: new\n" +
		"  kubeconfig:\n    context: \"\"\n    inCluster: false\n    secretReference:\n      name: new-kubeconfig\n      kubeconfigKey: kubeconfig\n" +
		"  klusterlet:\n    mode: Default\n    forceInternalEndpointLookup: false\n" +
		"  cleanupConfig:\n    purgeKlusterletOperator: false\n    purgeKubeconfigSecret: false\n    purgeAgentNamespace: false\n    forceClusterDrain: false\n" +
		"  ociRegistry:\n    endpoint: oci://r\n" +
		"  hubRef:\n    name: hub\n    namespace: \"\"\n"
	indent := func(pad, text, eol string) string {
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		return pad + strings.Join(lines, eol+pad) + eol
	}
	for name, tc := range map[string]struct {
		src, want string
		kind      Kind
	}{
		"values":     {"fleetConfig:\n  spokes: []\n  hub: {}\n", "fleetConfig:\n  spokes:\n" + indent("    ", entry, "\n") + "  hub: {}\n", HelmValues},
		"comment":    {"fleetConfig:\n  spokes: [] # list\n", "fleetConfig:\n  spokes: # list\n" + indent("    ", entry, "\n"), HelmValues},
		"release":    {"kind: HelmRelease\nspec:\n  values:\n    fleetConfig:\n      spokes: []\n", "kind: HelmRelease\nspec:\n  values:\n    fleetConfig:\n      spokes:\n" + indent("        ", entry, "\n"), HelmRelease},
		"end no eol": {"fleetConfig:\r\n  spokes: []", "fleetConfig:\r\n  spokes:\r\n" + indent("    ", entry, "\r\n"), HelmValues},
	} {
		t.Run(name, func(t *testing.T) {
			out, changed, err := Add([]byte(tc.src), tc.kind, e)
			assert.NilError(t, err)
			assert.Check(t, changed)
			assert.Equal(t, string(out), tc.want)
			names, err := Names(out, tc.kind)
			assert.NilError(t, err)
			assert.DeepEqual(t, names, []string{"new"})
			back, _, err := Remove(out, tc.kind, "new")
			assert.NilError(t, err)
			assert.Equal(t, strings.TrimRight(string(back), "\r\n"), strings.TrimRight(tc.src, "\r\n"))
		})
	}
	_, _, err := Add([]byte("fleetConfig:\n  spokes: [ ]\n"), HelmValues, e)
	assert.ErrorContains(t, err, "write the list as a block by hand")
	e.OCIRegistry = nil
	_, _, err = Add([]byte("fleetConfig:\n  spokes: []\n"), HelmValues, e)
	assert.ErrorIs(t, err, ErrNoOCIRegistry)
}

func TestAddKeepsTheDominantLineEnding(t *testing.T) {
	src := "fleetConfig:\n  spokes:\n  - name: a\r\n    x: 1\n"
	out, _, err := Add([]byte(src), HelmValues, Entry{Name: "b", SecretName: "b-kubeconfig", OCIRegistry: map[string]any{"endpoint": "oci://r"}})
	assert.NilError(t, err)
	added := strings.TrimPrefix(string(out), src)
	assert.Check(t, !strings.Contains(added, "\r"), "the new entry has LF line ends like most of the file: %q", added)

	src = "fleetConfig:\r\n  spokes:\r\n  - name: a\n    x: 1\r\n"
	out, _, err = Add([]byte(src), HelmValues, Entry{Name: "b", SecretName: "b-kubeconfig", OCIRegistry: map[string]any{"endpoint": "oci://r"}})
	assert.NilError(t, err)
	added = strings.TrimPrefix(string(out), src)
	assert.Check(t, is.Equal(strings.Count(added, "\n"), strings.Count(added, "\r\n")), "the new entry has CRLF line ends like most of the file: %q", added)
}

func TestRemoveRefusesEntryWithAnchorUsedElsewhere(t *testing.T) {
	_, _, err := Remove(read(t, "helmrelease.yaml"), HelmRelease, "hub-as-spoke")
	assert.ErrorContains(t, err, "unknown anchor 'oci'")
	assert.ErrorContains(t, err, "nothing was written")
}

func TestRefusals(t *testing.T) {
	cases := map[string]struct {
		src     string
		kind    Kind
		wantErr string
	}{
		"not yaml":           {"fleetConfig: [\n", HelmValues, "not valid YAML"},
		"no list":            {"fleetConfig:\n  hub: {}\n", HelmValues, "no fleetConfig.spokes"},
		"not a list":         {"fleetConfig:\n  spokes: yes\n", HelmValues, "fleetConfig.spokes is not a list"},
		"flow style":         {"fleetConfig:\n  spokes: [{name: a}]\n", HelmValues, "flow style"},
		"empty, no registry": {"fleetConfig:\n  spokes: []\n", HelmValues, "no ociRegistry"},
		"entry not a map":    {"fleetConfig:\n  spokes:\n  - a\n", HelmValues, "not a block mapping with a name"},
		"duplicate names":    {"fleetConfig:\n  spokes:\n  - name: a\n  - name: a\n", HelmValues, `two entries named "a"`},
		"no helmrelease":     {"kind: ConfigMap\n", HelmRelease, "no HelmRelease"},
		"two documents":      {"a: 1\n---\nfleetConfig:\n  spokes:\n  - name: a\n", HelmValues, "several"},
		"anchored entry":     {"fleetConfig:\n  spokes:\n  - &x\n    name: a\n", HelmValues, "anchored"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := Add([]byte(tc.src), tc.kind, Entry{Name: "new", SecretName: "s"})
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}

// assertOnlyInserted checks that long is short with one run of bytes
// inserted (a missing final line end of short may gain one).
func assertOnlyInserted(t *testing.T, short, long []byte) {
	t.Helper()
	assert.Check(t, onlyInserted(short, long), "outside the edited entry the bytes differ:\n--- before\n%s\n--- after\n%s", short, long)
}

func onlyInserted(short, long []byte) bool {
	s, l := string(short), string(long)
	if !strings.HasSuffix(s, "\n") && len(l) > len(s) {
		for _, eol := range []string{"\n", "\r\n"} {
			if onlyInserted([]byte(s+eol), long) {
				return true
			}
		}
	}
	p := 0
	for p < len(s) && p < len(l) && s[p] == l[p] {
		p++
	}
	q := 0
	for q < len(s)-p && q < len(l)-p && s[len(s)-1-q] == l[len(l)-1-q] {
		q++
	}
	return p+q >= len(s)
}

func FuzzEdit(f *testing.F) {
	for _, name := range []string{"values.yaml", "helmrelease.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, name == "helmrelease.yaml", "spoke-1")
	}
	f.Add([]byte("fleetConfig:\n  spokes:\n  - name: a\n    x: 1"), false, "a")
	f.Add([]byte("fleetConfig:\r\n  spokes:\r\n  - name: a\r\n  - name: b\r\n    x: |\r\n      t\r\n"), false, "b")
	f.Add([]byte("fleetConfig:\n  spokes:\n  -\n    name: a\n  # c\n  - name: b # d\nz: 1\n"), false, "a")
	f.Fuzz(func(t *testing.T, src []byte, release bool, name string) {
		kind := HelmValues
		if release {
			kind = HelmRelease
		}
		before, err := Names(src, kind)
		if err != nil {
			return
		}
		out, changed, err := Add(src, kind, Entry{Name: "fuzz-new", SecretName: "fuzz-new-kubeconfig", OCIRegistry: map[string]any{"endpoint": "oci://r"}})
		if err == nil && changed {
			// Into an empty list, the key's "[]" goes too.
			if len(before) > 0 && !onlyInserted(src, out) {
				t.Fatalf("add changed bytes outside the new entry:\n%q\n%q", src, out)
			}
			assertEntries(t, src, out, kind, append(slices.Clone(before), "fuzz-new"), "fuzz-new")
			e, err := EntryValues(out, kind, "fuzz-new")
			if err != nil || fmt.Sprint(e["kubeconfig"]) != "map[context: inCluster:false secretReference:map[kubeconfigKey:kubeconfig name:fuzz-new-kubeconfig]]" {
				t.Fatalf("the new entry does not point at its secret: %v %v", e, err)
			}
		}
		out, changed, err = Remove(src, kind, name)
		if err == nil && changed {
			if len(before) > 1 && !onlyInserted(out, src) {
				t.Fatalf("remove changed bytes outside the entry:\n%q\n%q", src, out)
			}
			assertEntries(t, src, out, kind, slices.DeleteFunc(slices.Clone(before), func(n string) bool { return n == name }), name)
		}
	})
}

// assertEntries checks on the parsed documents that edited holds exactly
// the entries want, and that without entry name both documents are equal.
func assertEntries(t *testing.T, orig, edited []byte, kind Kind, want []string, name string) {
	t.Helper()
	got, err := Names(edited, kind)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("the edit holds entries %q (%v), want %q:\n%q", got, err, want, edited)
	}
	var docs [2][]any
	for i, src := range [][]byte{orig, edited} {
		if docs[i], err = decodeAll(src); err != nil {
			t.Fatalf("does not parse: %v\n%q", err, src)
		}
		for _, d := range docs[i] {
			if err := dropEntry(d, kind, name); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !reflect.DeepEqual(docs[0], docs[1]) {
		t.Fatalf("the edit changed more than entry %s:\n%v\n%v", name, docs[0], docs[1])
	}
}

// The chart's first entry is the hub managing itself: of it a new entry
// takes only what the fleet shares (ociRegistry, hubRef), never its
// klusterlet settings, purges, add-ons or way to its cluster, whether it is
// the only template or named in --copy-from; another entry is the default
// template. An entry left without ociRegistry is refused.
func TestAddNeverCopiesTheHubAsSpoke(t *testing.T) {
	hubAsSpoke := `fleetConfig:
  spokes:
    - name: hub-as-spoke
      hubRef: {name: hub, namespace: ""}
      kubeconfig:
        inCluster: true
      klusterlet:
        mode: Default
        forceInternalEndpointLookup: true
        forceInternalEndpointLookupManaged: true
        managedClusterKubeconfig: {inCluster: true}
        annotations: {team: platform}
      cleanupConfig: {purgeKlusterletOperator: true, purgeKubeconfigSecret: true}
      addOns: [{configName: hub-only}]
      ociRegistry: {endpoint: "oci://registry.example.com/mural"}
`
	e := Entry{Name: "spoke-2", SecretName: "spoke-2-kubeconfig", Cleanup: fleetconfig.ChartCleanupDefaults, HubName: "ignored", AddOns: []string{"fleetconfig-controller-agent"}}
	for _, copyFrom := range []string{"", "hub-as-spoke"} {
		e.CopyFrom = copyFrom
		out, changed, err := Add([]byte(hubAsSpoke), HelmValues, e)
		assert.NilError(t, err)
		assert.Check(t, changed)
		got, err := EntryValues(out, HelmValues, "spoke-2")
		assert.NilError(t, err)
		assert.DeepEqual(t, got, map[string]any{
			"name": "spoke-2",
			"kubeconfig": map[string]any{
				"context": "", "inCluster": false,
				"secretReference": map[string]any{"name": "spoke-2-kubeconfig", "kubeconfigKey": "kubeconfig"},
			},
			"klusterlet": map[string]any{"mode": "Default", "forceInternalEndpointLookup": false},
			"cleanupConfig": map[string]any{
				"purgeKlusterletOperator": true, "purgeKubeconfigSecret": false,
				"purgeAgentNamespace": false, "forceClusterDrain": true,
			},
			"ociRegistry": map[string]any{"endpoint": "oci://registry.example.com/mural"},
			"hubRef":      map[string]any{"name": "hub", "namespace": ""},
			"addOns":      []any{map[string]any{"configName": "fleetconfig-controller-agent"}},
		})
	}

	// --oci-registry wins; an entry left without one is refused.
	e.CopyFrom, e.OCIRegistry = "", map[string]any{"endpoint": "oci://spoke.example.com"}
	out, _, err := Add([]byte(hubAsSpoke), HelmValues, e)
	assert.NilError(t, err)
	got, err := EntryValues(out, HelmValues, "spoke-2")
	assert.NilError(t, err)
	assert.DeepEqual(t, got["ociRegistry"], map[string]any{"endpoint": "oci://spoke.example.com"})
	noRegistry := strings.Replace(hubAsSpoke, `      ociRegistry: {endpoint: "oci://registry.example.com/mural"}
`, "", 1)
	e.OCIRegistry = nil
	_, _, err = Add([]byte(noRegistry), HelmValues, e)
	assert.ErrorIs(t, err, ErrNoOCIRegistry)
	e.HubName = "hub"

	// A remote entry after it is the template: its hubRef, registry and
	// klusterlet settings, but never its add-ons.
	withRemote := hubAsSpoke + `    - name: spoke-1
      hubRef: {name: other-hub, namespace: ""}
      kubeconfig: {secretReference: {name: spoke-1-kubeconfig}}
      klusterlet: {mode: Default, annotations: {team: ml}}
      addOns: [{configName: fleetconfig-controller-agent}, {configName: extra}]
      ociRegistry: {endpoint: "oci://registry.example.com/mural"}
`
	e.OCIRegistry, e.AddOns = nil, nil
	out, _, err = Add([]byte(withRemote), HelmValues, e)
	assert.NilError(t, err)
	got, err = EntryValues(out, HelmValues, "spoke-2")
	assert.NilError(t, err)
	assert.DeepEqual(t, got["hubRef"], map[string]any{"name": "other-hub", "namespace": ""})
	assert.DeepEqual(t, got["klusterlet"], map[string]any{"mode": "Default", "annotations": map[string]any{"team": "ml"}, "forceInternalEndpointLookup": false})
	assert.DeepEqual(t, got["ociRegistry"], map[string]any{"endpoint": "oci://registry.example.com/mural"})
	assert.Check(t, got["addOns"] == nil)
}

// spokeFeatureGates is read where the chart reads it; absent is not found.
func TestSpokeFeatureGates(t *testing.T) {
	g, found, err := SpokeFeatureGates([]byte("fleetConfig:\n  spokeFeatureGates: {ClusterClaim: true, X: false}\n  spokes: []\n"), HelmValues)
	assert.NilError(t, err)
	assert.Check(t, found)
	assert.DeepEqual(t, g, map[string]any{"ClusterClaim": true, "X": false})
	_, found, err = SpokeFeatureGates([]byte("fleetConfig:\n  spokes: []\n"), HelmValues)
	assert.NilError(t, err)
	assert.Check(t, !found)
	g, found, err = SpokeFeatureGates([]byte("kind: HelmRelease\nspec:\n  values:\n    fleetConfig:\n      spokeFeatureGates: {A: true}\n      spokes: []\n"), HelmRelease)
	assert.NilError(t, err)
	assert.Check(t, found)
	assert.DeepEqual(t, g, map[string]any{"A": true})
}

// Each of the four cleanupConfig values is written as given, false included.
func TestAddWritesTheCleanupConfigItIsGiven(t *testing.T) {
	cleanup := fleetconfig.CleanupConfig{PurgeAgentNamespace: true}
	out, _, err := Add(read(t, "values.yaml"), HelmValues, Entry{Name: "spoke-2", SecretName: "s", Cleanup: cleanup})
	assert.NilError(t, err)
	got, err := EntryValues(out, HelmValues, "spoke-2")
	assert.NilError(t, err)
	assert.DeepEqual(t, got["cleanupConfig"], map[string]any{
		"purgeKlusterletOperator": false, "purgeKubeconfigSecret": false,
		"purgeAgentNamespace": true, "forceClusterDrain": false,
	})
}
