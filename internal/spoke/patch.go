package spoke

import (
	"encoding/json"
	"strings"
)

// absent is the value a JSON patch test compares a missing member with.
var absent = json.RawMessage("null")

// pointerToken escapes one JSON pointer token (RFC 6901).
func pointerToken(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
