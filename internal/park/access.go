package park

import (
	"context"
	"fmt"

	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli"
)

// RBACManifest names the role that grants what the commands need.
const RBACManifest = "kubectl-park's rbac.yaml (ClusterRole spokekit-park)"

// clusterAccessHint is how a command reaches a workload cluster when it
// has no way in: the user's own kubeconfig for it, or the opt-in Role that
// lets the user read that one cluster's NAME-kubeconfig Secret and no other
// (spokekit-park reads no Secret: those Secrets are admin credentials).
func (p *Platform) clusterAccessHint(ctx context.Context, cluster string) string {
	return fmt.Sprintf("pass --cluster-kubeconfig FILE (your own access to the cluster), or have an administrator let you read that cluster's kubeconfig Secret alone:\n  %s",
		cli.SecretGrant("spokekit-park", p.Namespace, capi.KubeconfigSecretName(cluster), []string{"get"}, cli.UserName(ctx, p.Kube.AuthenticationV1())))
}

// changeAccess is what park cluster and resume check before the patch: patch
// the Cluster and, with --wait, follow its Machines and the Cluster.
func changeAccess(namespace, cluster string, wait bool) []authz.Permission {
	needs := []authz.Permission{{Verb: "patch", Group: capi.Group, Resource: capi.ClusterResource, Namespace: namespace, Name: cluster}}
	if wait {
		for _, verb := range []string{"list", "watch"} {
			needs = append(needs, authz.Permission{Verb: verb, Group: capi.Group, Resource: capi.MachineResource, Namespace: namespace},
				authz.Permission{Verb: verb, Group: capi.Group, Resource: capi.ClusterResource, Namespace: namespace},
				// resume --wait: the health checks of the workers back, and
				// the pools' own counts of them.
				authz.Permission{Verb: verb, Group: capi.Group, Resource: capi.MachineHealthCheckResource, Namespace: namespace},
				authz.Permission{Verb: verb, Group: capi.Group, Resource: capi.MachineDeploymentResource, Namespace: namespace},
				authz.Permission{Verb: verb, Group: capi.Group, Resource: capi.MachinePoolResource, Namespace: namespace})
		}
	}
	return needs
}

// preflight checks changeAccess before the patch.
func (p *Platform) preflight(ctx context.Context, cluster string, dryRun cli.DryRun, wait bool) error {
	return cli.Preflight(ctx, p.Kube.AuthorizationV1(), dryRun, RBACManifest, changeAccess(p.Namespace, cluster, wait && dryRun == cli.DryRunNone))
}
