package values

import (
	"fmt"
	"slices"
	"strings"
)

// SpokeFeatureGates reads fleetConfig.spokeFeatureGates (under spec.values
// in a HelmRelease): the klusterlet feature gates the chart renders into
// every Spoke it makes. found is false when the file does not set them, and
// the chart's own default applies.
func SpokeFeatureGates(src []byte, kind Kind) (gates map[string]any, found bool, err error) {
	return spokesSetting(src, kind, "spokeFeatureGates", "a mapping of feature gate names to true or false")
}

// SpokeAnnotations reads fleetConfig.spokeAnnotations: the klusterlet
// annotations the chart merges into every Spoke it makes (an entry's own
// annotation of the same key wins).
func SpokeAnnotations(src []byte, kind Kind) (map[string]any, error) {
	a, _, err := spokesSetting(src, kind, "spokeAnnotations", "a mapping of annotation keys to values")
	return a, err
}

// spokesSetting reads the mapping key beside the spokes list, the settings
// the chart applies to every entry; found is false when the file does not
// set it. what says what the mapping must be, for the error.
func spokesSetting(src []byte, kind Kind, key, what string) (setting map[string]any, found bool, err error) {
	docs, err := decodeAll(src)
	if err != nil {
		return nil, false, fmt.Errorf("the file is not valid YAML: %w", err)
	}
	path := append(slices.Clone(kind.path()[:len(kind.path())-1]), key)
	for _, doc := range docs {
		if _, ok := decodedList(doc, kind); !ok {
			continue
		}
		n := doc
		for _, k := range path {
			m, ok := n.(map[string]any)
			if !ok {
				return nil, false, nil
			}
			if n, ok = m[k]; !ok {
				return nil, false, nil
			}
		}
		if n == nil {
			return nil, false, nil
		}
		g, ok := n.(map[string]any)
		if !ok {
			return nil, false, fmt.Errorf("%s is not %s", strings.Join(path, "."), what)
		}
		return g, true, nil
	}
	return nil, false, nil
}
