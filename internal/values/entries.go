package values

import (
	"bytes"
	"encoding/json"
	"errors"
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

// ReleaseObject is the HelmRelease of src, decoded as JSON would decode it
// (what a server-side apply sends), for add --helmrelease --apply.
func ReleaseObject(src []byte) (map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			return nil, errors.New("the file holds no HelmRelease")
		}
		if doc["kind"] != "HelmRelease" {
			continue
		}
		// Through JSON: numbers and maps as the API server's answer has them.
		data, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("reading the HelmRelease: %w", err)
		}
		var out map[string]any
		if err := json.Unmarshal(data, &out); err != nil {
			return nil, fmt.Errorf("reading the HelmRelease: %w", err)
		}
		return out, nil
	}
}
