package values

import (
	"bytes"
	"errors"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
)

func TestSetSecret(t *testing.T) {
	src := read(t, "values.yaml")
	out, changed, err := SetSecret(src, HelmValues, "spoke-1", "spoke-1-kubeconfig-2027")
	assert.NilError(t, err)
	assert.Check(t, changed)
	golden.Assert(t, string(out), "values-set-secret-spoke-1.golden")

	again, changed, err := SetSecret(out, HelmValues, "spoke-1", "spoke-1-kubeconfig-2027")
	assert.NilError(t, err)
	assert.Check(t, !changed, "pointing it at the same secret again is a no-op")
	assert.Equal(t, string(again), string(out))
}

// Only the value's text changes, quoted as it was; the rest of the line and
// of the file stays byte for byte.
func TestSetSecretKeepsTheLayout(t *testing.T) {
	for name, tc := range map[string]struct {
		kind      Kind
		src, want string
	}{
		"plain, comment after": {
			HelmValues,
			"fleetConfig:\n  spokes:\n  - name: a\n    kubeconfig:\n      secretReference:\n        name: old   # rotated yearly\n",
			"fleetConfig:\n  spokes:\n  - name: a\n    kubeconfig:\n      secretReference:\n        name: new   # rotated yearly\n",
		},
		"double quoted": {
			HelmValues,
			"fleetConfig:\n  spokes:\n  - name: a\n    kubeconfig:\n      secretReference: {name: \"o\\\"ld\", kubeconfigKey: kubeconfig}\n",
			"fleetConfig:\n  spokes:\n  - name: a\n    kubeconfig:\n      secretReference: {name: \"new\", kubeconfigKey: kubeconfig}\n",
		},
		"single quoted, another key": {
			HelmValues,
			"fleetConfig:\n  spokes:\n  - name: a\n    kubeconfig:\n      secretReference: {name: 'it''s', kubeconfigKey: 'value'} # é\n",
			"fleetConfig:\n  spokes:\n  - name: a\n    kubeconfig:\n      secretReference: {name: 'new', kubeconfigKey: 'kubeconfig'} # é\n",
		},
		"after non-ASCII text, CRLF": {
			HelmValues,
			"fleetConfig:\r\n  spokes:\r\n  - name: a\r\n    kubeconfig: {secretReference: {name: old}, context: \"é\"}\r\n",
			"fleetConfig:\r\n  spokes:\r\n  - name: a\r\n    kubeconfig: {secretReference: {name: new}, context: \"é\"}\r\n",
		},
		"helmrelease": {
			HelmRelease,
			"kind: HelmRelease\nspec:\n  values:\n    fleetConfig:\n      spokes:\n        - name: b\n        - name: a\n          kubeconfig:\n            secretReference:\n              name: old\n",
			"kind: HelmRelease\nspec:\n  values:\n    fleetConfig:\n      spokes:\n        - name: b\n        - name: a\n          kubeconfig:\n            secretReference:\n              name: new\n",
		},
	} {
		t.Run(name, func(t *testing.T) {
			out, changed, err := SetSecret([]byte(tc.src), tc.kind, "a", "new")
			assert.NilError(t, err)
			assert.Check(t, changed)
			assert.Equal(t, string(out), tc.want)
		})
	}
}

// A name that YAML would read as a number is quoted.
func TestSetSecretQuotesWhatIsNotAString(t *testing.T) {
	out, _, err := SetSecret([]byte("fleetConfig:\n  spokes:\n  - name: a\n    kubeconfig:\n      secretReference:\n        name: old\n"), HelmValues, "a", "1e3")
	assert.NilError(t, err)
	assert.Equal(t, string(out), "fleetConfig:\n  spokes:\n  - name: a\n    kubeconfig:\n      secretReference:\n        name: \"1e3\"\n")
}

func TestSetSecretRefusals(t *testing.T) {
	_, _, err := SetSecret(read(t, "values.yaml"), HelmValues, "spoke-9", "s")
	assert.Check(t, errors.Is(err, ErrNoEntry), "%v", err)
	assert.Check(t, is.ErrorContains(err, "no entry for spoke-9 in fleetConfig.spokes (entries: hub-as-spoke, spoke-1)"))

	for name, tc := range map[string]struct{ src, wantErr string }{
		"in-cluster entry":  {"fleetConfig:\n  spokes:\n  - name: a\n    kubeconfig: {inCluster: true}\n", "has no kubeconfig.secretReference.name"},
		"null name":         {"fleetConfig:\n  spokes:\n  - name: a\n    kubeconfig: {secretReference: {name: }}\n", "has no kubeconfig.secretReference.name"},
		"aliased reference": {"x: &r {name: old}\nfleetConfig:\n  spokes:\n  - name: a\n    kubeconfig: {secretReference: *r}\n", "has no kubeconfig.secretReference.name"},
		"multi-line name":   {"fleetConfig:\n  spokes:\n  - name: a\n    kubeconfig:\n      secretReference:\n        name: \"o\n          ld\"\n", "not written on one line"},
		"block scalar":      {"fleetConfig:\n  spokes:\n  - name: a\n    kubeconfig:\n      secretReference:\n        name: |\n          old\n", "not written on one line"},
		"anchored name":     {"fleetConfig:\n  spokes:\n  - name: a\n    kubeconfig:\n      secretReference:\n        name: &n old\n  - name: b\n    kubeconfig: {secretReference: {name: *n}}\n", "is anchored (&n)"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := SetSecret([]byte(tc.src), HelmValues, "a", "new")
			assert.ErrorContains(t, err, tc.wantErr)
			assert.Check(t, !errors.Is(err, ErrNoEntry))
		})
	}
}

// FuzzSetSecret: whatever the file, SetSecret either refuses or changes
// only the reference (verifySecret checks that), and a second run is a
// no-op.
func FuzzSetSecret(f *testing.F) {
	f.Add([]byte("fleetConfig:\n  spokes:\n  - name: a\n    kubeconfig:\n      secretReference: {name: 'o''ld', kubeconfigKey: \"k\\\"\"}\n"), "a")
	f.Add([]byte("fleetConfig:\n  spokes:\n  - name: a\n    kubeconfig:\n      secretReference:\n        name: old # c\n"), "a")
	f.Fuzz(func(t *testing.T, src []byte, name string) {
		out, changed, err := SetSecret(src, HelmValues, name, "new")
		if err != nil || !changed {
			return
		}
		again, changed, err := SetSecret(out, HelmValues, name, "new")
		if err != nil || changed || !bytes.Equal(again, out) {
			t.Fatalf("a second run changed the file or failed (%v):\n%q", err, out)
		}
	})
}
