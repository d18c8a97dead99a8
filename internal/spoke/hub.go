package spoke

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
	"github.com/spokekit/spokekit/internal/spoke/hubclient"
)

// HubClient is the hub as the commands use it: hubclient's requests (every
// read and write spokekit sends there), and on top of them what several
// commands check and refuse alike, in words that name the commands and
// roles to use (the methods of this package's files: out-of-band clusters,
// Secrets in use, the same cluster twice, the access checks).
type HubClient struct {
	*hubclient.Client
}

// NewHubClient connects to the hub and resolves the release namespace (see
// hubclient.New).
func NewHubClient(ctx context.Context, f *cli.Factory) (*HubClient, error) {
	c, err := hubclient.New(ctx, f)
	if err != nil {
		return nil, err
	}
	return &HubClient{Client: c}, nil
}

// errNoSecret is a Spoke's kubeconfig secret not existing: in addon mode
// the normal state once the agent took over and cleanupConfig
// .purgeKubeconfigSecret had it deleted. It proves nothing either way.
var errNoSecret = errors.New("the kubeconfig secret does not exist")

// StoredKubeconfig reads the kubeconfig a Spoke's secret holds (its
// spec.kubeconfig.context, as FleetConfig reads it), and the secret. Anyone
// who may write the secret wrote the kubeconfig: the loader refuses (exit
// 3) one that would run a program or read a local file. A secret that does
// not exist is errNoSecret; one that cannot be read, the API's error.
func (h *HubClient) StoredKubeconfig(ctx context.Context, s *fleetconfig.Spoke) (*kubeconfig.Kubeconfig, *corev1.Secret, error) {
	ref := s.Spec.Kubeconfig.SecretReference
	if ref == nil {
		return nil, nil, fmt.Errorf("spoke %s uses in-cluster credentials, not a kubeconfig secret", s.Name)
	}
	sec, err := h.kubeconfigSecret(ctx, secretGrantFor{Spoke: s.Name, NamedBy: s}, ref.Name)
	if err != nil {
		return nil, nil, err
	}
	if sec == nil {
		return nil, nil, fmt.Errorf("%w: spoke %s names secret %s/%s", errNoSecret, s.Name, h.Namespace, ref.Name)
	}
	key := ref.KubeconfigKey
	if key == "" {
		key = fleetconfig.DefaultKubeconfigKey
	}
	kc, err := kubeconfig.FromSecretContext(sec, key, s.Spec.Kubeconfig.Context)
	return kc, sec, err
}

// kubeconfigSecret reads a secret of the release namespace, a kubeconfig of
// g's spoke; nil when it does not exist. One the user may not read is a
// refusal that names the Role granting it alone, when grantRefusal allows
// that.
func (h *HubClient) kubeconfigSecret(ctx context.Context, g secretGrantFor, name string) (*corev1.Secret, error) {
	s, err := h.Secret(ctx, h.Namespace, name)
	if apierrors.IsForbidden(err) {
		return nil, h.secretForbidden(ctx, g, name, err)
	}
	return s, err
}

// blockingWorks lists the ManifestWorks in a cluster's namespace; where the
// user may not, it refuses, naming the binding that grants them there. They
// are what would block the spoke's removal, so a list that fails is a check
// that cannot be made (exit 3), never no works: also a 404, which says the
// hub does not serve ManifestWorks (a list in a namespace that does not
// exist is an empty one).
func (h *HubClient) blockingWorks(ctx context.Context, cluster string) ([]ocm.ManifestWork, error) {
	out, err := h.ManifestWorks(ctx, cluster)
	switch {
	case apierrors.IsForbidden(err):
		return nil, h.worksForbidden(ctx, cluster)
	case apierrors.IsNotFound(err):
		return nil, exitcode.RefusedErrorf("cannot check the ManifestWorks that would block the removal of spoke %s: the hub does not serve ManifestWorks (%s): %w; nothing was changed",
			cluster, ocm.ManifestWorkResource.GroupVersion(), err)
	case err != nil:
		return nil, exitcode.RefusedErrorf("cannot check the ManifestWorks that would block the removal of spoke %s: listing ManifestWorks in namespace %s: %w; nothing was changed", cluster, cluster, err)
	}
	return out, nil
}

// secretName is the kubeconfig Secret kubectl spoke writes for a spoke:
// NAME-kubeconfig.
func secretName(spoke string) string { return spoke + "-kubeconfig" }
