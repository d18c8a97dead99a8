// Package authz asks the API server what the current user may do: the
// permissions a command needs, named in words, and which of them are
// missing (one SelfSubjectAccessReview each).
package authz

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// Permission is one verb on one resource that a command needs, as a
// SelfSubjectAccessReview asks it. An empty Namespace means cluster-scoped
// (or every namespace).
type Permission = authorizationv1.ResourceAttributes

// Describe says one permission in words: "patch nodes",
// "create pods/eviction in namespace web", "delete spokes.fleetconfig.open-cluster-management.io".
func Describe(a Permission) string {
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

// Unique sorts the permissions and drops repeats, so each is asked once
// and named once.
func Unique(needs []Permission) []Permission {
	out := slices.Clone(needs)
	key := func(a Permission) string {
		return strings.Join([]string{a.Group, a.Resource, a.Subresource, a.Namespace, a.Name, a.Verb}, "\x00")
	}
	slices.SortFunc(out, func(a, b Permission) int { return strings.Compare(key(a), key(b)) })
	return slices.CompactFunc(out, func(a, b Permission) bool { return key(a) == key(b) })
}

// reviewsAtOnce bounds the reviews in flight: a command asks up to about
// forty, which one by one take a round trip each.
const reviewsAtOnce = 16

// Missing asks the API server, with one SelfSubjectAccessReview per
// permission (several at once), which of needs the current user lacks; each
// is named in words, in the order of Unique.
func Missing(ctx context.Context, client authorizationclient.SelfSubjectAccessReviewsGetter, needs []Permission) ([]string, error) {
	asks := Unique(needs)
	allowed := make([]bool, len(asks))
	errs := make([]error, len(asks))
	// Every review runs to its end, so the error named is the first in
	// order, the same on every run.
	var g errgroup.Group
	g.SetLimit(reviewsAtOnce)
	for i, a := range asks {
		g.Go(func() error {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: a.DeepCopy()}}
			res, err := client.SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				errs[i] = fmt.Errorf("asking whether the user may %s: %w", Describe(a), err)
				return nil
			}
			allowed[i] = res.Status.Allowed
			return nil
		})
	}
	_ = g.Wait() // the goroutines return no error: each keeps its own
	var missing []string
	for i, a := range asks {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if !allowed[i] {
			missing = append(missing, Describe(a))
		}
	}
	return missing, nil
}
