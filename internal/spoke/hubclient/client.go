// Package hubclient is every request kubectl spoke sends to the hub: the
// reads, the lists and watches, and the writes. The writes live here
// together so that their guards can be read in one place: each one is
// create-only, carries the resourceVersion it read, is a JSON patch with its
// own test operations, or deletes with the UID it read as precondition. A
// racing writer's change makes the write fail; it is never overwritten.
//
// The package knows the hub's kinds, not the commands: refusals that name
// roles, plans and reports stay in package spoke, which builds on this one.
package hubclient

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli"
)

// FieldManager is the field manager of every write of kubectl spoke.
const FieldManager = "kubectl-spoke"

// Client is the hub: its clients, and the release namespace where Spokes
// and their kubeconfig Secrets live.
type Client struct {
	dyn  dynamic.Interface
	kube kubernetes.Interface
	// Namespace is the release namespace.
	Namespace string
	// ChunkSize is the page size of list requests.
	ChunkSize int64
	// hubNamespaces are the namespaces that hold a fleet Hub, as New found
	// them; nil when it did not look (-n given) or could not.
	hubNamespaces map[string]bool
}

// NewForClients is a Client of the given clients in release namespace ns,
// as the unit tests build one.
func NewForClients(dyn dynamic.Interface, kube kubernetes.Interface, ns string) *Client {
	return &Client{dyn: dyn, kube: kube, Namespace: ns, ChunkSize: cli.DefaultChunkSize}
}

// New builds the clients and resolves the namespace: -n when given;
// otherwise the namespace of the fleet's Hub when there is exactly one;
// otherwise the context's namespace.
func New(ctx context.Context, f *cli.Factory) (*Client, error) {
	dyn, err := f.DynamicClient()
	if err != nil {
		return nil, fmt.Errorf("connecting to the hub: %w", err)
	}
	kube, err := f.KubernetesClientSet()
	if err != nil {
		return nil, fmt.Errorf("connecting to the hub: %w", err)
	}
	ns, explicit, err := f.Namespace()
	if err != nil {
		return nil, err
	}
	c := NewForClients(dyn, kube, ns)
	if explicit {
		return c, nil
	}
	hubs, err := dyn.Resource(fleetconfig.HubResource).List(ctx, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("looking for the fleet's Hub to find the release namespace: %w", err)
	}
	if err == nil {
		c.hubNamespaces = map[string]bool{}
		for i := range hubs.Items {
			c.hubNamespaces[hubs.Items[i].GetNamespace()] = true
		}
		if len(hubs.Items) == 1 {
			c.Namespace = hubs.Items[0].GetNamespace()
		}
	}
	return c, nil
}

// Authz is the client that asks what the current user may do.
func (c *Client) Authz() authz.Client { return c.kube.AuthorizationV1() }

// UserName is the current user's name as the API server knows it; "" when
// it cannot tell.
func (c *Client) UserName(ctx context.Context) string {
	return cli.UserName(ctx, c.kube.AuthenticationV1())
}
