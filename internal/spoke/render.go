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

// RenderSpoke is the Spoke the chart renders for a spokes entry (entry may
// be nil: no values file, and cleanup is its cleanupConfig), in the release
// namespace of hub, with its kubeconfig in secret.
func RenderSpoke(name string, hub *fleetconfig.Hub, secret string, entry map[string]any, cleanup fleetconfig.CleanupConfig) (*fleetconfig.Spoke, error) {
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
	if entry == nil {
		s.Spec.CleanupConfig = cleanup
	} else {
		helmOwnership(s, hub)
	}
	return s, nil
}
