package park

import (
	"encoding/json"
	"fmt"
	"strings"
)

// PatchOp is one operation of an RFC 6902 JSON patch.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Patch is a JSON patch. It starts with a test of the Cluster's
// resourceVersion, so any edit since the read (also one that adds a field or
// an annotation the patch adds, which no value test could see) makes the
// whole patch fail instead of being overwritten; and every path it changes
// is preceded by a test of the value the plan was made from, so the patch
// says what it expects.
type Patch []PatchOp

// guarded returns the patch behind a test of the resourceVersion the plan
// was made from; an empty patch stays empty.
func (p Patch) guarded(resourceVersion string) Patch {
	if len(p) == 0 {
		return p
	}
	return append(Patch{{Op: "test", Path: "/metadata/resourceVersion", Value: resourceVersion}}, p...)
}

// JSON is the patch as it is sent.
func (p Patch) JSON() ([]byte, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encoding the patch: %w", err)
	}
	return data, nil
}

func (p *Patch) test(path string, value any) {
	*p = append(*p, PatchOp{Op: "test", Path: path, Value: value})
}
func (p *Patch) add(path string, value any) {
	*p = append(*p, PatchOp{Op: "add", Path: path, Value: value})
}
func (p *Patch) remove(path string) { *p = append(*p, PatchOp{Op: "remove", Path: path}) }

// replace tests the old value and then replaces it.
func (p *Patch) replace(path string, old, value any) {
	p.test(path, old)
	*p = append(*p, PatchOp{Op: "replace", Path: path, Value: value})
}

// pointer escapes one JSON pointer token (RFC 6901).
func pointer(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

func poolPath(kind PoolKind, index int) string {
	return fmt.Sprintf("/spec/topology/workers/%s/%d", kind, index)
}

func annotationPath(key string) string { return "/metadata/annotations/" + pointer(key) }
