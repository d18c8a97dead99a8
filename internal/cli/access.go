package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// Access is one verb on one resource that a command needs, as a
// SelfSubjectAccessReview asks it. An empty Namespace means cluster-scoped
// (or every namespace).
type Access = authorizationv1.ResourceAttributes

// DescribeAccess says one permission in words: "patch nodes",
// "create pods/eviction in namespace web", "delete spokes.fleetconfig.open-cluster-management.io".
func DescribeAccess(a Access) string {
	r := a.Resource
	if a.Subresource != "" {
		r += "/" + a.Subresource
	}
	if a.Group != "" {
		r += "." + a.Group
	}
	s := a.Verb + " " + r
	if a.Name != "" {
		s += " " + a.Name
	}
	if a.Namespace != "" {
		s += " in namespace " + a.Namespace
	}
	return s
}

// UniqueAccess sorts the permissions and drops repeats, so each is asked once
// and named once.
func UniqueAccess(needs []Access) []Access {
	out := slices.Clone(needs)
	key := func(a Access) string {
		return strings.Join([]string{a.Group, a.Resource, a.Subresource, a.Namespace, a.Name, a.Verb}, "\x00")
	}
	slices.SortFunc(out, func(a, b Access) int { return strings.Compare(key(a), key(b)) })
	return slices.CompactFunc(out, func(a, b Access) bool { return key(a) == key(b) })
}

// MissingAccess asks the API server, with one SelfSubjectAccessReview per
// permission, which of needs the current user lacks; each is named in words.
func MissingAccess(ctx context.Context, client authorizationclient.SelfSubjectAccessReviewsGetter, needs []Access) ([]string, error) {
	var missing []string
	for _, a := range UniqueAccess(needs) {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: a.DeepCopy()}}
		res, err := client.SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("asking whether the user may %s: %w", DescribeAccess(a), err)
		}
		if !res.Status.Allowed {
			missing = append(missing, DescribeAccess(a))
		}
	}
	return missing, nil
}

// AccessRefusal is the refusal (exit 3) for missing permissions; nil when
// none is missing. rbac names the manifest that grants them.
func AccessRefusal(missing []string, rbac string) error {
	if len(missing) == 0 {
		return nil
	}
	return Refusedf("the current user may not %s; nothing was changed: bind the roles of %s (see the README's Permissions section), or run as a user who may",
		strings.Join(missing, ", "), rbac)
}

// Preflight checks, before a command's first write, that the current user
// may do everything the command will do. A check that cannot run refuses
// too: nothing was changed either way. A client dry run sends nothing and
// is not checked.
func Preflight(ctx context.Context, client authorizationclient.SelfSubjectAccessReviewsGetter, dryRun DryRun, rbac string, needs []Access) error {
	if dryRun == DryRunClient || len(needs) == 0 {
		return nil
	}
	missing, err := MissingAccess(ctx, client, needs)
	if err != nil {
		return Refusedf("checking permissions: %w; nothing was changed", err)
	}
	return AccessRefusal(missing, rbac)
}
