package cli

import (
	"context"
	"errors"
	"testing"

	"gotest.tools/v3/assert"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestDescribeAccess(t *testing.T) {
	for _, tc := range []struct {
		a    Access
		want string
	}{
		{Access{Verb: "patch", Resource: "nodes"}, "patch nodes"},
		{Access{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "web"}, "create pods/eviction in namespace web"},
		{Access{Verb: "delete", Group: "fleetconfig.open-cluster-management.io", Resource: "spokes", Namespace: "mural-system"},
			"delete spokes.fleetconfig.open-cluster-management.io in namespace mural-system"},
		{Access{Verb: "patch", Group: "cluster.x-k8s.io", Resource: "clusters", Name: "lab", Namespace: "dynamo-prod"}, "patch clusters.cluster.x-k8s.io lab in namespace dynamo-prod"},
	} {
		assert.Equal(t, DescribeAccess(tc.a), tc.want)
	}
}

func TestUniqueAccessSortsAndDropsRepeats(t *testing.T) {
	got := UniqueAccess([]Access{
		{Verb: "watch", Resource: "pods"}, {Verb: "patch", Resource: "nodes"}, {Verb: "watch", Resource: "pods"},
		{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "b"},
		{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "a"},
	})
	var words []string
	for _, a := range got {
		words = append(words, DescribeAccess(a))
	}
	assert.DeepEqual(t, words, []string{"patch nodes", "watch pods", "create pods/eviction in namespace a", "create pods/eviction in namespace b"})
}

// reviews answers SelfSubjectAccessReviews: allowed unless the verb and
// resource are in denied; err fails every review.
func reviews(denied map[string]bool, err error) *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "selfsubjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if err != nil {
			return true, nil, err
		}
		r := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		a := r.Spec.ResourceAttributes
		r.Status.Allowed = !denied[a.Verb+" "+a.Resource]
		return true, r, nil
	})
	return c
}

func TestPreflight(t *testing.T) {
	ctx := context.Background()
	needs := []Access{{Verb: "patch", Resource: "nodes"}, {Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "web"}, {Verb: "watch", Resource: "pods"}}

	assert.NilError(t, Preflight(ctx, reviews(nil, nil).AuthorizationV1(), DryRunNone, "rbac.yaml", needs))

	err := Preflight(ctx, reviews(map[string]bool{"patch nodes": true, "watch pods": true}, nil).AuthorizationV1(), DryRunNone, "rbac.yaml", needs)
	assert.Equal(t, ExitCode(err), ExitRefused)
	assert.Error(t, err, "the current user may not patch nodes, watch pods; nothing was changed: bind the roles of rbac.yaml (see the README's Permissions section), or run as a user who may")

	// A check that cannot check refuses.
	err = Preflight(ctx, reviews(nil, errors.New("connection refused")).AuthorizationV1(), DryRunServer, "rbac.yaml", needs)
	assert.Equal(t, ExitCode(err), ExitRefused)
	assert.ErrorContains(t, err, "checking permissions: asking whether the user may patch nodes: connection refused; nothing was changed")

	// A client dry run sends nothing, so asks nothing.
	c := reviews(map[string]bool{"patch nodes": true}, nil)
	assert.NilError(t, Preflight(ctx, c.AuthorizationV1(), DryRunClient, "rbac.yaml", needs))
	assert.Equal(t, len(c.Actions()), 0)
}
