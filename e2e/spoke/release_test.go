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

// TestReleaseAddAndRemove is the seed's own path on a real Helm release of
// the test bed's chart, whose post-upgrade job (played by the harness)
// applies a Spoke for each fleetConfig.spokes entry.
func TestReleaseAddAndRemove(t *testing.T) {
	// The release starts with one spoke, its secret stored by add.
	values := writeFile(t, "values.yaml", valuesFile)
	r := spoke(t, "add", "rel-base", "--spoke-kubeconfig", spoke2.Kubeconfig, "--values", values)
	assert.Equal(t, r.ExitCode, 0, r)
	var file map[string]any
	assert.NilError(t, yaml.Unmarshal([]byte(readFile(t, values)), &file))
	initial := otherValues()
	fc := initial["fleetConfig"].(map[string]any)
	for _, e := range file["fleetConfig"].(map[string]any)["spokes"].([]any) {
		if e.(map[string]any)["name"] == "rel-base" {
			fc["spokes"] = []any{e}
		}
	}
	job := hub.StartSpokesJob(harness.Context(t, 10*time.Minute), releaseNamespace, "mural")
	t.Cleanup(func() { assert.Check(t, is.Len(job.Errors(), 0)) })
	installed, err := hub.HelmInstall(ctx(t), "../charts/mural", releaseNamespace, "mural", initial)
	assert.NilError(t, err)
	t.Cleanup(func() { assert.Check(t, hub.HelmUninstall(releaseNamespace, "mural")) })
	n := installed.Version
	waitAvailable(t, "rel-base")

	// add --release: revision N+1, only the spokes changed, and the join.
	r = spoke(t, "add", "rel-new", "--spoke-kubeconfig", spoke1.Kubeconfig, "--release", "mural", "--dry-run=client")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "+    name: rel-new"), r)
	assert.Check(t, is.Contains(r.Stdout, "would make revision "+itoa(int64(n+1))), r)
	assert.Check(t, !secretExists(t, "rel-new"))
	latest, err := hub.HelmRevision(releaseNamespace, "mural", 0)
	assert.NilError(t, err)
	assert.Equal(t, latest.Version, n, "a dry run makes no revision")

	r = spoke(t, "add", "rel-new", "--spoke-kubeconfig", spoke1.Kubeconfig, "--release", "mural", "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
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
	r = spoke(t, "remove", "rel-new", "--release", "mural", "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
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
}
