package api

import (
	"encoding/json"
	"strings"
)

// PatchOp is one operation of an RFC 6902 JSON patch, as the plugins send
// them (guarded by a test or a replace of the resourceVersion they read).
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Absent is the value a test operation compares a missing member with: the
// API server's JSON patch reads a missing member as null, so a test of it
// fails once someone else has added it.
var Absent = json.RawMessage("null")

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// PointerToken escapes one JSON pointer token (RFC 6901): annotation and
// label keys carry slashes.
func PointerToken(token string) string { return pointerEscaper.Replace(token) }

// AnnotationPath is the JSON pointer to one annotation of an object.
func AnnotationPath(key string) string { return "/metadata/annotations/" + PointerToken(key) }
