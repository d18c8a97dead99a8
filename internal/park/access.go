package park

import (
	"context"

	capi "github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
)

// RBACManifest names the role that grants what the commands need.
const RBACManifest = "kubectl-park's rbac.yaml (ClusterRole spokekit-park)"

// preflight checks that the current user may patch the Cluster and, with
// --wait, follow its Machines, before the patch.
func (p *Platform) preflight(ctx context.Context, cluster string, dryRun cli.DryRun, wait bool) error {
	needs := []cli.Access{{Verb: "patch", Group: capi.Group, Resource: capi.ClusterResource, Namespace: p.Namespace, Name: cluster}}
	if wait && dryRun == cli.DryRunNone {
		for _, verb := range []string{"list", "watch"} {
			needs = append(needs, cli.Access{Verb: verb, Group: capi.Group, Resource: capi.MachineResource, Namespace: p.Namespace})
		}
	}
	return cli.Preflight(ctx, p.Kube.AuthorizationV1(), dryRun, RBACManifest, needs)
}
