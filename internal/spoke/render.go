package spoke

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
)

// renderedKeys are the keys of a values entry the chart puts into the
// Spoke's spec; the others (ociRegistry, ...) are for other templates.
var renderedKeys = []string{"createNamespace", "syncLabels", "kubeconfig", "klusterlet", "addOns", "cleanupConfig", "timeout", "logVerbosity", "proxyCa", "proxyUrl", "clusterARN"}

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
	s.Spec.Klusterlet.ForceInternalEndpointLookup = false
	if s.Spec.Klusterlet.Mode == "" {
		s.Spec.Klusterlet.Mode = "Default"
	}
	// Empty chart placeholders ("" limits, {} values) are not settings.
	s.Spec.Klusterlet.Resources = nil
	if s.Spec.Klusterlet.Values != nil && len(*s.Spec.Klusterlet.Values) == 0 {
		s.Spec.Klusterlet.Values = nil
	}
	s.Spec.Klusterlet.ManagedClusterKubeconfig = fleetconfig.Kubeconfig{}
	s.Spec.Klusterlet.FeatureGates = chart.FeatureGates
	if entry == nil {
		s.Spec.CleanupConfig = chart.Cleanup
		for _, a := range agentAddOns(chart.Mode) {
			s.Spec.AddOns = append(s.Spec.AddOns, fleetconfig.AddOn{ConfigName: a})
		}
	} else {
		helmOwnership(s, hub)
	}
	if err := checkAddOns(s, chart.Mode); err != nil {
		return nil, fmt.Errorf("rendering Spoke %s from its values entry: %w", name, err)
	}
	return s, nil
}
