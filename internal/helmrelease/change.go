package helmrelease

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// spokesPath is where the chart reads its spokes from.
var spokesPath = []string{"fleetConfig", "spokes"}

// Refusal is why the release cannot take a spokes change (nil: it can). Only
// a release whose latest revision is deployed, whose chart the record holds
// whole and renders fleetConfig.spokes, is upgraded.
func (r *Release) Refusal() error {
	rec := r.record
	ns, name, rev := r.Namespace, r.Name, r.Revision
	var status rcommon.Status
	if rec.Info != nil {
		status = rec.Info.Status
	}
	switch {
	case status.IsPending():
		return exitcode.RefusedErrorf("revision %d of Helm release %s/%s is %s: another helm install, upgrade or rollback holds it, or one was cut off; nothing was changed: wait for it to finish (helm status %s -n %s), or if it was cut off, helm rollback %s -n %s, then run this again",
			rev, ns, name, status, name, ns, name, ns)
	case status == rcommon.StatusFailed:
		return exitcode.RefusedErrorf("revision %d of Helm release %s/%s failed; nothing was changed: an upgrade now would build on a release Helm could not apply; see why (helm history %s -n %s), fix it or helm rollback %s -n %s, then run this again",
			rev, ns, name, name, ns, name, ns)
	case status != rcommon.StatusDeployed:
		return exitcode.RefusedErrorf("revision %d of Helm release %s/%s is %q, not deployed; nothing was changed: see helm history %s -n %s", rev, ns, name, string(status), name, ns)
	case rec.Chart == nil || rec.Chart.Metadata == nil:
		return exitcode.RefusedErrorf("the record of Helm release %s/%s holds no chart; nothing was changed: upgrade it with helm and the chart it runs", ns, name)
	case len(rec.Chart.Metadata.Dependencies) > 0:
		// Helm keeps a chart's subcharts out of the release record.
		return exitcode.RefusedErrorf("chart %s of Helm release %s/%s has subcharts, which its release record does not keep, so an upgrade from the record would drop what they render; nothing was changed: change fleetConfig.spokes with --values FILE and run helm upgrade with the chart",
			r.Chart, ns, name)
	case !templatesSpokes(rec):
		return exitcode.RefusedErrorf("chart %s of Helm release %s/%s renders no fleetConfig.spokes, so the release registers no spokes; nothing was changed: name the release that installed the fleet (its Hub's meta.helm.sh/release-name annotation)",
			r.Chart, ns, name)
	}
	if _, err := r.spokes(); err != nil {
		return err
	}
	return nil
}

// templatesSpokes tells whether a template of the chart reads
// .Values.fleetConfig.spokes and the values give it a list.
func templatesSpokes(rec *release.Release) bool {
	reads := slices.ContainsFunc(rec.Chart.Templates, func(f *common.File) bool {
		return strings.Contains(string(f.Data), strings.Join(spokesPath, "."))
	})
	if !reads {
		return false
	}
	merged, err := chartutil.CoalesceValues(rec.Chart, rec.Config)
	if err != nil {
		return false
	}
	_, ok := lookup(merged.AsMap(), spokesPath).([]any)
	return ok
}

// spokes is the spokes list the release renders: the user-supplied one,
// or the chart's default when the user supplied none.
func (r *Release) spokes() ([]any, error) {
	if v := lookup(r.record.Config, spokesPath); v != nil {
		l, ok := v.([]any)
		if !ok {
			return nil, exitcode.RefusedErrorf("the values of Helm release %s/%s give fleetConfig.spokes as %T, not a list; nothing was changed", r.Namespace, r.Name, v)
		}
		return l, nil
	}
	merged, err := chartutil.CoalesceValues(r.record.Chart, r.record.Config)
	if err != nil {
		return nil, exitcode.RefusedErrorf("merging the values of Helm release %s/%s: %w; nothing was changed", r.Namespace, r.Name, err)
	}
	l, _ := lookup(merged.AsMap(), spokesPath).([]any)
	return l, nil
}

// Values is the release's values in the shape of a values file the spokes
// commands edit: fleetConfig.spokes as the release renders it, and
// fleetConfig.spokeFeatureGates and spokeAnnotations, which the chart
// renders into every Spoke, when the values set them.
func (r *Release) Values() ([]byte, error) {
	l, err := r.spokes()
	if err != nil {
		return nil, err
	}
	fc := map[string]any{"spokes": l}
	merged, err := chartutil.CoalesceValues(r.record.Chart, r.record.Config)
	if err == nil {
		for _, k := range []string{"spokeFeatureGates", "spokeAnnotations"} {
			if v := lookup(merged.AsMap(), []string{"fleetConfig", k}); v != nil {
				fc[k] = v
			}
		}
	}
	return yaml.Marshal(map[string]any{"fleetConfig": fc})
}

// TemplatesSpokes tells whether the release itself renders Spoke objects,
// as upstream's chart does, so that Helm owns them; under the job model a
// job applies them after each upgrade and Helm owns none.
func (r *Release) TemplatesSpokes() bool {
	for _, doc := range releaseutil.SplitManifests(r.record.Manifest) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if yaml.Unmarshal([]byte(doc), &head) == nil && head.Kind == "Spoke" && strings.HasPrefix(head.APIVersion, "fleetconfig.open-cluster-management.io/") {
			return true
		}
	}
	return false
}

// Change is an upgrade of a release that changes only fleetConfig.spokes.
type Change struct {
	Release *Release
	// Revision is the revision the upgrade makes.
	Revision int
	// Values are the new user-supplied values.
	Values map[string]any
	// Before and After are the spokes section, as YAML.
	Before, After string
}

// Plan is the change that gives the release the spokes of edited, a values
// document in the shape Values returns (after an edit of its
// fleetConfig.spokes). Every other user-supplied value stays as it is.
func (r *Release) Plan(edited []byte) (*Change, error) {
	if err := r.Refusal(); err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(edited, &doc); err != nil {
		return nil, fmt.Errorf("reading the edited spokes section: %w", err)
	}
	after, ok := lookup(doc, spokesPath).([]any)
	if !ok {
		return nil, errors.New("the edited values have no fleetConfig.spokes list")
	}
	before, err := r.spokes()
	if err != nil {
		return nil, err
	}
	vals := withSpokes(r.record.Config, after)
	if err := onlySpokesDiffer(r.record.Config, vals); err != nil {
		return nil, err
	}
	b, err := yaml.Marshal(map[string]any{"fleetConfig": map[string]any{"spokes": before}})
	if err != nil {
		return nil, err
	}
	a, err := yaml.Marshal(map[string]any{"fleetConfig": map[string]any{"spokes": after}})
	if err != nil {
		return nil, err
	}
	return &Change{Release: r, Revision: r.Revision + 1, Values: vals, Before: string(b), After: string(a)}, nil
}

// Changed tells whether the upgrade would change the spokes at all.
func (c *Change) Changed() bool { return c.Before != c.After }

// Diff is the change of the spokes section, as a unified diff.
func (c *Change) Diff() string {
	d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(c.Before), B: difflib.SplitLines(c.After),
		FromFile: fmt.Sprintf("%s revision %d", c.Release.Name, c.Release.Revision),
		ToFile:   fmt.Sprintf("%s revision %d", c.Release.Name, c.Revision),
		Context:  3,
	})
	return d
}

// withSpokes is config with fleetConfig.spokes set to spokes; config is not
// changed (the maps on the way are copied, the rest shared).
func withSpokes(config map[string]any, spokes []any) map[string]any {
	out := maps.Clone(config)
	if out == nil {
		out = map[string]any{}
	}
	fc, _ := out["fleetConfig"].(map[string]any)
	fc = maps.Clone(fc)
	if fc == nil {
		fc = map[string]any{}
	}
	fc["spokes"] = spokes
	out["fleetConfig"] = fc
	return out
}

// onlySpokesDiffer checks what withSpokes promises: with fleetConfig.spokes
// set aside, the values are the same.
func onlySpokesDiffer(before, after map[string]any) error {
	if !reflect.DeepEqual(withoutSpokes(before), withoutSpokes(after)) {
		return errors.New("the change would move values other than fleetConfig.spokes")
	}
	return nil
}

func withoutSpokes(config map[string]any) map[string]any {
	out := maps.Clone(config)
	fc, ok := out["fleetConfig"].(map[string]any)
	if !ok {
		return out
	}
	fc = maps.Clone(fc)
	delete(fc, "spokes")
	if len(fc) == 0 {
		delete(out, "fleetConfig")
	} else {
		out["fleetConfig"] = fc
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func lookup(m map[string]any, path []string) any {
	var v any = m
	for _, k := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		if v, ok = mm[k]; !ok {
			return nil
		}
	}
	return v
}
