package spoke

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/values"
)

// Drift kinds of values-diff.
const (
	// DriftNotRegistered: an entry with no Spoke; helm upgrade registers it.
	DriftNotRegistered = "NotRegistered"
	// DriftNotInValues: a Spoke with no entry.
	DriftNotInValues = "NotInValues"
	// DriftFields: an entry and its Spoke disagree on fields.
	DriftFields = "FieldsDiffer"
	// DriftDeleting: a Spoke being deleted whose entry is still there: the
	// next upgrade registers the cluster again.
	DriftDeleting = "DeletedButInValues"
	// DriftNoOCIRegistry: an entry without the ociRegistry every entry needs.
	DriftNoOCIRegistry = "MissingOCIRegistry"
)

// LiveSpoke is a Spoke as values-diff reads it: its metadata and its spec
// as the server holds it, so that every field the values set can be
// compared, known to the typed model or not.
type LiveSpoke struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     map[string]any    `json:"spec"`
}

// ValuesDiffInput is what values-diff read: the entries of the file and
// the Spokes of the release namespace.
type ValuesDiffInput struct {
	Path      string
	Kind      values.Kind
	Namespace string
	Entries   []map[string]any
	Spokes    []LiveSpoke
}

// ValuesDiff is what `spoke values-diff` prints.
type ValuesDiff struct {
	api.ReportMeta `json:",inline"`
	File           string      `json:"file"`
	Items          []DriftItem `json:"items"`
	// ComputePool are the Spokes Compute Pools manage: never in the values.
	ComputePool []string `json:"computePool,omitempty"`
	// Next is what brings the Spokes in step with the file.
	Next string `json:"next,omitempty"`
}

// DriftItem is one difference for one spoke.
type DriftItem struct {
	api.ReportMeta `json:",inline"`
	Drift          string      `json:"drift"`
	Fields         []FieldDiff `json:"fields,omitempty"`
	// HelmRelease is the Helm release that owns the Spoke, if any.
	HelmRelease string `json:"helmRelease,omitempty"`
	Message     string `json:"message"`
}

// FieldDiff is one field (a path under spec) the entry and the Spoke
// disagree on; a value left out is unset.
type FieldDiff struct {
	Path   string `json:"path"`
	Values any    `json:"values,omitempty"`
	Live   any    `json:"live,omitempty"`
	// Immutable: the FleetConfig webhook refuses a change of it, so the
	// upgrade that renders the entry fails until the spoke is removed and
	// added again.
	Immutable bool `json:"immutable,omitempty"`
}

// DiffValues compares the entries with the live Spokes: pure, golden-tested.
func DiffValues(in ValuesDiffInput) ValuesDiff {
	r := ValuesDiff{ReportMeta: api.NewNamespacedReportMeta("ValuesDiff", in.Namespace, in.Path), File: in.Path, Items: []DriftItem{}}
	live := map[string]*LiveSpoke{}
	for i := range in.Spokes {
		live[in.Spokes[i].Metadata.Name] = &in.Spokes[i]
	}
	inValues := map[string]bool{}
	item := func(name, drift, msg string) DriftItem {
		return DriftItem{ReportMeta: api.NewNamespacedReportMeta("SpokeDrift", in.Namespace, name), Drift: drift, Message: msg}
	}
	for _, e := range in.Entries {
		name, _ := e["name"].(string)
		inValues[name] = true
		if v, ok := e["ociRegistry"]; !ok || isZero(v) {
			r.Items = append(r.Items, item(name, DriftNoOCIRegistry, "the entry has no ociRegistry, which every spoke entry needs: copy it from another entry (kubectl spoke add copies it)"))
		}
		s := live[name]
		switch {
		case s == nil:
			r.Items = append(r.Items, item(name, DriftNotRegistered, "no Spoke: the next helm upgrade registers it (its kubeconfig secret must exist first)"))
		case s.Metadata.DeletionTimestamp != nil:
			it := item(name, DriftDeleting, "the Spoke is being deleted, but the entry is still in the values: the next helm upgrade registers the cluster again; remove the entry (kubectl spoke remove "+name+" --values FILE)")
			it.HelmRelease = HelmRelease(&s.Metadata)
			r.Items = append(r.Items, it)
		default:
			if fields := compareEntry(e, s.Spec, in.Namespace); len(fields) > 0 {
				it := item(name, DriftFields, fieldsMessage(fields))
				it.Fields, it.HelmRelease = fields, HelmRelease(&s.Metadata)
				r.Items = append(r.Items, it)
			}
		}
	}
	for i := range in.Spokes {
		s := &in.Spokes[i]
		switch {
		case inValues[s.Metadata.Name]:
		case fleetconfig.ComputePoolOf(&s.Metadata) != "":
			r.ComputePool = append(r.ComputePool, s.Metadata.Name)
		default:
			it := item(s.Metadata.Name, DriftNotInValues, notInValuesMessage(s))
			it.HelmRelease = HelmRelease(&s.Metadata)
			r.Items = append(r.Items, it)
		}
	}
	slices.SortStableFunc(r.Items, func(a, b DriftItem) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	slices.Sort(r.ComputePool)
	return r
}

// notInValuesMessage says what the next upgrade does to a Spoke with no
// entry: nothing. The product applies the values' Spokes with a job after
// every install and upgrade, so Helm neither adopts nor deletes a Spoke,
// whatever release marks it carries.
func notInValuesMessage(s *LiveSpoke) string {
	release := HelmRelease(&s.Metadata)
	switch {
	case s.Metadata.DeletionTimestamp != nil:
		return "being deleted, and not in the values: nothing to do"
	case release != "":
		return fmt.Sprintf("marked as Helm release %q's, but no upgrade deletes a Spoke (the release's job only applies the Spokes of its values): it stays registered, no longer in the values; add its entry back, or remove it with kubectl spoke remove %s", release, s.Metadata.Name)
	}
	return "made outside Helm (by hand, or kubectl spoke add --apply on a hub Helm did not install): helm upgrade leaves it alone; add its entry (kubectl spoke add " + s.Metadata.Name + " --values FILE) so that the values record the whole fleet"
}

func fieldsMessage(fields []FieldDiff) string {
	var paths, immutable []string
	for _, f := range fields {
		paths = append(paths, f.Path)
		if f.Immutable {
			immutable = append(immutable, f.Path)
		}
	}
	msg := "differ: " + strings.Join(paths, ", ") + "; the next helm upgrade sets the values' side"
	if len(immutable) > 0 {
		msg += ", but the FleetConfig webhook refuses a change of " + strings.Join(immutable, ", ") + ": the upgrade fails until the spoke is removed and added again (or the entry matches the Spoke)"
	}
	return msg
}

// entrySpecKeys are the keys of an entry the chart puts into the Spoke's
// spec: what RenderSpoke renders, and hubRef (its namespace forced to the
// release namespace).
var entrySpecKeys = append(slices.Clone(renderedKeys), "hubRef")

// compareEntry lists the fields the entry sets that the live spec does not
// hold. Only what the entry sets counts: the API server's defaults for what
// it leaves out are no drift. Unset and a zero value ("", false, 0, {}) are
// the same, as the chart renders them.
func compareEntry(entry, live map[string]any, namespace string) []FieldDiff {
	want := map[string]any{}
	for _, k := range entrySpecKeys {
		if v, ok := entry[k]; ok {
			want[k] = v
		}
	}
	want = normalized(want)
	if ref, ok := want["hubRef"].(map[string]any); ok {
		ref["namespace"] = namespace
	}
	// The chart renders a secretReference only when it names a secret.
	for _, path := range [][]string{{"kubeconfig"}, {"klusterlet", "managedClusterKubeconfig"}} {
		if kc, ok := lookupPath(want, path).(map[string]any); ok {
			if ref, ok := kc["secretReference"].(map[string]any); ok && isZero(ref["name"]) {
				delete(kc, "secretReference")
			}
		}
	}
	var out []FieldDiff
	walkDiff(nil, want, normalized(live), &out)
	return out
}

func walkDiff(path []string, want, live any, out *[]FieldDiff) {
	if w, ok := want.(map[string]any); ok {
		l, _ := live.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(w)) {
			walkDiff(append(slices.Clip(path), k), w[k], l[k], out)
		}
		return
	}
	if sameValue(path, want, live) {
		return
	}
	immutable := !Mutable(path) && path[0] != credentialField
	*out = append(*out, FieldDiff{Path: FormatPath(path), Values: want, Live: live, Immutable: immutable})
}

// sameValue compares two JSON values, unset matching a zero one; the
// klusterlet's qosClass "Default" is the chart's placeholder, never rendered.
func sameValue(path []string, a, b any) bool {
	if isZero(a) && isZero(b) {
		return true
	}
	if FormatPath(path) == "klusterlet.resources.qosClass" && (a == "Default" || a == nil) && (b == "Default" || b == nil) {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case float64:
		return x == 0
	case int:
		return x == 0
	case map[string]any:
		for _, e := range x {
			if !isZero(e) {
				return false
			}
		}
		return true
	case []any:
		return len(x) == 0
	}
	return false
}

// normalized is v as JSON gives it back (numbers float64, maps
// map[string]any), so values from YAML and from the server compare.
func normalized(v map[string]any) map[string]any {
	out, _ := jsonValue(v).(map[string]any)
	if out == nil {
		return map[string]any{}
	}
	return out
}

func lookupPath(m map[string]any, path []string) any {
	var v any = m
	for _, k := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// differ is values-diff's outcome when the file and the Spokes are not in
// step: exit 1, as kubectl diff exits when it found differences.
func (r ValuesDiff) differ() error {
	if len(r.Items) == 0 {
		return nil
	}
	return &exitcode.Error{Code: exitcode.Failed, Err: fmt.Errorf("%s and the Spokes in %s differ: %d difference(s)", r.File, r.Metadata.Namespace, len(r.Items))}
}

// table is the human view: one row per difference, and per field of one
// that differs.
func (r ValuesDiff) table() cli.Table {
	t := cli.Table{Columns: []cli.Column{{Name: "SPOKE"}, {Name: "DRIFT"}, {Name: "HELM RELEASE", Wide: true}, {Name: "DETAIL"}}}
	for _, it := range r.Items {
		if len(it.Fields) == 0 {
			t.Rows = append(t.Rows, []string{it.Metadata.Name, it.Drift, it.HelmRelease, it.Message})
		}
		for _, f := range it.Fields {
			detail := fmt.Sprintf("%s: values %s, live %s", f.Path, shown(f.Values), shown(f.Live))
			if f.Immutable {
				detail += " (the webhook refuses this change: helm upgrade fails until the spoke is removed and added again)"
			}
			t.Rows = append(t.Rows, []string{it.Metadata.Name, it.Drift, it.HelmRelease, detail})
		}
	}
	return t
}

// shown writes a value on one line, as JSON; "(unset)" for none.
func shown(v any) string {
	if v == nil {
		return "(unset)"
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// Subjects are the spokes that differ, for -o name.
func (r ValuesDiff) Subjects() []string {
	var out []string
	for _, it := range r.Items {
		if n := api.ObjectName(fleetconfig.SpokeKind, it.Metadata.Name); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
