package spoke

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
)

// RBACManifest names the roles that grant what the commands need.
const RBACManifest = "kubectl-spoke's rbac.yaml (ClusterRoles spokekit-spoke and spokekit-spoke-release)"

var secretResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

func access(verb string, gvr schema.GroupVersionResource, ns string) cli.Access {
	return cli.Access{Verb: verb, Group: gvr.Group, Resource: gvr.Resource, Namespace: ns}
}

// spokeAccess is reading the Spoke, as every command that changes it does
// first, and verbs on it.
func (h *Hub) spokeAccess(verbs ...string) []cli.Access {
	out := []cli.Access{access("get", fleetconfig.SpokeResource, h.Namespace)}
	for _, v := range verbs {
		out = append(out, access(v, fleetconfig.SpokeResource, h.Namespace))
	}
	return out
}

// waitJoinedAccess is what add --wait watches.
func (h *Hub) waitJoinedAccess() []cli.Access {
	return []cli.Access{
		access("list", fleetconfig.SpokeResource, h.Namespace), access("watch", fleetconfig.SpokeResource, h.Namespace),
		access("list", ocm.ManagedClusterResource, ""), access("watch", ocm.ManagedClusterResource, ""),
	}
}

// waitGoneAccess is what remove --wait and force-remove watch.
func (h *Hub) waitGoneAccess() []cli.Access {
	return append(h.waitJoinedAccess(), access("list", namespaceResource, ""), access("watch", namespaceResource, ""))
}

// preflight checks that the current user may do all of needs, before the
// first write (exit 3 naming what is missing).
func (h *Hub) preflight(ctx context.Context, dryRun cli.DryRun, needs ...[]cli.Access) error {
	var all []cli.Access
	for _, n := range needs {
		all = append(all, n...)
	}
	return cli.Preflight(ctx, h.Kube.AuthorizationV1(), dryRun, RBACManifest, all)
}
