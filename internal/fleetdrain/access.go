package fleetdrain

import (
	"context"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// RBACManifest names the roles that grant what the commands need.
const RBACManifest = "kubectl-fleetdrain's rbac.yaml (ClusterRoles spokekit-fleetdrain-node and spokekit-fleetdrain-cluster, and spokekit-fleetdrain-works bound in each drained cluster's namespace)"

// worksRole lists and watches ManifestWorks where it is bound: in the
// namespace of each cluster drained, never everywhere (works carry Secrets).
const worksRole = "spokekit-fleetdrain-works"

// worksRefusal is the refusal for a cluster whose ManifestWorks the current
// user may not list: the binding that grants them in its namespace alone.
func worksRefusal(ctx context.Context, f *cli.Factory, cluster string) error {
	user := ""
	if kube, err := f.KubernetesClientSet(); err == nil {
		user = cli.UserName(ctx, kube.AuthenticationV1())
	}
	return exitcode.RefusedErrorf("the current user may not list manifestworks.%s in namespace %s, so what the drain moves cannot be told; nothing was changed: bind %s of kubectl-fleetdrain's rbac.yaml in that namespace:\n  %s",
		ocm.ManifestWorkResource.Group, cluster, worksRole, cli.NamespaceBinding(worksRole, cluster, user))
}

func core(verb, resource, sub, ns string) authz.Permission {
	return authz.Permission{Verb: verb, Resource: resource, Subresource: sub, Namespace: ns}
}

// nodeAccess is what draining the planned nodes needs: cordon them, and
// evict (or, with --disable-eviction, delete) the planned pods in their
// namespaces while watching them go and the budgets change. (The budgets'
// list was proven by reading them to plan; a denied watch would leave the
// drain a view that never changes.)
func nodeAccess(report DrainReport, disableEviction bool) []authz.Permission {
	needs := []authz.Permission{
		core("patch", "nodes", "", ""), core("watch", "pods", "", ""),
		{Verb: "watch", Group: "policy", Resource: "poddisruptionbudgets"},
	}
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
func clusterAccess(clusters []string, wait bool) []authz.Permission {
	var needs []authz.Permission
	for _, c := range clusters {
		needs = append(needs, authz.Permission{Verb: "patch", Group: ocm.ManagedClusterResource.Group, Resource: ocm.ManagedClusterResource.Resource, Name: c})
		if wait {
			for _, verb := range []string{"list", "watch"} {
				needs = append(needs, authz.Permission{Verb: verb, Group: ocm.ManifestWorkResource.Group, Resource: ocm.ManifestWorkResource.Resource, Namespace: c})
			}
		}
	}
	return needs
}

func preflight(ctx context.Context, client authz.Client, dryRun cli.DryRun, needs []authz.Permission) error {
	return cli.Preflight(ctx, client, dryRun, RBACManifest, needs)
}

func accessClient(f *cli.Factory) (authz.Client, error) {
	kube, err := f.KubernetesClientSet()
	if err != nil {
		return nil, err
	}
	return kube.AuthorizationV1(), nil
}
