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

	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/exitcode"
)

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
	needs := []authz.Permission{{Verb: "patch", Resource: "nodes"}, {Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "web"}, {Verb: "watch", Resource: "pods"}}

	assert.NilError(t, Preflight(ctx, reviews(nil, nil).AuthorizationV1(), DryRunNone, "rbac.yaml", needs))

	err := Preflight(ctx, reviews(map[string]bool{"patch nodes": true, "watch pods": true}, nil).AuthorizationV1(), DryRunNone, "rbac.yaml", needs)
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	assert.Error(t, err, "the current user may not patch nodes, watch pods; nothing was changed: bind the roles of rbac.yaml (see docs/permissions.md), or run as a user who may")

	// A check that cannot check refuses.
	err = Preflight(ctx, reviews(nil, errors.New("connection refused")).AuthorizationV1(), DryRunServer, "rbac.yaml", needs)
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	assert.ErrorContains(t, err, "checking permissions: asking whether the user may patch nodes: connection refused; nothing was changed")

	// A client dry run sends nothing, so asks nothing.
	c := reviews(map[string]bool{"patch nodes": true}, nil)
	assert.NilError(t, Preflight(ctx, c.AuthorizationV1(), DryRunClient, "rbac.yaml", needs))
	assert.Equal(t, len(c.Actions()), 0)
}
