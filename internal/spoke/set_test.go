package spoke

import (
	"slices"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
)

func TestSetKeysWithDots(t *testing.T) {
	want := []string{"klusterlet", "annotations", "example.com/team"}
	for _, arg := range []string{
		`klusterlet.annotations["example.com/team"]=ml`,
		`klusterlet.annotations['example.com/team']=ml`,
		`klusterlet.annotations.example\.com/team=ml`,
		`spec.klusterlet.annotations["example.com/team"]=ml`,
	} {
		as, err := ParseAssignments([]string{arg})
		assert.NilError(t, err, arg)
		assert.DeepEqual(t, as[0].Path, want)
		assert.Equal(t, as[0].Value, "ml", arg)
		assert.Equal(t, as[0].Field(), `klusterlet.annotations["example.com/team"]`, arg)
		assert.Check(t, Mutable(as[0].Path), arg)
		assert.DeepEqual(t, SetPatch(as, "7")["spec"], map[string]any{
			"klusterlet": map[string]any{"annotations": map[string]any{"example.com/team": "ml"}},
		})
	}

	as, err := ParseAssignments([]string{`klusterlet.annotations["a=b.c\"d"]=x=y`})
	assert.NilError(t, err)
	assert.DeepEqual(t, as[0].Path, []string{"klusterlet", "annotations", `a=b.c"d`})
	assert.Equal(t, as[0].Value, "x=y")

	for _, bad := range []string{`a["b"]c=1`, `a[0]=1`, `a["b=1`, `a[""]=1`, `a\`, `a.=1`, `.a=1`, `a[b=1`} {
		_, err := ParseAssignments([]string{bad})
		assert.Equal(t, exitcode.Of(err), exitcode.Usage, bad)
	}
}

func TestSetRefusesCredentials(t *testing.T) {
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Refused, "kubectl spoke rotate-kubeconfig spoke-1",
		[]string{"set", "spoke-1", "kubeconfig.secretReference.name=other-kubeconfig"},
		[]string{"set", "spoke-1", "spec.kubeconfig={inCluster: true}"},
		[]string{"set", "spoke-1", "logVerbosity=4", `kubeconfig["context"]=x`},
	)
}

// FuzzParseAssignment checks that whatever the parser accepts, it can write
// back in a form that reads the same, and that a path has no empty key.
func FuzzParseAssignment(f *testing.F) {
	for _, s := range []string{
		`logVerbosity=3`, `spec.cleanupConfig.forceClusterDrain=true`, `klusterlet.annotations["example.com/team"]=ml`,
		`klusterlet.annotations['a.b']=x`, `klusterlet.annotations.example\.com/team=ml`, `a["b\"c"]=d=e`, `a[0]=1`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		path, value, err := splitAssignment(arg)
		if err != nil {
			return
		}
		if len(path) == 0 {
			t.Fatalf("%q: no path", arg)
		}
		for _, k := range path {
			if k == "" {
				t.Fatalf("%q: an empty key in %q", arg, path)
			}
		}
		again := FormatPath(path) + "=" + value
		p2, v2, err := splitAssignment(again)
		if err != nil || !slices.Equal(p2, path) || v2 != value {
			t.Fatalf("%q read as %q=%q, written as %q, read back as %q=%q (%v)", arg, path, value, again, p2, v2, err)
		}
	})
}
