package values

import (
	"bytes"
	"fmt"

	yaml "go.yaml.in/yaml/v3"
)

// Entries decodes every entry of the spokes list, in file order, as the
// chart sees them (aliases and merge keys resolved). It only reads.
func Entries(src []byte, kind Kind) ([]map[string]any, error) {
	l, err := find(src, kind)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(l.seq.Content))
	for _, item := range l.seq.Content {
		var m map[string]any
		if err := item.Decode(&m); err != nil {
			return nil, fmt.Errorf("reading entry %s of %s: %w", entryName(item), kind.ListPath(), err)
		}
		out = append(out, m)
	}
	return out, nil
}

// ReleaseName is the metadata name and namespace of the HelmRelease in src
// ("" when it has none), for the Flux command that reconciles it.
func ReleaseName(src []byte) (name, namespace string) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		var doc struct {
			Kind     string `yaml:"kind"`
			Metadata struct {
				Name      string `yaml:"name"`
				Namespace string `yaml:"namespace"`
			} `yaml:"metadata"`
		}
		if err := dec.Decode(&doc); err != nil {
			return "", ""
		}
		if doc.Kind == "HelmRelease" {
			return doc.Metadata.Name, doc.Metadata.Namespace
		}
	}
}
