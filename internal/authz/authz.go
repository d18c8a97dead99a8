// Package authz asks the API server what the current user may do: the
// permissions a command needs, named in words, and which of them are
// missing (one SelfSubjectRulesReview per namespace where its answer is
// complete, else one SelfSubjectAccessReview each).
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

// Client asks both kinds of review.
type Client interface {
	authorizationclient.SelfSubjectAccessReviewsGetter
	authorizationclient.SelfSubjectRulesReviewsGetter
}

// reviewsAtOnce bounds the reviews in flight: a command asks up to about
// forty, which one by one take a round trip each.
const reviewsAtOnce = 16

// Missing says which of needs the current user lacks, each named in words,
// in the order of Unique. Where a namespace holds several of the needs, one
// SelfSubjectRulesReview of it allows those its rules cover; every other
// need (cluster-wide ones, those the rules do not cover, and all of a
// namespace whose rules the server says are incomplete or cannot give) is
// asked with a SelfSubjectAccessReview, several at once. So a permission
// is missing only on an access review's word, and allowed only on a
// complete answer.
func Missing(ctx context.Context, client Client, needs []Permission) ([]string, error) {
	asks := Unique(needs)
	allowed := make([]bool, len(asks))
	errs := make([]error, len(asks))
	// Every review runs to its end, so the error named is the first in
	// order, the same on every run. The rules reviews (one group) hand what
	// they do not allow to the access reviews (another), so no goroutine
	// waits for a slot of its own group.
	var rulesGroup, accessGroup errgroup.Group
	rulesGroup.SetLimit(reviewsAtOnce)
	accessGroup.SetLimit(reviewsAtOnce)
	ask := func(i int) {
		accessGroup.Go(func() error {
			allowed[i], errs[i] = accessReview(ctx, client, asks[i])
			return nil
		})
	}
	byNamespace := map[string][]int{}
	for i, a := range asks {
		if a.Namespace != "" {
			byNamespace[a.Namespace] = append(byNamespace[a.Namespace], i)
		}
	}
	for i, a := range asks {
		if len(byNamespace[a.Namespace]) < 2 {
			ask(i) // one review either way: the access review answers it alone
		}
	}
	for ns, idx := range byNamespace {
		if len(idx) < 2 {
			continue
		}
		rulesGroup.Go(func() error {
			rules, ok := rulesReview(ctx, client, ns)
			for _, i := range idx {
				if ok && rules.allow(asks[i]) {
					allowed[i] = true
				} else {
					ask(i)
				}
			}
			return nil
		})
	}
	_ = rulesGroup.Wait() // the goroutines return no error: each keeps its own
	_ = accessGroup.Wait()
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

func accessReview(ctx context.Context, client Client, a Permission) (bool, error) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: a.DeepCopy()}}
	res, err := client.SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("asking whether the user may %s: %w", Describe(a), err)
	}
	return res.Status.Allowed, nil
}

// rules are what a SelfSubjectRulesReview of one namespace granted.
type rules []authorizationv1.ResourceRule

// rulesReview asks what the user may do in ns; ok is false when the answer
// cannot be used to allow anything: the request failed, or the server says
// its list is incomplete (an authorizer that cannot list its rules, such
// as a webhook) or met an error.
func rulesReview(ctx context.Context, client Client, ns string) (rules, bool) {
	review := &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}
	res, err := client.SelfSubjectRulesReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil || res.Status.Incomplete || res.Status.EvaluationError != "" {
		return nil, false
	}
	return res.Status.ResourceRules, true
}

// allow says whether a rule grants a, matched as RBAC matches a request:
// "*" for any verb, group or resource, "resource/subresource" or
// "*/subresource" for a subresource, and resource names, when a rule lists
// any, naming a.
func (rs rules) allow(a Permission) bool {
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	matches := func(list []string, want string) bool {
		return slices.Contains(list, "*") || slices.Contains(list, want)
	}
	for _, r := range rs {
		if !matches(r.Verbs, a.Verb) || !matches(r.APIGroups, a.Group) {
			continue
		}
		if !matches(r.Resources, resource) && (a.Subresource == "" || !slices.Contains(r.Resources, "*/"+a.Subresource)) {
			continue
		}
		if len(r.ResourceNames) == 0 || (a.Name != "" && slices.Contains(r.ResourceNames, a.Name)) {
			return true
		}
	}
	return false
}
