package values

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
)

// ErrNoEntry is an edit of an entry the spokes list does not have.
var ErrNoEntry = errors.New("no entry")

// SetSecret returns src with the entry named name taking its kubeconfig from
// secret: kubeconfig.secretReference.name becomes secret, and a
// kubeconfigKey naming another key becomes the key every secret this tool
// writes uses. Only the text of those values changes; their quoting stays.
// changed is false when the entry already says so. An entry that is not
// there is ErrNoEntry.
func SetSecret(src []byte, kind Kind, name, secret string) (out []byte, changed bool, err error) {
	l, err := find(src, kind)
	if err != nil {
		return nil, false, err
	}
	i := slices.Index(l.names(), name)
	if i < 0 {
		return nil, false, fmt.Errorf("%w for %s in %s (entries: %s)", ErrNoEntry, name, kind.ListPath(), strings.Join(l.names(), ", "))
	}
	ref := mappingAt(l.seq.Content[i], "kubeconfig", "secretReference")
	var nameNode, keyNode *yaml.Node
	if ref != nil {
		nameNode, keyNode = valueOf(ref, "name"), valueOf(ref, "kubeconfigKey")
	}
	if nameNode == nil || nameNode.Kind != yaml.ScalarNode || nameNode.Tag == "!!null" {
		return nil, false, fmt.Errorf("entry %s of %s has no kubeconfig.secretReference.name to change; edit it by hand", name, kind.ListPath())
	}
	type edit struct {
		node  *yaml.Node
		value string
	}
	var edits []edit
	if nameNode.Value != secret {
		edits = append(edits, edit{nameNode, secret})
	}
	if keyNode != nil && keyNode.Value != fleetconfig.DefaultKubeconfigKey {
		if keyNode.Kind != yaml.ScalarNode {
			return nil, false, fmt.Errorf("entry %s of %s has a kubeconfig.secretReference.kubeconfigKey that is not a plain value; edit it by hand", name, kind.ListPath())
		}
		edits = append(edits, edit{keyNode, fleetconfig.DefaultKubeconfigKey})
	}
	if len(edits) == 0 {
		return src, false, nil
	}
	// From the end, so that an edit does not move the next one (both may
	// sit on one line: secretReference: {name: a, kubeconfigKey: b}).
	slices.SortFunc(edits, func(a, b edit) int {
		if a.node.Line != b.node.Line {
			return b.node.Line - a.node.Line
		}
		return b.node.Column - a.node.Column
	})
	lines := slices.Clone(l.lines)
	for _, e := range edits {
		if err := replaceScalar(lines, e.node, e.value); err != nil {
			return nil, false, fmt.Errorf("entry %s of %s: %w; nothing was written: edit it by hand", name, kind.ListPath(), err)
		}
	}
	out = []byte(strings.Join(lines, ""))
	if err := verifySecret(src, out, kind, name, secret); err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// mappingAt follows keys down from m; nil when one is missing or not a
// mapping.
func mappingAt(m *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		if m = valueOf(m, k); m == nil || m.Kind != yaml.MappingNode {
			return nil
		}
	}
	return m
}

func valueOf(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// replaceScalar writes value over the text of the one-line scalar n,
// quoted as n was.
func replaceScalar(lines []string, n *yaml.Node, value string) error {
	if n.Line < 1 || n.Line > len(lines) {
		return fmt.Errorf("cannot find the line of %q", n.Value)
	}
	if n.Anchor != "" {
		// Other places take the value through the anchor: they would change too.
		return fmt.Errorf("the value %q at line %d is anchored (&%s)", n.Value, n.Line, n.Anchor)
	}
	line := lines[n.Line-1]
	// The column counts characters, not bytes.
	start := 0
	for c := 1; c < n.Column && start < len(line); c++ {
		_, size := utf8.DecodeRuneInString(line[start:])
		start += size
	}
	rest := line[start:]
	var end int
	var text string
	switch n.Style {
	case yaml.DoubleQuotedStyle:
		end = closingQuote(rest, '"')
		text = `"` + value + `"`
	case yaml.SingleQuotedStyle:
		end = closingQuote(rest, '\'')
		text = "'" + value + "'"
	case 0:
		if strings.HasPrefix(rest, n.Value) {
			end = len(n.Value)
		}
		text = value
		if !plainString(value) {
			text = `"` + value + `"`
		}
	}
	if end == 0 {
		return fmt.Errorf("the value %q is not written on one line at line %d", n.Value, n.Line)
	}
	lines[n.Line-1] = line[:start] + text + rest[end:]
	return nil
}

// closingQuote is the length of the quoted scalar rest starts with, up to
// and including its closing quote; 0 when it does not end on this line.
func closingQuote(rest string, q byte) int {
	if rest == "" || rest[0] != q {
		return 0
	}
	for i := 1; i < len(rest); i++ {
		switch {
		case q == '"' && rest[i] == '\\':
			i++
		case rest[i] == q && q == '\'' && i+1 < len(rest) && rest[i+1] == '\'':
			i++
		case rest[i] == q:
			return i + 1
		}
	}
	return 0
}

// plainString tells whether s, written without quotes, reads back as the
// string s (and not as a number, a boolean or null).
func plainString(s string) bool {
	var v any
	return yaml.Unmarshal([]byte(s), &v) == nil && v == s
}

// verifySecret parses before and after the edit and requires that they
// differ only in the entry's secret reference, which now names secret.
func verifySecret(before, after []byte, kind Kind, name, secret string) error {
	b, a, err := decodeEdit(before, after, kind)
	if err != nil {
		return err
	}
	var got string
	for i := range a {
		if ref := secretRef(a[i], kind, name); ref != nil {
			got, _ = ref["name"].(string)
			delete(ref, "name")
			delete(ref, "kubeconfigKey")
		}
	}
	for i := range b {
		if ref := secretRef(b[i], kind, name); ref != nil {
			delete(ref, "name")
			delete(ref, "kubeconfigKey")
		}
	}
	if got != secret || !reflect.DeepEqual(a, b) {
		return fmt.Errorf("the edit would change more of the file than the secret reference of entry %s in %s; nothing was written: edit the file by hand", name, kind.ListPath())
	}
	return nil
}

// secretRef is kubeconfig.secretReference of the entry named name in a
// decoded document; nil when there is none.
func secretRef(doc any, kind Kind, name string) map[string]any {
	items, _ := decodedList(doc, kind)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && m["name"] == name {
			kc, _ := m["kubeconfig"].(map[string]any)
			ref, _ := kc["secretReference"].(map[string]any)
			return ref
		}
	}
	return nil
}
