//go:build e2e

package spoke

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRotateKubeconfig(t *testing.T) {
	addAndJoin(t, "rotating", spoke1)
	secrets := hub.Kube.CoreV1().Secrets(releaseNamespace)
	before, err := secrets.Get(ctx(t), "rotating-kubeconfig", metav1.GetOptions{})
	assert.NilError(t, err)
	writes, spokeBefore := spokeWrites(t, "secrets", "rotating-kubeconfig"), spokeWrites(t, "spokes", "rotating")

	t.Run("a kubeconfig of the other spoke is refused", func(t *testing.T) {
		r := spoke(t, "rotate-kubeconfig", "rotating", "--spoke-kubeconfig", spoke2.Kubeconfig)
		assert.Equal(t, r.ExitCode, 3, r)
		assert.Check(t, is.Contains(r.Stderr, "reaches a different cluster than spoke rotating (different kube-system namespace UID)"), r)
		assert.Equal(t, spokeWrites(t, "secrets", "rotating-kubeconfig"), writes, "the secret is untouched")
	})
	t.Run("a short-lived credential is refused", func(t *testing.T) {
		r := spoke(t, "rotate-kubeconfig", "rotating", "--spoke-kubeconfig", writeKubeconfig(t, signedCert(t, spoke1, "short", time.Now().Add(24*time.Hour))))
		assert.Equal(t, r.ExitCode, 3, r)
		assert.Check(t, is.Contains(r.Stderr, "sooner than --min-credential-lifetime"), r)
		assert.Equal(t, spokeWrites(t, "secrets", "rotating-kubeconfig"), writes, "the secret is untouched")
	})
	t.Run("new credentials of the same cluster replace the secret in place", func(t *testing.T) {
		expires := time.Now().Add(2 * 365 * 24 * time.Hour).Truncate(time.Second)
		r := spoke(t, "rotate-kubeconfig", "rotating", "--spoke-kubeconfig", writeKubeconfig(t, signedCert(t, spoke1, "rotated", expires)), "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		var rep struct{ SecretUID, OldExpires, NewExpires, SameClusterBy, Result string }
		assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &rep), r)
		assert.Equal(t, rep.SameClusterBy, "kube-system namespace UID")
		assert.Equal(t, rep.Result, "replaced in place")
		assert.Equal(t, rep.NewExpires, expires.UTC().Format(time.RFC3339))
		assert.Check(t, rep.OldExpires != rep.NewExpires, r)
		after, err := secrets.Get(ctx(t), "rotating-kubeconfig", metav1.GetOptions{})
		assert.NilError(t, err)
		assert.Equal(t, after.UID, before.UID, "the same secret object")
		assert.Equal(t, rep.SecretUID, string(before.UID))
		assert.Check(t, !bytes.Equal(after.Data["kubeconfig"], before.Data["kubeconfig"]))
		assert.Equal(t, spokeWrites(t, "secrets", "rotating-kubeconfig"), writes+1, "one write")
		// The Spoke keeps its secret; its record (what status and health read
		// instead of the secret) takes the new credential's expiry, in one write.
		assert.Equal(t, secretReference(t, "rotating"), "rotating-kubeconfig")
		assert.Equal(t, spokeObject(t, "rotating").GetAnnotations()["spoke.spokekit.io/credential-expires"], rep.NewExpires)
		assert.Equal(t, spokeWrites(t, "spokes", "rotating"), spokeBefore+1, "one write of the Spoke: its record")
	})
}

// A spoke of the values moved to a new secret: with its values file the
// entry follows; without, a warning says helm upgrade would move it back.
func TestRotateIntoNewSecretRepointsTheValuesEntry(t *testing.T) {
	values := writeFile(t, "values.yaml", valuesFile)
	addAndJoin(t, "repointed", spoke1, "--values", values)
	added := readFile(t, values)
	rotated := writeKubeconfig(t, signedCert(t, spoke1, "repointed", time.Now().Add(2*365*24*time.Hour)))
	secretThere := func(name string) bool { return secretKubeconfig(t, name) != nil }

	t.Run("a file without the spoke's entry is refused before any write", func(t *testing.T) {
		other := writeFile(t, "other.yaml", valuesFile)
		r := spoke(t, "rotate-kubeconfig", "repointed", "--spoke-kubeconfig", rotated, "--secret", "repointed-2027", "--values", other)
		assert.Equal(t, r.ExitCode, 3, r)
		assert.Check(t, is.Contains(r.Stderr, "has no entry for repointed in fleetConfig.spokes"), r)
		assert.Check(t, is.Contains(r.Stderr, "nothing was changed"), r)
		assert.Check(t, !secretThere("repointed-2027"), "no secret was written")
		assert.Equal(t, secretReference(t, "repointed"), "repointed-kubeconfig")
		assert.Equal(t, readFile(t, other), valuesFile)
	})
	t.Run("--values without --secret is a usage error", func(t *testing.T) {
		r := spoke(t, "rotate-kubeconfig", "repointed", "--spoke-kubeconfig", rotated, "--values", values)
		assert.Equal(t, r.ExitCode, 2, r)
	})
	t.Run("a dry run leaves the file alone", func(t *testing.T) {
		r := spoke(t, "rotate-kubeconfig", "repointed", "--spoke-kubeconfig", rotated, "--secret", "repointed-2027", "--values", values, "--dry-run=client")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, "entry would name repointed-2027"), r)
		assert.Equal(t, readFile(t, values), added)
		assert.Check(t, !secretThere("repointed-2027"))
	})
	t.Run("the Spoke and the entry point at the new secret", func(t *testing.T) {
		r := spoke(t, "rotate-kubeconfig", "repointed", "--spoke-kubeconfig", rotated, "--secret", "repointed-2027", "--values", values)
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, "entry now names repointed-2027"), r)
		assert.Check(t, !strings.Contains(r.Stderr, "Warning"), r)
		assert.Equal(t, secretReference(t, "repointed"), "repointed-2027")
		want := strings.Replace(added, "name: repointed-kubeconfig\n", "name: repointed-2027\n", 1)
		assert.Check(t, want != added)
		assert.Equal(t, readFile(t, values), want, "only the secret's name changed")
	})
	t.Run("without the file, a warning", func(t *testing.T) {
		r := spoke(t, "rotate-kubeconfig", "repointed", "--spoke-kubeconfig", rotated, "--secret", "repointed-2028", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		var rep struct{ Warnings []string }
		assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &rep), r)
		assert.Equal(t, len(rep.Warnings), 1, r)
		for _, w := range []string{rep.Warnings[0], r.Stderr} {
			// add --apply on a hub whose chart leaves Spokes to its job stamps
			// no Helm marks; the job would still re-apply the entry.
			assert.Check(t, is.Contains(w, "Warning: spoke repointed carries no Helm release marks"), r)
			assert.Check(t, is.Contains(w, "the next helm upgrade points the Spoke back"), r)
			assert.Check(t, is.Contains(w, "--values FILE"), r)
		}
		assert.Equal(t, secretReference(t, "repointed"), "repointed-2028")
	})
}

func TestSetMutableAndImmutableFields(t *testing.T) {
	addAndJoin(t, "settable", spoke1)
	writes := spokeWrites(t, "spokes", "settable")
	for _, field := range []string{"hubRef.name=other-hub", "klusterlet.mode=Hosted", "proxyUrl=http://proxy:3128", "spec.createNamespace=false"} {
		r := spoke(t, "set", "settable", "logVerbosity=2", field)
		assert.Equal(t, r.ExitCode, 3, r)
		assert.Check(t, is.Contains(r.Stderr, "cannot change once the spoke exists"), r)
		assert.Check(t, is.Contains(r.Stderr, "kubectl spoke remove settable"), r)
	}
	assert.Equal(t, spokeWrites(t, "spokes", "settable"), writes, "nothing was written")

	r := spoke(t, "set", "settable", "logVerbosity=not-yaml: [")
	assert.Equal(t, r.ExitCode, 2, r)

	r = spoke(t, "set", "settable", "logVerbosity=3", "cleanupConfig.forceClusterDrain=true", "klusterlet.annotations.team=ml")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Equal(t, spokeWrites(t, "spokes", "settable"), writes+1, "one write for the three fields")
	s := spokeObject(t, "settable")
	v, _, _ := unstructured.NestedInt64(s.Object, "spec", "logVerbosity")
	assert.Equal(t, v, int64(3))
	drain, _, _ := unstructured.NestedBool(s.Object, "spec", "cleanupConfig", "forceClusterDrain")
	assert.Check(t, drain)
	team, _, _ := unstructured.NestedString(s.Object, "spec", "klusterlet", "annotations", "team")
	assert.Equal(t, team, "ml")

	r = spoke(t, "set", "settable", "logVerbosity=99")
	assert.Equal(t, r.ExitCode, 1, "the API server's validation speaks: %s", r)

	// An annotation key with dots is one key, not nested maps.
	r = spoke(t, "set", "settable", `klusterlet.annotations["example.com/team"]=ml`, `klusterlet.annotations.example\.com/owner=ops`)
	assert.Equal(t, r.ExitCode, 0, r)
	annotations, _, _ := unstructured.NestedStringMap(spokeObject(t, "settable").Object, "spec", "klusterlet", "annotations")
	assert.Equal(t, annotations["example.com/team"], "ml")
	assert.Equal(t, annotations["example.com/owner"], "ops")

	// Credentials change only through rotate-kubeconfig.
	writes = spokeWrites(t, "spokes", "settable")
	r = spoke(t, "set", "settable", "kubeconfig.secretReference.name=spoke-2-kubeconfig")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "kubectl spoke rotate-kubeconfig settable"), r)
	assert.Equal(t, spokeWrites(t, "spokes", "settable"), writes, "nothing was written")
}
