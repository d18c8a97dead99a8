package spoke

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/values"
)

// refuseComputePool refuses to touch a Spoke a Compute Pool manages.
func refuseComputePool(obj metav1.Object) error {
	if pool := fleetconfig.ComputePoolOf(obj); pool != "" {
		return exitcode.RefusedErrorf("spoke %s belongs to Compute Pool %q, which registers and removes it by itself; nothing was changed: change or delete the Compute Pool instead", obj.GetName(), pool)
	}
	return nil
}

// HelmRelease names the Helm release that owns an object ("" when none).
func HelmRelease(obj metav1.Object) string {
	if name := obj.GetAnnotations()[fleetconfig.HelmReleaseNameAnnotation]; name != "" {
		return name
	}
	if obj.GetLabels()[fleetconfig.ManagedByLabel] == "Helm" {
		return "(unnamed)"
	}
	return ""
}

// helmOwnership gives a Spoke the ownership marks of the Hub's Helm release,
// as the chart would render it, so the next helm upgrade adopts it.
func helmOwnership(s *fleetconfig.Spoke, hub *fleetconfig.Hub) {
	release := hub.Annotations[fleetconfig.HelmReleaseNameAnnotation]
	if release == "" {
		return
	}
	s.Labels = map[string]string{fleetconfig.ManagedByLabel: "Helm"}
	s.Annotations = map[string]string{
		fleetconfig.HelmReleaseNameAnnotation:      release,
		fleetconfig.HelmReleaseNamespaceAnnotation: hub.Namespace,
		fleetconfig.HelmResourcePolicyAnnotation:   "keep",
	}
}

// helmOwnsSpokes tells whether the Helm release the Hub names renders
// Spokes itself, as upstream's chart does, so that Helm owns one add --apply
// creates. Helm marks every object it renders: a Spoke of the namespace
// with the release's marks shows it. Under the seed's job model a job the
// upgrade runs applies the Spokes, none carries them, and Helm neither
// adopts nor deletes one. (Reading the release record instead would need
// the Secrets of the namespace, where the spokes' kubeconfigs are.)
func (h *HubClient) helmOwnsSpokes(ctx context.Context, hub *fleetconfig.Hub) (bool, error) {
	release := hub.Annotations[fleetconfig.HelmReleaseNameAnnotation]
	if release == "" {
		return false, nil
	}
	spokes, err := h.Spokes(ctx, hub.Namespace, "")
	if err != nil {
		return false, exitcode.RefusedErrorf("telling whether Helm release %s renders Spokes itself (so owns the one --apply creates): %w; nothing was changed", release, err)
	}
	for i := range spokes {
		if spokes[i].Annotations[fleetconfig.HelmReleaseNameAnnotation] == release {
			return true, nil
		}
	}
	return false, nil
}

// fleetRelease is the Helm release named on the Hub that s joins (the only
// Hub of the namespace when s is gone), as add names it in its next step.
// Only a hint reads it: "" when it cannot be told.
func (h *HubClient) fleetRelease(ctx context.Context, s *fleetconfig.Spoke) string {
	hubs, err := h.Hubs(ctx)
	if err != nil {
		return ""
	}
	for i := range hubs {
		if (s != nil && hubs[i].Name == s.Spec.HubRef.Name) || (s == nil && len(hubs) == 1) {
			return hubs[i].Annotations[fleetconfig.HelmReleaseNameAnnotation]
		}
	}
	return ""
}

// helmUpgrade is the command that applies a values file to the release.
func helmUpgrade(release, ns, file string) string {
	// The name comes from an annotation anyone who may patch the Spoke or
	// Hub set: a line printed for copy and paste carries only a name Helm
	// itself would accept.
	if release == "" || len(release) > 53 || len(validation.IsDNS1123Subdomain(release)) > 0 {
		release = "RELEASE"
	}
	return fmt.Sprintf("`helm upgrade %s CHART -n %s -f %s` (CHART: the chart the release runs)", release, ns, file)
}

// entryStep is how the spoke's entry gets into (verb "add") or out of
// (verb "remove") the values the release renders its Spokes from, with
// Helm or with Flux.
func entryStep(name, release, ns, verb string) string {
	into, flux := "to", "to"
	if verb == "remove" {
		into, flux = "from", "from"
	}
	return fmt.Sprintf("%s the entry `- name: %s` %s fleetConfig.spokes of the release's values and run %s (Flux: %s spec.values.fleetConfig.spokes of its HelmRelease, then apply or commit that manifest)",
		verb, name, into, helmUpgrade(release, ns, "VALUES"), flux)
}

// helmWarning is a removal's warning when no file was given to remove the
// spoke's entry from: the entry would register it again on the next
// upgrade. A Spoke without Helm's marks may still have one (made by add
// --apply, with the entry added by hand later).
func helmWarning(name, release, ns string) string {
	if release == "" {
		return fmt.Sprintf("Warning: spoke %s carries no Helm release marks, but if the fleet's values list it, the next helm upgrade registers it again: %s", name, entryStep(name, release, ns, "remove"))
	}
	return fmt.Sprintf("Warning: spoke %s is rendered by Helm release %q from its fleetConfig.spokes values, and the next helm upgrade registers it again unless you %s; or run this again with --values FILE or --helmrelease FILE", name, release, entryStep(name, release, ns, "remove"))
}

// helmElsewhereWarning is a removal's warning for a Spoke a Helm release
// renders, when the file given has no entry for it.
func helmElsewhereWarning(name, release string, f *values.File) string {
	return fmt.Sprintf("Warning: spoke %s is rendered by Helm release %q, but %s has no entry for it in %s, so the release's values live elsewhere: remove the entry there and run helm upgrade, or the next upgrade registers it again",
		name, release, f.Path, f.Kind.ListPath())
}

// helmRepointWarning is rotate-kubeconfig's warning for a Spoke moved to
// another secret without a file or release to edit: release is the one
// whose marks the Spoke carries, or "".
func helmRepointWarning(name, release, old, secret string) string {
	if release == "" {
		return fmt.Sprintf("Warning: spoke %s carries no Helm release marks, but if the fleet's values list it with secret %s, the next helm upgrade points the Spoke back at it; point the entry at %s (run this again with --release NAME, --values FILE or --helmrelease FILE, or edit the file)", name, old, secret)
	}
	return fmt.Sprintf("Warning: spoke %s is rendered by Helm release %q from its fleetConfig.spokes values, whose entry still names secret %s: the next helm upgrade would point the Spoke back at it; point the entry at %s (run this again with --values FILE or --helmrelease FILE, or edit the file)", name, release, old, secret)
}
