package spoke

import (
	"encoding/json"
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
)

// renderedKeys are the keys of a values entry the chart puts into the
// Spoke's spec (upstream's templates/fleetconfig.yaml); the others
// (ociRegistry, timeout, logVerbosity, ...) it does not render into a Spoke.
var renderedKeys = []string{"createNamespace", "syncLabels", "kubeconfig", "klusterlet", "addOns", "cleanupConfig", "proxyCa", "proxyUrl", "clusterARN"}

// ChartSettings are what a rendered Spoke takes besides its entry.
type ChartSettings struct {
	// Cleanup is the cleanupConfig of a Spoke without an entry.
	Cleanup fleetconfig.CleanupConfig
	// Mode decides the add-ons of a Spoke without an entry, and which
	// add-ons an entry may list.
	Mode fleetMode
	// FeatureGates is klusterlet.featureGates, rendered from the values'
	// spokeFeatureGates (see featureGates).
	FeatureGates string
	// Annotations are the values' spokeAnnotations, which the chart merges
	// into every Spoke's klusterlet.annotations.
	Annotations map[string]any
	// HelmOwned is whether the hub's release renders Spokes itself (as
	// upstream's chart does), so that a Spoke rendered from an entry
	// carries Helm's ownership marks. Under the job model, where a job the
	// upgrade runs applies the Spokes, Helm owns none.
	HelmOwned bool
}

// RenderSpoke is the Spoke the chart renders for a spokes entry (entry may
// be nil: no values file, and chart.Cleanup is its cleanupConfig), in the
// release namespace of hub, with its kubeconfig in secret. An entry whose
// add-ons the FleetConfig webhook would reject in chart.Mode is an error.
func RenderSpoke(name string, hub *fleetconfig.Hub, secret string, entry map[string]any, chart ChartSettings) (*fleetconfig.Spoke, error) {
	s := &fleetconfig.Spoke{
		TypeMeta:   metav1.TypeMeta{APIVersion: fleetconfig.GroupVersion.String(), Kind: "Spoke"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: hub.Namespace},
	}
	spec := map[string]any{}
	for _, k := range renderedKeys {
		if v, ok := entry[k]; ok && v != nil {
			spec[k] = v
		}
	}
	if k, ok := spec["klusterlet"].(map[string]any); ok {
		k = maps.Clone(k)
		// The chart drops the empty strings of its placeholder
		// (limits.cpu: "", ...) and renders what is left.
		k["resources"] = deepClean(k["resources"])
		spec["klusterlet"] = k
	}
	c, _ := spec["cleanupConfig"].(map[string]any)
	spec["cleanupConfig"] = withCleanupDefaults(c)
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("rendering Spoke %s from its values entry: %w", name, err)
	}
	if err := json.Unmarshal(data, &s.Spec); err != nil {
		return nil, fmt.Errorf("rendering Spoke %s from its values entry: %w", name, err)
	}
	// The chart forces these: the hub of the release, the secret made for it.
	s.Spec.HubRef = fleetconfig.HubRef{Name: hub.Name, Namespace: hub.Namespace}
	s.Spec.Kubeconfig = fleetconfig.Kubeconfig{SecretReference: &fleetconfig.SecretReference{Name: secret, KubeconfigKey: fleetconfig.DefaultKubeconfigKey}}
	renderKlusterlet(&s.Spec.Klusterlet, chart)
	if entry == nil {
		s.Spec.CleanupConfig = chart.Cleanup
		for _, a := range agentAddOns(chart.Mode) {
			s.Spec.AddOns = append(s.Spec.AddOns, fleetconfig.AddOn{ConfigName: a})
		}
	} else if chart.HelmOwned {
		helmOwnership(s, hub)
	}
	if err := checkAddOns(s, chart.Mode); err != nil {
		return nil, fmt.Errorf("rendering Spoke %s from its values entry: %w", name, err)
	}
	return s, nil
}

// renderKlusterlet turns the entry's klusterlet into what the chart renders:
// its empty placeholders are no settings, the release-wide annotations and
// feature gates are added.
func renderKlusterlet(k *fleetconfig.Klusterlet, chart ChartSettings) {
	if k.Mode == "" {
		k.Mode = "Default"
	}
	if len(*orEmpty(k.Resources)) == 0 {
		k.Resources = nil
	}
	if len(*orEmpty(k.Values)) == 0 {
		k.Values = nil
	}
	if k.ValuesFrom != nil && *k.ValuesFrom == (fleetconfig.ConfigMapRef{}) {
		k.ValuesFrom = nil
	}
	// A secretReference without a name is the chart's placeholder; so is a
	// managedClusterKubeconfig that sets nothing else (omitted as zero).
	mck := &k.ManagedClusterKubeconfig
	if mck.SecretReference != nil && mck.SecretReference.Name == "" {
		mck.SecretReference = nil
	}
	for key, v := range chart.Annotations {
		if _, own := k.Annotations[key]; own {
			continue
		}
		if k.Annotations == nil {
			k.Annotations = map[string]string{}
		}
		k.Annotations[key] = fmt.Sprint(v)
	}
	k.FeatureGates = chart.FeatureGates
}

func orEmpty(v *fleetconfig.Values) *fleetconfig.Values {
	if v == nil {
		return &fleetconfig.Values{}
	}
	return v
}

// withCleanupDefaults is an entry's cleanupConfig with the keys it leaves
// out (all, without one) at the chart's documented defaults, as the chart's
// "| default" gives them: the Spoke is written with all four, since a false
// left out would take the CRD's default instead.
func withCleanupDefaults(c map[string]any) map[string]any {
	d := fleetconfig.ChartCleanupDefaults
	out := map[string]any{
		"purgeAgentNamespace": d.PurgeAgentNamespace, "purgeKlusterletOperator": d.PurgeKlusterletOperator,
		"purgeKubeconfigSecret": d.PurgeKubeconfigSecret, "forceClusterDrain": d.ForceClusterDrain,
	}
	for k, v := range c {
		if v != nil {
			out[k] = v
		}
	}
	return out
}

// deepClean is the chart's deepClean helper: a mapping without its empty
// values ("", false, 0, null, and mappings and lists left empty by that),
// nil when nothing is left.
func deepClean(v any) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := map[string]any{}
	for k, val := range m {
		switch x := val.(type) {
		case map[string]any:
			if c := deepClean(x); c != nil {
				out[k] = c
			}
		case []any:
			var kept []any
			for _, e := range x {
				if !isZero(e) {
					kept = append(kept, e)
				}
			}
			if kept != nil {
				out[k] = kept
			}
		default:
			if !isZero(val) {
				out[k] = val
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
