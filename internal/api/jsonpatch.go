package api

// PatchOp is one operation of an RFC 6902 JSON patch, as the plugins send
// them (guarded by a test or a replace of the resourceVersion they read).
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}
