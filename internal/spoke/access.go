package spoke

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// RBACManifest names the roles that grant what the commands need.
const RBACManifest = "kubectl-spoke's rbac.yaml (ClusterRoles spokekit-spoke and spokekit-spoke-release; to write kubeconfig secrets, spokekit-spoke-secret-writer with its admission policy)"

// The roles of rbac.yaml grant no Secret and no ManifestWork by kind. Each
// kubeconfig Secret is read and updated through a Role that names it alone
// (secretGrant), and ManifestWorks are listed where spokekit-spoke-works is
// bound in the cluster's namespace (worksRole).
const (
	grantPrefix = "spokekit-spoke"
	worksRole   = "spokekit-spoke-works"
)

// secretVerbs are what the commands do to a spoke's kubeconfig Secret once
// it exists: read it (add, rotate-kubeconfig, force-remove, health --deep) and
// update it (add, rotate-kubeconfig).
var secretVerbs = []string{"get", "update"}

var secretResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

func access(verb string, gvr schema.GroupVersionResource, ns string) authz.Permission {
	return authz.Permission{Verb: verb, Group: gvr.Group, Resource: gvr.Resource, Namespace: ns}
}

// secretAccess is one verb on the Secret name of the release namespace.
// get and update name it, as its Role does; create cannot be narrowed by
// name in RBAC (the admission policy beside rbac.yaml narrows it), so it is
// asked as the API server will ask it, without a name.
func (h *HubClient) secretAccess(verb, name string) authz.Permission {
	a := access(verb, secretResource, h.Namespace)
	if verb != "create" {
		a.Name = name
	}
	return a
}

// spokeAccess is reading the Spoke, as every command that changes it does
// first, and verbs on it.
func (h *HubClient) spokeAccess(verbs ...string) []authz.Permission {
	out := []authz.Permission{access("get", fleetconfig.SpokeResource, h.Namespace)}
	for _, v := range verbs {
		out = append(out, access(v, fleetconfig.SpokeResource, h.Namespace))
	}
	return out
}

// waitJoinedAccess is what add --wait watches.
func (h *HubClient) waitJoinedAccess() []authz.Permission {
	return []authz.Permission{
		access("list", fleetconfig.SpokeResource, h.Namespace), access("watch", fleetconfig.SpokeResource, h.Namespace),
		access("list", ocm.ManagedClusterResource, ""), access("watch", ocm.ManagedClusterResource, ""),
	}
}

// waitGoneAccess is what remove --wait and force-remove watch.
func (h *HubClient) waitGoneAccess() []authz.Permission {
	return append(h.waitJoinedAccess(), access("list", namespaceResource, ""), access("watch", namespaceResource, ""))
}

// preflight checks that the current user may do all of needs, before the
// first write (exit 3 naming what is missing, and for a kubeconfig Secret
// the commands that grant it, when grant allows them: see grantRefusal).
func (h *HubClient) preflight(ctx context.Context, dryRun cli.DryRun, grant *secretGrantFor, needs ...[]authz.Permission) error {
	var all []authz.Permission
	for _, n := range needs {
		all = append(all, n...)
	}
	if dryRun == cli.DryRunClient || len(all) == 0 {
		return nil
	}
	missing, err := authz.Missing(ctx, h.Authz(), all)
	if err != nil {
		return exitcode.RefusedErrorf("checking permissions: %w; nothing was changed", err)
	}
	rbac := RBACManifest
	for _, a := range authz.Unique(all) {
		if a.Resource == secretResource.Resource && a.Name != "" && len(missing) > 0 && grant != nil {
			rbac += "; for secret " + a.Name + ":\n  " + h.secretGrant(ctx, *grant, a.Name) + "\n"
			break
		}
	}
	return cli.AccessRefusal(missing, rbac)
}

// secretGrant is the commands that let the current user read and update the
// Secret name of the release namespace, and no other; or, when grantRefusal
// refuses them, why not.
func (h *HubClient) secretGrant(ctx context.Context, g secretGrantFor, name string) string {
	if err := h.grantRefusal(ctx, g, name); err != nil {
		return err.Error()
	}
	return cli.SecretGrant(grantPrefix, h.Namespace, name, secretVerbs, h.UserName(ctx))
}

// secretForbidden is the refusal for a Secret the current user may not
// read: the commands that grant it (see secretGrant), each on a line of its
// own (a caller's words follow on the next), and nothing was changed. It
// wraps err, so apierrors.IsForbidden still tells it.
func (h *HubClient) secretForbidden(ctx context.Context, g secretGrantFor, name string, err error) error {
	if refusal := h.grantRefusal(ctx, g, name); refusal != nil {
		return exitcode.RefusedError(&secretForbiddenError{err: err, msg: fmt.Sprintf("the current user may not read secret %s/%s; nothing was changed: %v\n",
			h.Namespace, name, refusal)})
	}
	return exitcode.RefusedError(&secretForbiddenError{err: err, msg: fmt.Sprintf("the current user may not read secret %s/%s; nothing was changed: the roles of kubectl-spoke's rbac.yaml read no Secret by kind, an administrator grants this one alone with:\n  %s\n",
		h.Namespace, name, cli.SecretGrant(grantPrefix, h.Namespace, name, secretVerbs, h.UserName(ctx)))})
}

// secretForbiddenError says what to do about a Forbidden read, and unwraps
// to it.
type secretForbiddenError struct {
	err error
	msg string
}

func (e *secretForbiddenError) Error() string { return e.msg }
func (e *secretForbiddenError) Unwrap() error { return e.err }

// worksForbidden is the refusal for ManifestWorks the current user may not
// list in a cluster's namespace: the binding that grants them there.
func (h *HubClient) worksForbidden(ctx context.Context, cluster string) error {
	return exitcode.RefusedErrorf("the current user may not list manifestworks.%s in namespace %s (ManifestWorks may carry Secrets, so no shipped role lists them everywhere); nothing was changed: bind %s of kubectl-spoke's rbac.yaml in that namespace:\n  %s",
		ocm.ManifestWorkResource.Group, cluster, worksRole, cli.NamespaceBinding(worksRole, cluster, h.UserName(ctx)))
}
