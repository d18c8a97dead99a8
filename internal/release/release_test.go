// Package release has no code: GoReleaser builds the releases from
// goreleaser.yaml (`make dist`). These tests keep what is committed for krew
// in step: the manifests in krew-manifests/ (GoReleaser's output for the
// current release; e2e/krew checks that GoReleaser still writes them so) and
// the krew-release-bot templates that update krew-index from each release.
package release

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"

	"gotest.tools/v3/assert"
	"sigs.k8s.io/yaml"
)

// config is what the tests read of goreleaser.yaml.
type config struct {
	Builds []struct {
		ID      string   `json:"id"`
		Targets []string `json:"targets"`
	} `json:"builds"`
	Krews []struct {
		Name string `json:"name"`
	} `json:"krews"`
}

func readConfig(t *testing.T) config {
	t.Helper()
	data, err := os.ReadFile("goreleaser.yaml")
	assert.NilError(t, err)
	var c config
	assert.NilError(t, yaml.Unmarshal(data, &c))
	assert.Assert(t, len(c.Krews) > 0 && len(c.Builds) > 0)
	return c
}

// manifest is a krew manifest, as generic YAML so that a comparison sees
// every field.
type manifest map[string]any

func readManifest(t *testing.T, plugin string) manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "krew-manifests", plugin+".yaml"))
	assert.NilError(t, err)
	return parseManifest(t, data)
}

func parseManifest(t *testing.T, data []byte) manifest {
	t.Helper()
	var m manifest
	assert.NilError(t, yaml.Unmarshal(data, &m))
	return m
}

func (m manifest) spec() map[string]any {
	spec, _ := m["spec"].(map[string]any)
	return spec
}

func (m manifest) version() string {
	v, _ := m.spec()["version"].(string)
	return v
}

// platforms returns each platform's os_arch and the platform itself, sorted
// by os_arch: krew does not care about their order.
func (m manifest) platforms() ([]string, []any) {
	list, _ := m.spec()["platforms"].([]any)
	list = slices.Clone(list)
	key := func(p any) string {
		labels, _ := p.(map[string]any)["selector"].(map[string]any)["matchLabels"].(map[string]any)
		return fmt.Sprintf("%v_%v", labels["os"], labels["arch"])
	}
	slices.SortFunc(list, func(a, b any) int { return strings.Compare(key(a), key(b)) })
	var keys []string
	for _, p := range list {
		keys = append(keys, key(p))
	}
	return keys, list
}

// What `make dist` builds is what every committed manifest offers.
func TestManifestsOfferEveryPlatformOfTheRelease(t *testing.T) {
	c := readConfig(t)
	for _, b := range c.Builds {
		assert.DeepEqual(t, b.Targets, c.Builds[0].Targets)
	}
	want := slices.Sorted(slices.Values(c.Builds[0].Targets))
	for _, k := range c.Krews {
		got, _ := readManifest(t, k.Name).platforms()
		assert.DeepEqual(t, got, want)
	}
}

// krew-release-bot renders <plugin>.krew.yaml for a release tag, filling in
// each archive's URL and sha256 (its addURIAndSha). Rendered for the release
// of the committed manifest, with that release's sha256s, it must give the
// same manifest: a description changed in goreleaser.yaml (and so in
// krew-manifests/) but not in the template fails here.
func TestReleaseBotTemplatesSayWhatTheManifestsSay(t *testing.T) {
	for _, k := range readConfig(t).Krews {
		t.Run(k.Name, func(t *testing.T) {
			committed := readManifest(t, k.Name)
			sha256 := map[string]string{}
			_, platforms := committed.platforms()
			for _, p := range platforms {
				p := p.(map[string]any)
				sha256[fmt.Sprint(p["uri"])] = fmt.Sprint(p["sha256"])
			}
			tag := committed.version()

			bot := template.New(k.Name + ".krew.yaml").Funcs(template.FuncMap{
				"addURIAndSha": func(urlTemplate, tag string) (string, error) {
					var url bytes.Buffer
					t, err := template.New("url").Parse(urlTemplate)
					if err != nil {
						return "", err
					}
					if err := t.Execute(&url, struct{ TagName string }{tag}); err != nil {
						return "", err
					}
					sum, ok := sha256[url.String()]
					if !ok {
						return "", fmt.Errorf("no archive %s in krew-manifests/%s.yaml", url.String(), k.Name)
					}
					// The bot's own layout: sha256 under uri in a platform.
					return "uri: " + url.String() + "\n    sha256: " + sum, nil
				},
			})
			bot, err := bot.ParseFiles(k.Name + ".krew.yaml")
			assert.NilError(t, err)
			var rendered bytes.Buffer
			assert.NilError(t, bot.Execute(&rendered, struct{ TagName string }{tag}))

			got := parseManifest(t, rendered.Bytes())
			_, gotPlatforms := got.platforms()
			got.spec()["platforms"] = gotPlatforms
			committed.spec()["platforms"] = platforms
			assert.DeepEqual(t, got, committed)
		})
	}
}
