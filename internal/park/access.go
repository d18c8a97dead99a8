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

// The platform resources each command's --wait lists and watches: park
// follows the machines going and the Cluster; resume also the health
// checks and the pools' own counts of the workers back (phases.go).
var (
	parkFollows   = []string{capi.MachineResource, capi.ClusterResource}
	resumeFollows = []string{capi.MachineResource, capi.ClusterResource, capi.MachineHealthCheckResource, capi.MachineDeploymentResource, capi.MachinePoolResource}
)

// changeAccess is what park cluster and resume check before the patch:
// patch the Cluster and, with --wait, list and watch what the wait follows.
func changeAccess(namespace, cluster string, follows []string) []authz.Permission {
	needs := []authz.Permission{{Verb: "patch", Group: capi.Group, Resource: capi.ClusterResource, Namespace: namespace, Name: cluster}}
	for _, resource := range follows {
		for _, verb := range []string{"list", "watch"} {
			needs = append(needs, authz.Permission{Verb: verb, Group: capi.Group, Resource: resource, Namespace: namespace})
		}
	}
	return needs
}

// preflight checks changeAccess before the patch; a dry run waits for
// nothing, so it needs only the patch.
func (p *Platform) preflight(ctx context.Context, cluster string, dryRun cli.DryRun, wait bool, follows []string) error {
	if !wait || dryRun != cli.DryRunNone {
		follows = nil
	}
	return cli.Preflight(ctx, p.Kube.AuthorizationV1(), dryRun, RBACManifest, changeAccess(p.Namespace, cluster, follows))
}
