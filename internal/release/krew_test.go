package release

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"sigs.k8s.io/yaml"
)

var plugins = []string{"spoke", "fleetdrain", "park"}

// The platforms `make dist` builds by default.
var allPlatforms = []Platform{
	{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}, {"windows", "arm64"},
}

// The committed manifests are what `make dist` wrote for the current release;
// a template change (or a hand edit) without a new `make dist` fails here.
func TestCommittedKrewManifestsMatchTheirTemplates(t *testing.T) {
	for _, plugin := range plugins {
		t.Run(plugin, func(t *testing.T) {
			file := filepath.Join("..", "..", "krew-manifests", plugin+".yaml")
			committed, err := os.ReadFile(file)
			assert.NilError(t, err)
			m, err := ParseKrewManifest(committed)
			assert.NilError(t, err)
			assert.Equal(t, m.Plugin, plugin)
			var platforms []Platform
			for _, p := range m.Platforms {
				platforms = append(platforms, p.Platform)
			}
			assert.DeepEqual(t, platforms, allPlatforms)
			rendered, err := m.Render()
			assert.NilError(t, err)
			assert.Equal(t, string(committed), string(rendered),
				"%s differs from its template: run `make dist VERSION=%s` and commit krew-manifests/", file, m.Version)
		})
	}
}

var sha256Pattern = regexp.MustCompile(`^[a-f0-9]{64}$`)

// What krew's validator and krew-index reviewers check, for every template.
func TestRenderedManifestsFollowKrewRules(t *testing.T) {
	for _, plugin := range plugins {
		t.Run(plugin, func(t *testing.T) {
			m := KrewManifest{Plugin: plugin, Version: "v1.2.3"}
			for _, p := range allPlatforms {
				a := Archive{Plugin: plugin, Version: m.Version, Platform: p}
				m.Platforms = append(m.Platforms, KrewPlatform{Archive: a, URI: "https://example.com/" + a.Name(), SHA256: strings.Repeat("ab", 32)})
			}
			data, err := m.Render()
			assert.NilError(t, err)

			var doc struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct{ Name string }
				Spec       struct {
					Version, Homepage, ShortDescription, Description, Caveats string
					Platforms                                                 []struct {
						Selector         struct{ MatchLabels map[string]string } `json:"selector"`
						URI, SHA256, Bin string
						Files            []struct{ From, To string }
					}
				}
			}
			assert.NilError(t, yaml.UnmarshalStrict(data, &doc))
			assert.Equal(t, doc.APIVersion, "krew.googlecontainertools.github.com/v1alpha2")
			assert.Equal(t, doc.Kind, "Plugin")
			assert.Equal(t, doc.Metadata.Name, plugin)
			assert.Equal(t, doc.Spec.Version, "v1.2.3")
			assert.Check(t, doc.Spec.ShortDescription != "" && !strings.ContainsAny(doc.Spec.ShortDescription, "\r\n"))
			assert.Check(t, len(doc.Spec.ShortDescription) <= 50, "krew search cuts short descriptions at 50 characters: %q", doc.Spec.ShortDescription)
			assert.Check(t, len(strings.Fields(doc.Spec.Description)) > 30, "a description for people")
			// The caveats tell how to install the completion script krew leaves out.
			assert.Check(t, is.Contains(doc.Spec.Caveats, `cp "${KREW_ROOT:-$HOME/.krew}/store/`+plugin+`/v1.2.3/kubectl_complete-`+plugin+`" "${KREW_ROOT:-$HOME/.krew}/bin/"`))

			assert.Equal(t, len(doc.Spec.Platforms), len(allPlatforms))
			for i, p := range doc.Spec.Platforms {
				want := allPlatforms[i]
				assert.DeepEqual(t, p.Selector.MatchLabels, map[string]string{"os": want.OS, "arch": want.Arch})
				assert.Check(t, sha256Pattern.MatchString(p.SHA256))
				bin := "kubectl-" + plugin
				if want.OS == "windows" {
					bin += ".exe"
				}
				assert.Equal(t, p.Bin, bin)
				var from []string
				for _, f := range p.Files {
					assert.Equal(t, f.To, ".")
					from = append(from, f.From)
				}
				assert.DeepEqual(t, from, []string{bin, "LICENSE", "kubectl_complete-" + plugin})
			}

			back, err := ParseKrewManifest(data)
			assert.NilError(t, err)
			assert.DeepEqual(t, back, m)
		})
	}
}

func TestRenderNeedsATemplate(t *testing.T) {
	_, err := KrewManifest{Plugin: "nope", Version: "v0.1.0"}.Render()
	assert.ErrorContains(t, err, `no krew manifest template for plugin "nope"`)
}
