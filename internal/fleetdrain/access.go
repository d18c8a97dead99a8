package fleetdrain

import (
	"context"

	"k8s.io/apimachinery/pkg/util/sets"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
)

// RBACManifest names the roles that grant what the commands need.
const RBACManifest = "kubectl-fleetdrain's rbac.yaml (ClusterRoles spokekit-fleetdrain-node and spokekit-fleetdrain-cluster)"

func core(verb, resource, sub, ns string) cli.Access {
	return cli.Access{Verb: verb, Resource: resource, Subresource: sub, Namespace: ns}
}

// nodeAccess is what draining the planned nodes needs: cordon them, and
// evict (or, with --disable-eviction, delete) the planned pods in their
// namespaces while watching them go.
func nodeAccess(report DrainReport, disableEviction bool) []cli.Access {
	needs := []cli.Access{core("patch", "nodes", "", ""), core("watch", "pods", "", "")}
	namespaces := sets.New[string]()
	for _, n := range report.Items {
		for _, p := range n.Evict {
			namespaces.Insert(p.Namespace)
		}
	}
	for _, ns := range sets.List(namespaces) {
		if disableEviction {
			needs = append(needs, core("delete", "pods", "", ns))
		} else {
			needs = append(needs, core("create", "pods", "eviction", ns))
		}
	}
	return needs
}

// clusterAccess is what tainting the clusters and waiting for their works needs.
func clusterAccess(clusters []string, wait bool) []cli.Access {
	var needs []cli.Access
	for _, c := range clusters {
		needs = append(needs, cli.Access{Verb: "patch", Group: ocm.ManagedClusterResource.Group, Resource: ocm.ManagedClusterResource.Resource, Name: c})
		if wait {
			needs = append(needs, cli.Access{Verb: "watch", Group: ocm.ManifestWorkResource.Group, Resource: ocm.ManifestWorkResource.Resource, Namespace: c})
		}
	}
	return needs
}

func preflight(ctx context.Context, client authorizationclient.SelfSubjectAccessReviewsGetter, dryRun cli.DryRun, needs []cli.Access) error {
	return cli.Preflight(ctx, client, dryRun, RBACManifest, needs)
}

func accessClient(f *cli.Factory) (authorizationclient.SelfSubjectAccessReviewsGetter, error) {
	kube, err := f.KubernetesClientSet()
	if err != nil {
		return nil, err
	}
	return kube.AuthorizationV1(), nil
}
