//go:build e2e

package spoke

import (
	"maps"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"sigs.k8s.io/yaml"

	"github.com/spokekit/spokekit/e2e/harness"
)

// otherValues are the release's user-supplied values besides the spokes: an
// upgrade by the plugin must leave every one of them as it is.
func otherValues() map[string]any {
	return map[string]any{
		"image":       map[string]any{"tag": "v2.3.1"},
		"applySpokes": map[string]any{"managedBy": harness.SpokesJobManager},
		"fleetConfig": map[string]any{"logVerbosity": 3, "hub": map[string]any{"name": "hub"}},
	}
}

// withoutSpokes is a release's user-supplied values, fleetConfig.spokes
// taken out.
func withoutSpokes(t *testing.T, cfg map[string]any) map[string]any {
	t.Helper()
	data, err := yaml.Marshal(cfg)
	assert.NilError(t, err)
	var out map[string]any
	assert.NilError(t, yaml.Unmarshal(data, &out))
	if fc, ok := out["fleetConfig"].(map[string]any); ok {
		delete(fc, "spokes")
	}
	return out
}

func spokeNames(cfg map[string]any) []string {
	var out []string
	fc, _ := cfg["fleetConfig"].(map[string]any)
	list, _ := fc["spokes"].([]any)
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m["name"].(string))
		}
	}
	return out
}

// spokeSecret is the secret the entry of spoke name in cfg names.
func spokeSecret(cfg map[string]any, name string) string {
	fc, _ := cfg["fleetConfig"].(map[string]any)
	list, _ := fc["spokes"].([]any)
	for _, e := range list {
		if m, ok := e.(map[string]any); ok && m["name"] == name {
			kc, _ := m["kubeconfig"].(map[string]any)
			ref, _ := kc["secretReference"].(map[string]any)
			secret, _ := ref["name"].(string)
			return secret
		}
	}
	return ""
}

// installRelease installs release name of the test bed's chart with
// otherValues and one spoke, spokeName (the cluster spoke2, its secret and
// entry made by add --values), while the harness plays the release's job
// until the test ends; it waits until the spoke joined. It returns the
// release and the values file add wrote the entry into.
func installRelease(t *testing.T, name, spokeName string) (*release.Release, string) {
	t.Helper()
	values := writeFile(t, "values.yaml", valuesFile)
	r := spoke(t, "add", spokeName, "--spoke-kubeconfig", spoke2.Kubeconfig, "--values", values)
	assert.Equal(t, r.ExitCode, 0, r)
	var file map[string]any
	assert.NilError(t, yaml.Unmarshal([]byte(readFile(t, values)), &file))
	initial := otherValues()
	for _, e := range file["fleetConfig"].(map[string]any)["spokes"].([]any) {
		if e.(map[string]any)["name"] == spokeName {
			initial["fleetConfig"].(map[string]any)["spokes"] = []any{e}
		}
	}
	job := hub.StartSpokesJob(harness.Context(t, 10*time.Minute), releaseNamespace, name)
	t.Cleanup(func() { assert.Check(t, is.Len(job.Errors(), 0)) })
	installed, err := hub.HelmInstall(ctx(t), "../charts/mural", releaseNamespace, name, initial)
	assert.NilError(t, err)
	t.Cleanup(func() { assert.Check(t, hub.HelmUninstall(releaseNamespace, name)) })
	waitAvailable(t, spokeName)
	return installed, values
}

// TestReleaseAddAndRemove is the seed's own path on a real Helm release of
// the test bed's chart, whose post-upgrade job (played by the harness)
// applies a Spoke for each fleetConfig.spokes entry.
func TestReleaseAddAndRemove(t *testing.T) {
	installed, values := installRelease(t, "mural", "rel-base")
	n := installed.Version
	const comment = "# mural on the lab hub -- edited by hand, keep the comments"
	assert.Assert(t, strings.Contains(readFile(t, values), comment))

	// add --release: revision N+1, only the spokes changed, and the join.
	r := spoke(t, "add", "rel-new", "--spoke-kubeconfig", spoke1.Kubeconfig, "--release", "mural", "--dry-run=client")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "+    name: rel-new"), r)
	assert.Check(t, is.Contains(r.Stdout, "would make revision "+itoa(int64(n+1))), r)
	assert.Check(t, !secretExists(t, "rel-new"))
	latest, err := hub.HelmRevision(releaseNamespace, "mural", 0)
	assert.NilError(t, err)
	assert.Equal(t, latest.Version, n, "a dry run makes no revision")

	r = spoke(t, "add", "rel-new", "--spoke-kubeconfig", spoke1.Kubeconfig, "--release", "mural", "--values", values, "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	// --values: the file in git gets the entry too, its comments kept.
	assert.Check(t, is.Contains(readFile(t, values), "name: rel-new"))
	assert.Check(t, is.Contains(readFile(t, values), comment))
	up, err := hub.HelmRevision(releaseNamespace, "mural", 0)
	assert.NilError(t, err)
	assert.Equal(t, up.Version, n+1)
	assert.Equal(t, up.Info.Status, rcommon.StatusDeployed)
	assert.DeepEqual(t, spokeNames(up.Config), []string{"rel-base", "rel-new"})
	assert.DeepEqual(t, withoutSpokes(t, up.Config), withoutSpokes(t, installed.Config))
	assert.Equal(t, up.Chart.Metadata.Version, installed.Chart.Metadata.Version)
	assert.Check(t, spokeObject(t, "rel-new") != nil)
	waitAvailable(t, "rel-new")
	// The job applied it: Helm neither owns nor marks it.
	assert.Check(t, is.Equal(spokeObject(t, "rel-new").GetAnnotations()["meta.helm.sh/release-name"], ""))
	// Once it joined, add recorded its cluster on it, so that a second name is refused.
	assert.Check(t, spokeObject(t, "rel-new").GetAnnotations()[spokekitUIDAnnotation] != "", "the cluster's UID is recorded")
	assert.Check(t, is.Contains(r.Stdout, "written once the Spoke joined"), r)

	// A release that is pending or failed is refused, and nothing written.
	for _, status := range []rcommon.Status{rcommon.StatusPendingUpgrade, rcommon.StatusFailed} {
		cfg, err := hub.Helm(releaseNamespace)
		assert.NilError(t, err)
		stuck := &release.Release{}
		*stuck = *up
		stuck.Version, stuck.Info = up.Version+1, &release.Info{Status: status, FirstDeployed: up.Info.FirstDeployed, LastDeployed: up.Info.LastDeployed}
		stuck.Config = maps.Clone(up.Config)
		assert.NilError(t, cfg.Releases.Create(stuck))
		for _, args := range [][]string{
			{"add", "rel-refused", "--spoke-kubeconfig", spoke1.Kubeconfig, "--release", "mural"},
			{"remove", "rel-new", "--release", "mural"},
		} {
			r = spoke(t, args...)
			assert.Equal(t, r.ExitCode, 3, r)
			assert.Check(t, is.Contains(r.Stderr, string(status)), r)
			assert.Check(t, is.Contains(r.Stderr, "nothing was changed"), r)
		}
		assert.Check(t, !secretExists(t, "rel-refused"))
		assert.Check(t, spokeObject(t, "rel-new") != nil, "the Spoke a refused remove names stays")
		last, err := hub.HelmRevision(releaseNamespace, "mural", 0)
		assert.NilError(t, err)
		assert.Equal(t, last.Version, up.Version+1, "no revision made")
		_, err = cfg.Releases.Delete("mural", stuck.Version)
		assert.NilError(t, err)
	}

	// remove --release: revision N+2 without the entry, and everything gone.
	r = spoke(t, "remove", "rel-new", "--release", "mural", "--values", values, "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, !strings.Contains(readFile(t, values), "rel-new"), "the entry left the file too")
	assert.Check(t, is.Contains(readFile(t, values), comment))
	down, err := hub.HelmRevision(releaseNamespace, "mural", 0)
	assert.NilError(t, err)
	assert.Equal(t, down.Version, n+2)
	assert.DeepEqual(t, spokeNames(down.Config), []string{"rel-base"})
	assert.DeepEqual(t, withoutSpokes(t, down.Config), withoutSpokes(t, installed.Config))
	assert.Check(t, spokeObject(t, "rel-new") == nil)
	assert.Check(t, managedCluster(t, "rel-new") == nil)

	// values-diff reads the release's values: rel-base is in both.
	r = spoke(t, "values-diff", "--release", "mural", "-o", "json")
	assert.Check(t, r.ExitCode == 0 || r.ExitCode == 1, r)
	assert.Check(t, !strings.Contains(r.Stdout, `"rel-base"`), "rel-base is in step: %s", r)

	r = spoke(t, "remove", "rel-base", "--release", "mural", "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, spokeObject(t, "rel-base") == nil)

	// The release's spokes list is empty now: add makes its first entry
	// again from the Hub and --oci-registry (a dry run, nothing written).
	r = spoke(t, "add", "rel-again", "--spoke-kubeconfig", spoke1.Kubeconfig, "--release", "mural", "--dry-run=client")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "--oci-registry"), r)
	r = spoke(t, "add", "rel-again", "--spoke-kubeconfig", spoke1.Kubeconfig, "--release", "mural", "--dry-run=client",
		"--oci-registry", `{endpoint: "oci://registry.example.com/mural"}`)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "name: rel-again"), r)
	last, err := hub.HelmRevision(releaseNamespace, "mural", 0)
	assert.NilError(t, err)
	assert.Equal(t, last.Version, n+3, "the dry run made no revision")
}

// TestReleaseRotateAndForceRemove is rotate-kubeconfig --secret and
// force-remove with --release: each makes the next revision with only the
// spoke's entry changed, and the job that the upgrade runs keeps what the
// command did (the Spoke on the new secret; no Spoke applied again).
func TestReleaseRotateAndForceRemove(t *testing.T) {
	const name, spokeName, secret = "mural-rotate", "rel-rotate", "rel-rotate-2027"
	installed, values := installRelease(t, name, spokeName)

	r := spoke(t, "rotate-kubeconfig", spokeName, "--spoke-kubeconfig", spoke2.Kubeconfig, "--secret", secret, "--release", name, "--values", values)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(readFile(t, values), "name: "+secret), "the file's entry names the new secret too")
	assert.Check(t, is.Contains(r.Stdout, "made from "+itoa(int64(installed.Version))), r)
	up, err := hub.HelmRevision(releaseNamespace, name, 0)
	assert.NilError(t, err)
	assert.Equal(t, up.Version, installed.Version+1)
	assert.Check(t, is.Equal(spokeSecret(installed.Config, spokeName), spokeName+"-kubeconfig"))
	assert.Check(t, is.Equal(spokeSecret(up.Config, spokeName), secret), "the entry names the new secret")
	assert.DeepEqual(t, withoutSpokes(t, up.Config), withoutSpokes(t, installed.Config))
	// The upgrade waited for its job, which applied the entry again.
	assert.Check(t, is.Equal(secretReference(t, spokeName), secret), "the Spoke stays on the new secret")

	r = spoke(t, "force-remove", spokeName, "--release", name, "--yes", "--even-if-reachable", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	down, err := hub.HelmRevision(releaseNamespace, name, 0)
	assert.NilError(t, err)
	assert.Equal(t, down.Version, installed.Version+2)
	assert.Check(t, is.Len(spokeNames(down.Config), 0))
	assert.DeepEqual(t, withoutSpokes(t, down.Config), withoutSpokes(t, installed.Config))
	assert.Check(t, spokeObject(t, spokeName) == nil, "the Spoke is gone, and the upgrade's job did not apply it again")
}
