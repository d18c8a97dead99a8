package spoke

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/values"
)

// fluxApply is add --helmrelease FILE --apply on a Flux-managed hub: the
// HelmRelease as the edited file has it, server-side applied to the hub
// under kubectl spoke's field manager, so that Flux's helm-controller
// upgrades the release now (and the release's job applies the Spoke), not
// once the file reached Git. Only the values block may differ from the
// live object: anything else the file would change is refused.
type fluxApply struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Unchanged is true when the live object has the file's values already.
	Unchanged bool `json:"unchanged,omitempty"`

	resource schema.GroupVersionResource
	// object is what is applied: the file's HelmRelease, with the live
	// object's resourceVersion as the apply's precondition.
	object *unstructured.Unstructured
	// generation is the live object's, then the applied one's: Ready
	// counts only once Flux has observed it.
	generation int64
}

// helmReleaseResource is the resource of a HelmRelease of apiVersion v.
func helmReleaseResource(apiVersion string) (schema.GroupVersionResource, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || gv.Group != "helm.toolkit.fluxcd.io" {
		return schema.GroupVersionResource{}, fmt.Errorf("apiVersion %q is not one of Flux's HelmRelease", apiVersion)
	}
	return gv.WithResource("helmreleases"), nil
}

// readFluxRelease reads the live HelmRelease the file names (its
// namespace, else the hub's). One that is not there is a refusal: applying
// the file would install a release, not change one.
func (h *HubClient) readFluxRelease(ctx context.Context, file map[string]any) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{Object: file}
	gvr, err := helmReleaseResource(obj.GetAPIVersion())
	if err != nil {
		return nil, exitcode.RefusedErrorf("%w; nothing was changed", err)
	}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = h.Namespace
	}
	if obj.GetName() == "" {
		return nil, exitcode.RefusedErrorf("the HelmRelease in the file has no metadata.name; nothing was changed")
	}
	live, err := h.Object(ctx, gvr, ns, obj.GetName())
	if apierrors.IsNotFound(err) {
		return nil, exitcode.RefusedErrorf("there is no HelmRelease %s/%s on the hub, so --apply would install a release rather than add a spoke to one; nothing was changed: check the file's name and namespace, or let Flux apply it from Git", ns, obj.GetName())
	}
	if err != nil {
		return nil, exitcode.RefusedErrorf("reading HelmRelease %s/%s: %w; nothing was changed", ns, obj.GetName(), err)
	}
	return live, nil
}

// readFluxFile reads the live HelmRelease the --helmrelease file f names,
// for --apply, before anything is planned or written.
func (h *HubClient) readFluxFile(ctx context.Context, f *values.File) (*unstructured.Unstructured, error) {
	obj, err := values.ReleaseObject(f.Data)
	if err != nil {
		return nil, exitcode.RefusedErrorf("%s: %w; nothing was changed", f.Path, err)
	}
	return h.readFluxRelease(ctx, obj)
}

// planFluxFile plans the apply of the --helmrelease file f over live, as
// the command's edit leaves it (edited nil: as it was read, since the
// entry's edit was made before and the live object may still lack it).
func planFluxFile(f *values.File, edited []byte, live *unstructured.Unstructured) (*fluxApply, error) {
	data := f.Data
	if edited != nil {
		data = edited
	}
	obj, err := values.ReleaseObject(data)
	if err != nil {
		return nil, exitcode.RefusedErrorf("%s: %w; nothing was changed", f.Path, err)
	}
	return planFluxApply(obj, live)
}

// addFluxApplyFlag registers --apply for a command whose --helmrelease file
// the command may apply to the hub.
func addFluxApplyFlag(cmd *cobra.Command, apply *bool) {
	cmd.Flags().BoolVar(apply, "apply", false, "With --helmrelease: server-side apply the edited HelmRelease to the hub (refused when the live one differs from the file outside spec.values); --wait then waits for it to be Ready first.")
}

// validateFluxApply refuses --apply without the file it applies.
func validateFluxApply(apply bool, releaseFile string) error {
	if apply && releaseFile == "" {
		return exitcode.UsageErrorf("--apply applies the --helmrelease file to the hub: give the file")
	}
	return nil
}

// planFluxApply decides the apply of the file's HelmRelease (file, the
// edited file decoded) over live, and refuses when the two differ outside
// spec.values.
func planFluxApply(file map[string]any, live *unstructured.Unstructured) (*fluxApply, error) {
	obj := (&unstructured.Unstructured{Object: file}).DeepCopy()
	gvr, err := helmReleaseResource(obj.GetAPIVersion())
	if err != nil {
		return nil, exitcode.RefusedErrorf("%w; nothing was changed", err)
	}
	obj.SetNamespace(live.GetNamespace())
	a := &fluxApply{Name: live.GetName(), Namespace: live.GetNamespace(), resource: gvr, object: obj, generation: live.GetGeneration()}
	if drift := fluxDrift(obj.Object, live.Object); len(drift) > 0 {
		return nil, exitcode.RefusedErrorf("HelmRelease %s/%s on the hub differs from the file outside spec.values (%s), and applying the file would change that too; nothing was changed: bring the file in line with what the hub runs (kubectl get helmrelease %s -n %s -o yaml), or let Flux apply it from Git",
			a.Namespace, a.Name, strings.Join(drift, ", "), a.Name, a.Namespace)
	}
	fileValues, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "values")
	liveValues, _, _ := unstructured.NestedFieldNoCopy(live.Object, "spec", "values")
	a.Unchanged = reflect.DeepEqual(jsonValue(fileValues), jsonValue(liveValues))
	obj.SetResourceVersion(live.GetResourceVersion())
	return a, nil
}

// fluxDrift names the fields the file sets, outside spec.values, whose live
// value differs (fields the file does not set are others' to manage). Of
// metadata only labels and annotations are the file's.
func fluxDrift(file, live map[string]any) []string {
	var out []string
	for _, k := range sortedKeys(file) {
		switch k {
		case "apiVersion", "kind", "status":
		case "metadata":
			for _, m := range []string{"labels", "annotations"} {
				f, _, _ := unstructured.NestedFieldNoCopy(file, "metadata", m)
				l, _, _ := unstructured.NestedFieldNoCopy(live, "metadata", m)
				out = append(out, subsetDrift("metadata."+m, f, l)...)
			}
		case "spec":
			spec, _ := file["spec"].(map[string]any)
			liveSpec, _ := live["spec"].(map[string]any)
			for _, s := range sortedKeys(spec) {
				if s != "values" {
					out = append(out, subsetDrift("spec."+s, spec[s], liveSpec[s])...)
				}
			}
		default:
			out = append(out, subsetDrift(k, file[k], live[k])...)
		}
	}
	return out
}

// subsetDrift names where f, at path, is not what l has: a map key by key
// (l may hold more), anything else as a whole.
func subsetDrift(path string, f, l any) []string {
	fm, fok := f.(map[string]any)
	lm, lok := l.(map[string]any)
	if fok && (lok || l == nil) {
		var out []string
		for _, k := range sortedKeys(fm) {
			out = append(out, subsetDrift(path+"."+k, fm[k], lm[k])...)
		}
		return out
	}
	if f == nil || reflect.DeepEqual(jsonValue(f), jsonValue(l)) {
		return nil
	}
	return []string{path}
}

// jsonValue is v as JSON decodes it, so that numbers compare by value
// (nil when v cannot be encoded).
func jsonValue(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// access is what applying and waiting need.
func (a *fluxApply) access(wait bool) []authz.Permission {
	if a == nil {
		return nil
	}
	out := []authz.Permission{access("get", a.resource, a.Namespace), access("patch", a.resource, a.Namespace)}
	if wait {
		out = append(out, access("list", a.resource, a.Namespace), access("watch", a.resource, a.Namespace))
	}
	return out
}

// apply server-side applies the HelmRelease, taking the values from
// whoever applied them before (Flux's kustomize-controller takes them back
// on its next reconcile, from Git). The live resourceVersion is the
// precondition: a HelmRelease changed since it was compared is refused.
func (a *fluxApply) apply(ctx context.Context, h *HubClient, dryRun cli.DryRun, p *cli.Progress) error {
	if a == nil || a.Unchanged || dryRun == cli.DryRunClient {
		return nil
	}
	p.Update("applying HelmRelease %s/%s", a.Namespace, a.Name)
	var err error
	a.generation, err = h.ApplyHelmRelease(ctx, a.resource, a.Namespace, a.object, dryRun)
	return err
}

// step is what the apply did, or under a dry run would do.
func (a *fluxApply) step(dryRun cli.DryRun) Step {
	what := "helmrelease " + a.Namespace + "/" + a.Name
	switch {
	case a.Unchanged:
		return Step{what, "already has the file's values: not applied"}
	case dryRun != cli.DryRunNone:
		return Step{what, "would be applied (only spec.values differs)"}
	}
	return Step{what, "applied (only spec.values changed); Flux upgrades the release"}
}

// waitReadyStep waits as waitReady does and says so in a step; under is
// what is in place already, for the error when the wait fails.
func (a *fluxApply) waitReadyStep(ctx context.Context, h *HubClient, d cli.Deadline, p *cli.Progress, under string) (Step, error) {
	if err := a.waitReady(ctx, h, d, p); err != nil {
		return Step{}, fmt.Errorf("%w; %s: kubectl describe helmrelease %s -n %s shows why, or run the same command again to keep waiting", err, under, a.Name, a.Namespace)
	}
	return Step{"helmrelease " + a.Namespace + "/" + a.Name, "Ready: Flux upgraded the release"}, nil
}

// waitReady follows the HelmRelease until Flux has observed the applied
// generation and reports Ready; Stalled (Flux gave up retrying) fails.
func (a *fluxApply) waitReady(ctx context.Context, h *HubClient, d cli.Deadline, p *cli.Progress) error {
	what := "HelmRelease " + a.Namespace + "/" + a.Name
	return cli.WaitFor(ctx, what, h.WatchNamed(a.resource, a.Namespace, a.Name), &unstructured.Unstructured{}, d.Left(), p,
		func(objs []any) (bool, string, error) {
			if len(objs) == 0 {
				return false, "gone", fmt.Errorf("%s was deleted while waiting for it", what)
			}
			return helmReleaseReady(objs[0].(*unstructured.Unstructured), a.generation)
		})
}

// helmReleaseReady says whether Flux observed generation and the release is
// Ready, in words; Stalled is an error.
func helmReleaseReady(u *unstructured.Unstructured, generation int64) (bool, string, error) {
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if observed < generation {
		return false, fmt.Sprintf("Flux has not observed generation %d yet", generation), nil
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	state := map[string]map[string]any{}
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok {
			if t, ok := m["type"].(string); ok {
				state[t] = m
			}
		}
	}
	if s := state["Stalled"]; s != nil && s["status"] == "True" {
		return false, "Stalled", fmt.Errorf("helm-controller stopped retrying HelmRelease %s/%s (Stalled): %v", u.GetNamespace(), u.GetName(), s["message"])
	}
	r := state["Ready"]
	if r == nil {
		return false, "no Ready condition yet", nil
	}
	return r["status"] == "True", fmt.Sprintf("Ready %v: %v", r["status"], r["message"]), nil
}
