package release

import (
	"bytes"
	"embed"
	"fmt"
	"text/template"

	"sigs.k8s.io/yaml"
)

// The user-facing text of each plugin's manifest lives in its own template,
// krew/<plugin>.yaml; krew/shared.tmpl holds what all three have in common.
//
//go:embed krew
var krewTemplates embed.FS

var templates = template.Must(template.ParseFS(krewTemplates, "krew/*"))

// KrewManifest is what varies between releases in a plugin's krew manifest.
type KrewManifest struct {
	Plugin    string
	Version   string
	Platforms []KrewPlatform
}

// KrewPlatform is one downloadable archive in a krew manifest.
type KrewPlatform struct {
	Archive
	URI    string
	SHA256 string
}

// Render fills the plugin's template.
func (m KrewManifest) Render() ([]byte, error) {
	name := m.Plugin + ".yaml"
	if templates.Lookup(name) == nil {
		return nil, fmt.Errorf("no krew manifest template for plugin %q (add internal/release/krew/%s)", m.Plugin, name)
	}
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, m); err != nil {
		return nil, fmt.Errorf("rendering the krew manifest of %s: %w", m.Plugin, err)
	}
	return buf.Bytes(), nil
}

// ParseKrewManifest reads back what Render was given, so a committed manifest
// can be checked against its template.
func ParseKrewManifest(data []byte) (KrewManifest, error) {
	var doc struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Version   string `json:"version"`
			Platforms []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
				URI    string `json:"uri"`
				SHA256 string `json:"sha256"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return KrewManifest{}, fmt.Errorf("parsing the krew manifest: %w", err)
	}
	m := KrewManifest{Plugin: doc.Metadata.Name, Version: doc.Spec.Version}
	for _, p := range doc.Spec.Platforms {
		platform := Platform{OS: p.Selector.MatchLabels["os"], Arch: p.Selector.MatchLabels["arch"]}
		m.Platforms = append(m.Platforms, KrewPlatform{
			Archive: Archive{Plugin: m.Plugin, Version: m.Version, Platform: platform},
			URI:     p.URI,
			SHA256:  p.SHA256,
		})
	}
	return m, nil
}
