package authz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
)

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		a    Permission
		want string
	}{
		{Permission{Verb: "patch", Resource: "nodes"}, "patch nodes"},
		{Permission{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "web"}, "create pods/eviction in namespace web"},
		{Permission{Verb: "delete", Group: "fleetconfig.open-cluster-management.io", Resource: "spokes", Namespace: "mural-system"},
			"delete spokes.fleetconfig.open-cluster-management.io in namespace mural-system"},
		{Permission{Verb: "patch", Group: "cluster.x-k8s.io", Resource: "clusters", Name: "lab", Namespace: "dynamo-prod"}, "patch clusters.cluster.x-k8s.io lab in namespace dynamo-prod"},
	} {
		assert.Equal(t, Describe(tc.a), tc.want)
	}
}

func TestUniqueSortsAndDropsRepeats(t *testing.T) {
	got := Unique([]Permission{
		{Verb: "watch", Resource: "pods"}, {Verb: "patch", Resource: "nodes"}, {Verb: "watch", Resource: "pods"},
		{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "b"},
		{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "a"},
	})
	var words []string
	for _, a := range got {
		words = append(words, Describe(a))
	}
	assert.DeepEqual(t, words, []string{"patch nodes", "watch pods", "create pods/eviction in namespace a", "create pods/eviction in namespace b"})
}

func TestMissingNamesDeniedInOrder(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = r.Spec.ResourceAttributes.Verb != "patch"
		return true, r, nil
	})
	got, err := Missing(context.Background(), client.AuthorizationV1(), []Permission{
		{Verb: "patch", Resource: "nodes"}, {Verb: "get", Resource: "nodes"}, {Verb: "patch", Resource: "clusters", Group: "cluster.x-k8s.io"},
	})
	assert.NilError(t, err)
	assert.DeepEqual(t, got, []string{"patch nodes", "patch clusters.cluster.x-k8s.io"})
}

// A preflight asks some forty reviews: one at a time, each waits a round
// trip. This server answers none until several are in flight together
// (the fake clientset cannot tell: it runs its reactors one at a time).
func TestMissingAsksTogether(t *testing.T) {
	const together = 4
	var arrived sync.WaitGroup
	arrived.Add(together)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review authorizationv1.SelfSubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		arrived.Done()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			http.Error(w, "the reviews were asked one at a time", http.StatusServiceUnavailable)
			return
		}
		review.Status.Allowed = true
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))
	defer srv.Close()
	client, err := authorizationclient.NewForConfig(&rest.Config{Host: srv.URL, QPS: 100, Burst: 100, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	assert.NilError(t, err)
	needs := make([]Permission, together)
	for i := range needs {
		needs[i] = Permission{Verb: "get", Resource: "pods", Namespace: fmt.Sprint("ns-", i)}
	}
	got, err := Missing(context.Background(), client, needs)
	assert.NilError(t, err)
	assert.Check(t, is.Len(got, 0))
}

func TestMissingFailsWithTheReviewThatFailed(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "selfsubjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	_, err := Missing(context.Background(), client.AuthorizationV1(), []Permission{{Verb: "list", Resource: "secrets", Namespace: "x"}})
	assert.ErrorContains(t, err, "asking whether the user may list secrets in namespace x: connection refused")
}
