package park

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spokekit/spokekit/internal/api"
)

// Patch is a JSON patch. It starts with a test of the Cluster's generation,
// so any change of its spec since the read (also one that adds a field the
// patch adds, which no value test could see) makes the whole patch fail
// instead of being overwritten; every path it changes is preceded by a test
// of the value the plan was made from, and every annotation it adds by a test
// that it is still absent. Not the resourceVersion: Cluster API updates a
// busy Cluster's status many times a minute, and a patch guarded by it would
// lose that race again and again.
type Patch []api.PatchOp

// guarded returns the patch behind a test of the generation the plan was
// made from; an empty patch stays empty.
func (p Patch) guarded(generation int64) Patch {
	if len(p) == 0 {
		return p
	}
	return append(Patch{{Op: "test", Path: "/metadata/generation", Value: generation}}, p...)
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
	*p = append(*p, api.PatchOp{Op: "test", Path: path, Value: value})
}

func (p *Patch) add(path string, value any) {
	*p = append(*p, api.PatchOp{Op: "add", Path: path, Value: value})
}
func (p *Patch) remove(path string) { *p = append(*p, api.PatchOp{Op: "remove", Path: path}) }

// replace tests the old value and then replaces it.
func (p *Patch) replace(path string, old, value any) {
	p.test(path, old)
	*p = append(*p, api.PatchOp{Op: "replace", Path: path, Value: value})
}

func poolPath(kind PoolKind, index int) string {
	return fmt.Sprintf("/spec/topology/workers/%s/%d", kind, index)
}

// writePatch prints the patch a park or a resume would send (--dry-run).
func writePatch(w io.Writer, p Patch) {
	data, _ := p.JSON()
	fmt.Fprintf(w, "JSON patch (one request to the Cluster):\n%s\n", data)
}
