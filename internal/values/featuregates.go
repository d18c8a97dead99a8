package values

import (
	"fmt"
	"strings"
)

// SpokeFeatureGates reads fleetConfig.spokeFeatureGates (under spec.values
// in a HelmRelease): the klusterlet feature gates the chart renders into
// every Spoke it makes. found is false when the file does not set them, and
// the chart's own default applies.
func SpokeFeatureGates(src []byte, kind Kind) (gates map[string]any, found bool, err error) {
	docs, err := decodeAll(src)
	if err != nil {
		return nil, false, fmt.Errorf("the file is not valid YAML: %w", err)
	}
	path := append(kind.path()[:len(kind.path())-1:len(kind.path())-1], "spokeFeatureGates")
	for _, doc := range docs {
		if _, ok := decodedList(doc, kind); !ok {
			continue
		}
		n := doc
		for _, key := range path {
			m, ok := n.(map[string]any)
			if !ok {
				return nil, false, nil
			}
			if n, ok = m[key]; !ok {
				return nil, false, nil
			}
		}
		if n == nil {
			return nil, false, nil
		}
		g, ok := n.(map[string]any)
		if !ok {
			return nil, false, fmt.Errorf("%s is not a mapping of feature gate names to true or false", strings.Join(path, "."))
		}
		return g, true, nil
	}
	return nil, false, nil
}
