package authz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
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
		{
			Permission{Verb: "delete", Group: "fleetconfig.open-cluster-management.io", Resource: "spokes", Namespace: "mural-system"},
			"delete spokes.fleetconfig.open-cluster-management.io in namespace mural-system",
		},
		{Permission{Verb: "patch", Group: "cluster.x-k8s.io", Resource: "clusters", Name: "lab", Namespace: "dynamo-prod"}, "patch clusters.cluster.x-k8s.io lab in namespace dynamo-prod"},
	} {
		assert.Equal(t, Describe(tc.a), tc.want)
	}
}

func TestUniqueSortsAndDropsRepeats(t *testing.T) {
	got := Unique([]Permission{
		{Verb: "watch", Resource: "pods"},
		{Verb: "patch", Resource: "nodes"},
		{Verb: "watch", Resource: "pods"},
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

// rulesClient answers rules reviews with rules (incomplete when said so)
// and access reviews with allowed; it records what was asked.
func rulesClient(rules []authorizationv1.ResourceRule, incomplete bool, allowed func(authorizationv1.ResourceAttributes) bool) *fake.Clientset {
	client := fake.NewClientset()
	client.PrependReactor("create", "selfsubjectrulesreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectRulesReview)
		r.Status = authorizationv1.SubjectRulesReviewStatus{ResourceRules: rules, Incomplete: incomplete}
		return true, r, nil
	})
	client.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = allowed(*r.Spec.ResourceAttributes)
		return true, r, nil
	})
	return client
}

// asked names each review sent: "rules NS" or the permission in words.
func asked(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		switch r := a.(k8stesting.CreateAction).GetObject().(type) {
		case *authorizationv1.SelfSubjectRulesReview:
			out = append(out, "rules "+r.Spec.Namespace)
		case *authorizationv1.SelfSubjectAccessReview:
			out = append(out, Describe(*r.Spec.ResourceAttributes))
		}
	}
	slices.Sort(out)
	return out
}

var inMural = []Permission{
	{Verb: "get", Group: "fleetconfig.open-cluster-management.io", Resource: "spokes", Namespace: "mural"},
	{Verb: "create", Group: "fleetconfig.open-cluster-management.io", Resource: "spokes", Namespace: "mural"},
	{Verb: "update", Resource: "secrets", Namespace: "mural", Name: "spoke-1-kubeconfig"},
	{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "mural"},
}

// Several permissions in one namespace are one rules review when its rules
// grant them all; a cluster-wide one is still an access review.
func TestMissingAsksANamespaceOnce(t *testing.T) {
	client := rulesClient([]authorizationv1.ResourceRule{
		{Verbs: []string{"get", "create"}, APIGroups: []string{"fleetconfig.open-cluster-management.io"}, Resources: []string{"spokes"}},
		{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"spoke-1-kubeconfig"}},
		{Verbs: []string{"create"}, APIGroups: []string{"*"}, Resources: []string{"*/eviction"}},
	}, false, func(authorizationv1.ResourceAttributes) bool { return true })
	got, err := Missing(context.Background(), client.AuthorizationV1(), append(slices.Clone(inMural), Permission{Verb: "get", Resource: "nodes"}))
	assert.NilError(t, err)
	assert.Check(t, is.Len(got, 0))
	assert.Check(t, is.DeepEqual(asked(client), []string{"get nodes", "rules mural"}))
}

// What the rules do not grant is not missing on their word: an access
// review decides (a rule of another name, verb, group or subresource grants
// nothing).
func TestMissingAsksWhatTheRulesDoNotGrant(t *testing.T) {
	client := rulesClient([]authorizationv1.ResourceRule{
		{Verbs: []string{"get"}, APIGroups: []string{"fleetconfig.open-cluster-management.io"}, Resources: []string{"spokes"}},
		{Verbs: []string{"update"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"other"}},
		{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods"}},
		{Verbs: []string{"create"}, APIGroups: []string{"apps"}, Resources: []string{"spokes"}},
	}, false, func(a authorizationv1.ResourceAttributes) bool { return a.Resource == "secrets" })
	got, err := Missing(context.Background(), client.AuthorizationV1(), inMural)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(got, []string{
		"create pods/eviction in namespace mural",
		"create spokes.fleetconfig.open-cluster-management.io in namespace mural",
	}))
	assert.Check(t, is.DeepEqual(asked(client), []string{
		"create pods/eviction in namespace mural",
		"create spokes.fleetconfig.open-cluster-management.io in namespace mural",
		"rules mural",
		"update secrets spoke-1-kubeconfig in namespace mural",
	}))
}

// Rules the server says are incomplete (a webhook authorizer cannot list
// its own) allow nothing: every permission of the namespace is asked, and
// a denied one is missing even though a rule seemed to grant it.
func TestMissingDoesNotTrustIncompleteRules(t *testing.T) {
	client := rulesClient([]authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
		true, func(a authorizationv1.ResourceAttributes) bool { return a.Verb != "create" })
	got, err := Missing(context.Background(), client.AuthorizationV1(), inMural)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(got, []string{
		"create pods/eviction in namespace mural",
		"create spokes.fleetconfig.open-cluster-management.io in namespace mural",
	}))
	assert.Check(t, is.Len(asked(client), len(inMural)+1))
}

// A rules review that fails hands its namespace to the access reviews; one
// of those failing fails the check (the caller refuses).
func TestMissingFallsBackWhenTheRulesReviewFails(t *testing.T) {
	client := rulesClient(nil, false, func(authorizationv1.ResourceAttributes) bool { return true })
	client.PrependReactor("create", "selfsubjectrulesreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the server could not find the requested resource")
	})
	got, err := Missing(context.Background(), client.AuthorizationV1(), inMural)
	assert.NilError(t, err)
	assert.Check(t, is.Len(got, 0))
	assert.Check(t, is.Len(asked(client), len(inMural)+1), "the rules review, then every permission")

	client.PrependReactor("create", "selfsubjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	_, err = Missing(context.Background(), client.AuthorizationV1(), inMural)
	assert.ErrorContains(t, err, "connection refused")
}
