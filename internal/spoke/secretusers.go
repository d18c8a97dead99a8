package spoke

import (
	"context"
	"strings"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// secretUsers names what, besides spoke's own kubeconfig reference, uses
// the secret called name in the release namespace: the Hub's kubeconfig,
// and every other Spoke's kubeconfig or Hosted-mode managedClusterKubeconfig
// (spoke's own included). Writing a kubeconfig over it would replace
// another component's credentials.
func (h *HubClient) secretUsers(ctx context.Context, name, spoke string) ([]string, error) {
	var out []string
	hubs, err := h.Hubs(ctx)
	if err != nil {
		return nil, err
	}
	for _, hub := range hubs {
		if ref := hub.Spec.Kubeconfig.SecretReference; ref != nil && ref.Name == name {
			out = append(out, "the kubeconfig of Hub "+hub.Name)
		}
	}
	spokes, err := h.Spokes(ctx, h.Namespace, "")
	if err != nil {
		return nil, err
	}
	for _, s := range spokes {
		if ref := s.Spec.Kubeconfig.SecretReference; ref != nil && ref.Name == name && s.Name != spoke {
			out = append(out, "the kubeconfig of spoke "+s.Name)
		}
		if ref := s.Spec.Klusterlet.ManagedClusterKubeconfig.SecretReference; ref != nil && ref.Name == name {
			out = append(out, "the managedClusterKubeconfig of spoke "+s.Name)
		}
	}
	return out, nil
}

// refuseSecretInUse refuses writing spoke's kubeconfig into the secret
// called name when anything else uses it, or when that cannot be checked.
func (h *HubClient) refuseSecretInUse(ctx context.Context, name, spoke, next string) error {
	users, err := h.secretUsers(ctx, name, spoke)
	if err != nil {
		return exitcode.RefusedErrorf("whether anything else uses secret %s/%s cannot be checked: %w; %s", h.Namespace, name, err, next)
	}
	if len(users) > 0 {
		return exitcode.RefusedErrorf("secret %s/%s is %s; %s", h.Namespace, name, strings.Join(users, " and "), next)
	}
	return nil
}
