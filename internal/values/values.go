// Package values edits the list of spokes in the files a fleet is installed
// from: fleetConfig.spokes in a Helm values file, or
// spec.values.fleetConfig.spokes in a Flux HelmRelease manifest.
//
// An edit changes the bytes of one list entry and nothing else: comments,
// key order, quoting and indentation elsewhere stay as they were. The YAML
// node API (go.yaml.in/yaml/v3) finds where the list and its entries are;
// the edit splices text at those lines, because re-encoding the whole
// document (which is all sigs.k8s.io/yaml can do: it converts through JSON)
// would drop every comment and rewrite the layout. Every edit is checked by
// parsing the result again: anything but the one entry changed means refusal.
package values

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
)

// Kind is the kind of file that holds the spokes list.
type Kind int

// The files the list can live in.
const (
	// HelmValues is a values file: fleetConfig.spokes.
	HelmValues Kind = iota
	// HelmRelease is a Flux HelmRelease manifest: spec.values.fleetConfig.spokes.
	HelmRelease
)

func (k Kind) path() []string {
	if k == HelmRelease {
		return []string{"spec", "values", "fleetConfig", "spokes"}
	}
	return []string{"fleetConfig", "spokes"}
}

// ListPath is the dotted path of the spokes list in a file of this kind.
func (k Kind) ListPath() string { return strings.Join(k.path(), ".") }

// Entry is a spoke entry to add: its name, its kubeconfig secret and, copied
// from an existing entry, the settings all spokes share.
type Entry struct {
	Name       string
	SecretName string
	// CopyFrom names the entry whose shared settings (ociRegistry and the
	// klusterlet's) the new one takes; "" is the first.
	CopyFrom string
	// Cleanup is written in full: all four values, false included.
	Cleanup fleetconfig.CleanupConfig
	// HubName is the entry's hubRef.name when the entry copied has no
	// hubRef (the chart reads hubRef.name of every entry).
	HubName string
	// AddOns are the configNames of the add-ons the entry lists.
	AddOns []string
	// OCIRegistry, when not nil, is the entry's ociRegistry instead of the
	// copied one. An entry never goes without one: the product's chart
	// needs it on every spoke.
	OCIRegistry map[string]any
}

// copiedKeys are the keys of an existing entry a new one takes, as the
// product's add procedure says: the workload registry, the klusterlet's
// settings and the hub it joins. Everything else describes that other
// cluster. Of the hub-as-spoke entry only sharedKeys are copied.
var copiedKeys = []string{"klusterlet", "ociRegistry", "hubRef"}

// perClusterKlusterletKeys are how the klusterlet of the copied entry reaches
// its own cluster; a remote spoke has its own.
var perClusterKlusterletKeys = []string{"managedClusterKubeconfig", "forceInternalEndpointLookupManaged"}

// list is the spokes list found in a document.
type list struct {
	seq *yaml.Node
	// key is the "spokes" key of the list.
	key   *yaml.Node
	lines []string
	// endLine is the 0-based line after the last line of the last entry.
	endLine int
	eol     string
}

// Names lists the spoke names in the file.
func Names(src []byte, kind Kind) ([]string, error) {
	l, err := find(src, kind)
	if err != nil {
		return nil, err
	}
	return l.names(), nil
}

func (l *list) names() []string {
	var out []string
	for _, item := range l.seq.Content {
		out = append(out, entryName(item))
	}
	return out
}

func entryName(item *yaml.Node) string {
	if item.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(item.Content); i += 2 {
		if item.Content[i].Value == "name" && item.Content[i+1].Kind == yaml.ScalarNode {
			return item.Content[i+1].Value
		}
	}
	return ""
}

// Add returns src with entry appended to the spokes list. An entry of that
// name already there is left alone (changed is false).
func Add(src []byte, kind Kind, e Entry) (out []byte, changed bool, err error) {
	l, err := find(src, kind)
	if err != nil {
		return nil, false, err
	}
	if slices.Contains(l.names(), e.Name) {
		return src, false, nil
	}
	// An empty list (the last spoke removed) has no entry to copy: the new
	// one is made from e alone, and needs its ociRegistry given.
	base, hubAsSpoke, err := l.template(e.CopyFrom, kind)
	if err != nil {
		return nil, false, err
	}
	entry, err := newEntry(base, hubAsSpoke, e)
	if err != nil {
		return nil, false, err
	}
	var lines []string
	if len(l.seq.Content) == 0 {
		lines, err = l.intoEmpty(entry)
	} else {
		lines, err = l.append(entry)
	}
	if err != nil {
		return nil, false, err
	}
	out = []byte(strings.Join(lines, ""))
	if err := verify(src, out, kind, e.Name, ""); err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// Remove returns src without the entry named name. A name that is not there
// leaves src as it is (changed is false).
func Remove(src []byte, kind Kind, name string) (out []byte, changed bool, err error) {
	l, err := find(src, kind)
	if err != nil {
		return nil, false, err
	}
	i := slices.Index(l.names(), name)
	if i < 0 {
		return src, false, nil
	}
	start := l.ownStart(l.dashLine(l.seq.Content[i]))
	end := l.endLine
	if i+1 < len(l.seq.Content) {
		end = l.ownStart(l.dashLine(l.seq.Content[i+1]))
	}
	head := slices.Clone(l.lines[:start])
	if len(l.seq.Content) == 1 {
		// Without entries the key would hold null, not a list: the chart
		// and the next edit both want an empty list.
		if head, err = l.emptied(head); err != nil {
			return nil, false, err
		}
	}
	lines := slices.Concat(head, l.lines[end:])
	out = []byte(strings.Join(lines, ""))
	if err := verify(src, out, kind, "", name); err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// emptied marks the list empty ("spokes: []") in head, the lines up to
// where its entries were.
func (l *list) emptied(head []string) ([]string, error) {
	i := l.key.Line - 1
	if i >= len(head) {
		return nil, fmt.Errorf("cannot find the line of the %s key; nothing was written: edit the file by hand", l.key.Value)
	}
	line := head[i]
	at := strings.IndexByte(line[min(l.key.Column-1, len(line)):], ':')
	if at < 0 {
		return nil, fmt.Errorf("cannot find the %s key at line %d; nothing was written: edit the file by hand", l.key.Value, l.key.Line)
	}
	at += min(l.key.Column-1, len(line)) + 1
	rest := line[at:]
	if strings.TrimSpace(rest) == "" {
		// The key ended the file: the list gets a line end.
		rest = l.eol
	}
	head[i] = line[:at] + " []" + rest
	return head, nil
}

// find parses src and locates the spokes list. It refuses what it cannot
// edit in place.
func find(src []byte, kind Kind) (*list, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var roots []*yaml.Node
	docs := 0
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("the file is not valid YAML: %w", err)
		}
		docs++
		if len(doc.Content) == 0 {
			continue
		}
		if root := doc.Content[0]; kind == HelmValues || scalarAt(root, "kind") == "HelmRelease" {
			roots = append(roots, root)
		}
	}
	switch {
	case kind == HelmValues && docs > 1:
		return nil, errors.New("a values file is one YAML document; this one has several")
	case len(roots) > 1:
		return nil, errors.New("the file holds more than one HelmRelease")
	case len(roots) == 0 && kind == HelmRelease:
		return nil, errors.New("the file holds no HelmRelease")
	case len(roots) == 0:
		return nil, fmt.Errorf("the file has no %s list", kind.ListPath())
	}
	key, found, err := lookup(roots[0], kind.path())
	if err != nil {
		return nil, err
	}
	if found.Style&yaml.FlowStyle != 0 && len(found.Content) > 0 {
		return nil, fmt.Errorf("%s is written in flow style ([...]): write it as a block list (one \"- name: ...\" entry per line) to edit it", kind.ListPath())
	}
	seen := map[string]bool{}
	for _, item := range found.Content {
		name := entryName(item)
		if seen[name] {
			return nil, fmt.Errorf("%s has two entries named %q; fix the file by hand", kind.ListPath(), name)
		}
		seen[name] = true
		if item.Kind != yaml.MappingNode || item.Style&yaml.FlowStyle != 0 || entryName(item) == "" {
			return nil, fmt.Errorf("%s has an entry at line %d that is not a block mapping with a name", kind.ListPath(), item.Line)
		}
		if item.Anchor != "" || item.Alias != nil {
			return nil, fmt.Errorf("%s has an anchored or aliased entry at line %d; edit it by hand", kind.ListPath(), item.Line)
		}
	}
	l := &list{seq: found, key: key, lines: splitLines(src), eol: dominantEOL(src)}
	if len(found.Content) > 0 {
		l.endLine = l.end()
	}
	return l, nil
}

// dominantEOL is the line end most lines of src have, so that one CRLF line
// in an LF file does not make the new lines CRLF (nor the other way round).
func dominantEOL(src []byte) string {
	crlf := bytes.Count(src, []byte("\r\n"))
	if crlf > bytes.Count(src, []byte("\n"))-crlf {
		return "\r\n"
	}
	return "\n"
}

func scalarAt(m *yaml.Node, key string) string {
	if m.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1].Value
		}
	}
	return ""
}

// lookup finds the list at path, and its key.
func lookup(n *yaml.Node, path []string) (key, list *yaml.Node, err error) {
	for i, k := range path {
		if n.Kind == yaml.AliasNode || n.Kind != yaml.MappingNode {
			return nil, nil, fmt.Errorf("%s is not a mapping", strings.Join(path[:i], "."))
		}
		var next *yaml.Node
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == k {
				if next != nil {
					return nil, nil, fmt.Errorf("%s is set twice", strings.Join(path[:i+1], "."))
				}
				key, next = n.Content[j], n.Content[j+1]
			}
		}
		if next == nil {
			return nil, nil, fmt.Errorf("the file has no %s", strings.Join(path[:i+1], "."))
		}
		n = next
	}
	if n.Kind != yaml.SequenceNode {
		return nil, nil, fmt.Errorf("%s is not a list", strings.Join(path, "."))
	}
	return key, n, nil
}

// splitLines splits src into lines that keep their line ends, so joining
// them gives src back byte for byte.
func splitLines(src []byte) []string {
	var lines []string
	s := string(src)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// isFiller is a line that belongs to no entry by itself: blank, or only a comment.
func isFiller(line string) bool {
	t := strings.TrimSpace(line)
	return t == "" || strings.HasPrefix(t, "#")
}

// dashLine is the 0-based line of the "-" that starts an entry.
func (l *list) dashLine(item *yaml.Node) int {
	i := item.Line - 1
	for i > 0 && !strings.HasPrefix(strings.TrimLeft(l.lines[i], " "), "-") {
		i--
	}
	return i
}

// ownStart moves an entry's start up over the comment lines directly above
// it: they describe that entry.
func (l *list) ownStart(dash int) int {
	for dash > 0 && isFiller(l.lines[dash-1]) && strings.TrimSpace(l.lines[dash-1]) != "" {
		dash--
	}
	return dash
}

// end is the 0-based line after the list's last entry: the next line that is
// indented less than the entries' content (or the end of the document),
// without the comments and blank lines before it.
func (l *list) end() int {
	last := l.seq.Content[len(l.seq.Content)-1]
	indent := l.seq.Column - 1
	i := last.Line
	for ; i < len(l.lines); i++ {
		line := l.lines[i]
		if isFiller(line) {
			continue
		}
		ind := len(line) - len(strings.TrimLeft(line, " "))
		t := strings.TrimSpace(line)
		if ind < indent || (ind == indent && !strings.HasPrefix(t, "-")) || t == "---" || t == "..." {
			break
		}
		if ind == indent && strings.HasPrefix(t, "-") {
			break
		}
	}
	for i > 0 && isFiller(l.lines[i-1]) {
		i--
	}
	return i
}

// template is the entry a new one copies: the one named copyFrom, else the
// first that is not hub-as-spoke, else hub-as-spoke; nil when there is none.
// hubAsSpoke says the template is the hub's own cluster, reached in-cluster:
// then only what every spoke of the fleet shares is copied (see sharedKeys).
func (l *list) template(copyFrom string, kind Kind) (base *yaml.Node, hubAsSpoke bool, err error) {
	var fallback *yaml.Node
	for _, item := range l.seq.Content {
		name := entryName(item)
		switch {
		case copyFrom != "" && name == copyFrom:
			return item, isHubAsSpoke(item), nil
		case copyFrom != "":
		case !isHubAsSpoke(item):
			return item, false, nil
		case fallback == nil:
			fallback = item
		}
	}
	if copyFrom != "" {
		return nil, false, fmt.Errorf("--copy-from %q: no such entry in %s (entries: %s)", copyFrom, kind.ListPath(), strings.Join(l.names(), ", "))
	}
	return fallback, fallback != nil, nil
}

// sharedKeys are what a new entry takes from hub-as-spoke: the fleet's
// workload registry (the product says to copy it from the existing entry)
// and the hub every spoke joins. Its klusterlet settings are the hub's own
// and never reach a remote spoke.
var sharedKeys = []string{"ociRegistry", "hubRef"}

// isHubAsSpoke tells an entry FleetConfig treats as the hub's own cluster:
// named hub-as-spoke, or reached with in-cluster credentials.
func isHubAsSpoke(item *yaml.Node) bool {
	if entryName(item) == fleetconfig.HubAsSpokeName {
		return true
	}
	kc := valueAt(item, "kubeconfig")
	return kc != nil && scalarAt(kc, "inCluster") == "true"
}

func valueAt(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// ErrNoOCIRegistry is why an entry cannot be written without ociRegistry.
var ErrNoOCIRegistry = errors.New("the new entry would have no ociRegistry, which every spoke entry needs (the spoke's workload registry)")

// newEntry builds the new list entry from a copy of base (nil: none; of
// hub-as-spoke only its shared keys).
func newEntry(base *yaml.Node, hubAsSpoke bool, e Entry) (*yaml.Node, error) {
	keys := copiedKeys
	if hubAsSpoke {
		keys = sharedKeys
	}
	if base == nil {
		base = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	set := func(key string, v *yaml.Node) {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	boolean := func(b bool) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(b)} }
	budget := maxCopiedNodes
	set("name", str(e.Name))
	kc := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	ref := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{str("name"), str(e.SecretName), str("kubeconfigKey"), str("kubeconfig")}}
	kc.Content = []*yaml.Node{str("context"), str(""), str("inCluster"), boolean(false), str("secretReference"), ref}
	set("kubeconfig", kc)
	copied := map[string]*yaml.Node{}
	for i := 0; i+1 < len(base.Content); i += 2 {
		key := base.Content[i].Value
		if !slices.Contains(keys, key) {
			continue
		}
		v, err := plain(base.Content[i+1], &budget)
		if err != nil {
			return nil, err
		}
		copied[key] = v
	}
	k := copied["klusterlet"]
	if k == nil || k.Kind != yaml.MappingNode {
		k = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		setKey(k, "mode", str("Default"))
	}
	dropKeys(k, perClusterKlusterletKeys)
	// A remote cluster is reached through its external endpoint.
	setKey(k, "forceInternalEndpointLookup", boolean(false))
	set("klusterlet", k)
	c := e.Cleanup
	set("cleanupConfig", &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		str("purgeKlusterletOperator"), boolean(c.PurgeKlusterletOperator),
		str("purgeKubeconfigSecret"), boolean(c.PurgeKubeconfigSecret),
		str("purgeAgentNamespace"), boolean(c.PurgeAgentNamespace),
		str("forceClusterDrain"), boolean(c.ForceClusterDrain),
	}})
	if e.OCIRegistry != nil {
		v := &yaml.Node{}
		if err := v.Encode(e.OCIRegistry); err != nil {
			return nil, fmt.Errorf("encoding ociRegistry: %w", err)
		}
		copied["ociRegistry"] = v
	}
	reg := copied["ociRegistry"]
	if reg == nil || reg.Kind != yaml.MappingNode || len(reg.Content) == 0 {
		return nil, ErrNoOCIRegistry
	}
	set("ociRegistry", reg)
	hub := copied["hubRef"]
	if hub == nil || hub.Kind != yaml.MappingNode {
		hub = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{str("name"), str(e.HubName), str("namespace"), str("")}}
	}
	set("hubRef", hub)
	if len(e.AddOns) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, a := range e.AddOns {
			seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{str("configName"), str(a)}})
		}
		set("addOns", seq)
	}
	return m, nil
}

func dropKeys(m *yaml.Node, keys []string) {
	var kept []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if !slices.Contains(keys, m.Content[i].Value) {
			kept = append(kept, m.Content[i], m.Content[i+1])
		}
	}
	m.Content = kept
}

func setKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// maxCopiedNodes bounds the copy of an entry: aliases can make a small file
// expand into a huge (or, through a cycle, endless) tree.
const maxCopiedNodes = 10000

// plain is a deep copy of n without comments, anchors or aliases (an alias
// becomes a copy of what it points at), so it can be written anywhere.
func plain(n *yaml.Node, budget *int) (*yaml.Node, error) {
	*budget--
	if *budget < 0 {
		return nil, errors.New("the entry to copy expands (through aliases) beyond what an entry can be; use --copy-from with a plain entry")
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return plain(n.Alias, budget)
	}
	c := *n
	c.Anchor, c.HeadComment, c.LineComment, c.FootComment = "", "", "", ""
	c.Line, c.Column = 0, 0
	c.Content = nil
	for _, ch := range n.Content {
		p, err := plain(ch, budget)
		if err != nil {
			return nil, err
		}
		c.Content = append(c.Content, p)
	}
	return &c, nil
}

// render writes an entry as lines of the list: "- " at the list's column,
// the rest indented under it.
// append is the file's lines with entry after the list's last one.
func (l *list) append(entry *yaml.Node) ([]string, error) {
	text, err := l.render(entry, l.seq.Column)
	if err != nil {
		return nil, err
	}
	head := slices.Clone(l.lines[:l.endLine])
	if n := len(head); n > 0 && !strings.HasSuffix(head[n-1], "\n") {
		// The last entry ends the file without a line end.
		head[n-1] += l.eol
	}
	return slices.Concat(head, text, l.lines[l.endLine:]), nil
}

// intoEmpty is the file's lines with the empty list ("spokes: []", as
// Remove leaves it) turned into a block list of entry, indented under its
// key; a comment after the brackets stays on the key's line.
func (l *list) intoEmpty(entry *yaml.Node) ([]string, error) {
	i := l.key.Line - 1
	if i >= len(l.lines) || l.seq.Style&yaml.FlowStyle == 0 {
		return nil, fmt.Errorf("cannot find the empty list of the %s key; nothing was written: edit the file by hand", l.key.Value)
	}
	line := l.lines[i]
	from := min(l.key.Column-1, len(line))
	at := strings.Index(line[from:], "[]")
	if at < 0 {
		return nil, fmt.Errorf("cannot find %s: [] at line %d; nothing was written: write the list as a block by hand", l.key.Value, l.key.Line)
	}
	at += from
	rest := line[at+2:]
	keyLine := strings.TrimRight(line[:at], " \t") + rest
	if strings.TrimSpace(rest) == "" {
		keyLine = strings.TrimRight(line[:at], " \t") + l.eol
	}
	text, err := l.render(entry, l.key.Column+2)
	if err != nil {
		return nil, err
	}
	head := slices.Clone(l.lines[:i])
	return slices.Concat(head, []string{keyLine}, text, l.lines[i+1:]), nil
}

func (l *list) render(entry *yaml.Node, column int) ([]string, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(entry); err != nil {
		return nil, fmt.Errorf("rendering the new entry: %w", err)
	}
	_ = enc.Close()
	pad := strings.Repeat(" ", column-1)
	var out []string
	for i, line := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		prefix := pad + "  "
		if i == 0 {
			prefix = pad + "- "
		}
		if line == "" {
			prefix = ""
		}
		out = append(out, prefix+line+l.eol)
	}
	return out, nil
}

// decodeEdit parses the file before and after an edit.
func decodeEdit(before, after []byte, kind Kind) (b, a []any, err error) {
	if b, err = decodeAll(before); err != nil {
		return nil, nil, err
	}
	if a, err = decodeAll(after); err != nil {
		return nil, nil, fmt.Errorf("the edit would make the file invalid YAML (%w); nothing was written: edit %s by hand", err, kind.ListPath())
	}
	return b, a, nil
}

// verify parses before and after an edit and requires that they differ only
// by the added or removed entry.
func verify(before, after []byte, kind Kind, added, removed string) error {
	b, a, err := decodeEdit(before, after, kind)
	if err != nil {
		return err
	}
	for i := range b {
		if err := dropEntry(b[i], kind, removed); err != nil {
			return err
		}
	}
	for i := range a {
		if err := dropEntry(a[i], kind, added); err != nil {
			return err
		}
	}
	if !reflect.DeepEqual(a, b) {
		return fmt.Errorf("the edit would change more of the file than the one entry in %s; nothing was written: edit the file by hand", kind.ListPath())
	}
	if added != "" {
		l, err := find(after, kind)
		if err != nil || !slices.Contains(l.names(), added) {
			return fmt.Errorf("the new entry did not land in %s; nothing was written: edit the file by hand", kind.ListPath())
		}
	}
	return nil
}

func decodeAll(src []byte) ([]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var docs []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, v)
	}
}

// decodedList is the spokes list of a decoded document; false when the
// document has none.
func decodedList(doc any, kind Kind) ([]any, bool) {
	n := doc
	for _, key := range kind.path() {
		m, ok := n.(map[string]any)
		if !ok {
			return nil, false
		}
		n = m[key]
	}
	items, ok := n.([]any)
	return items, ok
}

// dropEntry removes the entry named name from the spokes list of a decoded
// document, when the document has that list.
func dropEntry(doc any, kind Kind, name string) error {
	if name == "" {
		return nil
	}
	items, ok := decodedList(doc, kind)
	if !ok {
		return nil
	}
	keep := items[:0:0]
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && m["name"] == name {
			continue
		}
		keep = append(keep, it)
	}
	m := doc
	path := kind.path()
	for _, key := range path[:len(path)-1] {
		m = m.(map[string]any)[key]
	}
	m.(map[string]any)[path[len(path)-1]] = keep
	return nil
}

// EntryValues decodes the entry named name, as the chart sees it (aliases
// and merge keys resolved); nil when there is none.
func EntryValues(src []byte, kind Kind, name string) (map[string]any, error) {
	l, err := find(src, kind)
	if err != nil {
		return nil, err
	}
	i := slices.Index(l.names(), name)
	if i < 0 {
		return nil, nil
	}
	var m map[string]any
	if err := l.seq.Content[i].Decode(&m); err != nil {
		return nil, fmt.Errorf("reading entry %s of %s: %w", name, kind.ListPath(), err)
	}
	return m, nil
}
