package admissionpolicy

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

const (
	lifetimePolicy = "spokekit-join-token-lifetime"
)

var (
	tokens = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	// joiner holds the base roles and both opt-in roles of join-command
	// --accept, bound as docs/permissions.md says.
	joiner = []binding{
		{Role: "spokekit-spoke"},
		{Role: "spokekit-spoke-join", Namespace: "open-cluster-management"},
		{Role: "spokekit-spoke-accept"},
	}
)

// No shipped role approves a certificate request, nor holds the signer's
// approve verb: with both, a user who may create a request (anyone holding
// the join token) has a client certificate signed for any subject, and
// neither RBAC nor a policy's CEL can read the subject the request names.
// The hub's registration controller approves the agent's. Every shipped
// role was bound together: spokekit-spoke-accept held both before.
func TestNoShippedRoleApprovesACertificateRequest(t *testing.T) {
	s := load(t)
	var all []binding
	for name := range s.roles {
		all = append(all, binding{Role: name})
	}
	for _, attrs := range []authorizer.AttributesRecord{
		{Verb: "update", APIGroup: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: "approval", Name: "edge-1-abcde", ResourceRequest: true},
		{Verb: "approve", APIGroup: "certificates.k8s.io", Resource: "signers", Name: "kubernetes.io/kube-apiserver-client", ResourceRequest: true},
	} {
		d, _, err := (&rbacStub{roles: s.roles, bound: all}).Authorize(t.Context(), attrs)
		assert.NilError(t, err)
		assert.Check(t, d != authorizer.DecisionAllow, "a shipped role may %s %s/%s", attrs.Verb, attrs.Resource, attrs.Subresource)
	}
}

// mint is a TokenRequest for agent-registration-bootstrap lasting seconds
// (0: not given), by a user with bound roles and rules.
func mint(seconds int, bound []binding, rules ...rbacv1.PolicyRule) request {
	spec := "{}"
	if seconds > 0 {
		spec = fmt.Sprintf("{expirationSeconds: %d}", seconds)
	}
	return request{
		Operation: admission.Create, Resource: tokens, Subresource: "token", Namespace: "open-cluster-management",
		Name:   "agent-registration-bootstrap",
		Object: "apiVersion: authentication.k8s.io/v1\nkind: TokenRequest\nmetadata: {name: agent-registration-bootstrap}\nspec: " + spec + "\n",
		User:   "alice", Bound: bound, Rules: rules,
	}
}

func TestJoinTokenLastsAnHourAtMost(t *testing.T) {
	for _, seconds := range []int{3600, 600, 0} {
		v := admit(t, mint(seconds, joiner))
		assert.DeepEqual(t, v.Denied, []string(nil))
		assert.DeepEqual(t, v.Matched, []string{lifetimePolicy})
	}
	v := admit(t, mint(8760*3600, joiner))
	assert.Assert(t, v.deniedBy(lifetimePolicy), "%+v", v)
	assert.Check(t, is.Contains(v.Denied[0], "it lasts at most 3600 seconds, not 31536000"))
	v = admit(t, mint(3601, joiner))
	assert.Assert(t, v.deniedBy(lifetimePolicy), "%+v", v)

	// Administrators are exempt; other accounts' tokens are not its business.
	v = admit(t, mint(8760*3600, nil, admin))
	assert.DeepEqual(t, v.Matched, []string(nil))
	other := mint(8760*3600, joiner)
	other.Name = "fleetconfig-controller"
	v = admit(t, other)
	assert.DeepEqual(t, v.Matched, []string(nil))
}
