package admissionpolicy

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

const (
	acceptPolicy   = "spokekit-spoke-accept-approves-joins"
	lifetimePolicy = "spokekit-join-token-lifetime"
	bootstrapSA    = "system:serviceaccount:open-cluster-management:agent-registration-bootstrap"
	bootstrapSAGrp = "system:serviceaccounts:open-cluster-management"
)

var (
	csrs   = schema.GroupVersionResource{Group: "certificates.k8s.io", Version: "v1", Resource: "certificatesigningrequests"}
	tokens = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	// joiner holds the base roles and both opt-in roles of join-command
	// --accept, bound as docs/permissions.md says.
	joiner = []binding{
		{Role: "spokekit-spoke"},
		{Role: "spokekit-spoke-join", Namespace: "open-cluster-management"},
		{Role: "spokekit-spoke-accept"},
	}
)

// csrObject is a CSR as the registration agent of edge-1 creates it with
// the bootstrap ServiceAccount's token, with edit applied to its fields
// (YAML lines replacing the defaults by key).
func csrObject(conditions string, edit map[string]string) string {
	f := map[string]string{
		"labels":     "{open-cluster-management.io/cluster-name: edge-1}",
		"signerName": "kubernetes.io/kube-apiserver-client",
		"usages":     "[digital signature, key encipherment, client auth]",
		"username":   bootstrapSA,
		"groups":     "[system:serviceaccounts, " + bootstrapSAGrp + ", system:authenticated]",
	}
	for k, v := range edit {
		f[k] = v
	}
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: edge-1-abcde\n")
	if f["labels"] != "" {
		fmt.Fprintf(&b, "  labels: %s\n", f["labels"])
	}
	fmt.Fprintf(&b, "spec:\n  request: %s\n", base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE REQUEST-----\n")))
	for _, k := range []string{"signerName", "usages", "username", "groups"} {
		if f[k] != "" {
			fmt.Fprintf(&b, "  %s: %s\n", k, f[k])
		}
	}
	if conditions != "" {
		fmt.Fprintf(&b, "status:\n  conditions: %s\n", conditions)
	}
	return b.String()
}

const approved = "[{type: Approved, status: 'True', reason: KubectlSpokeAccept}]"

// approve is an UPDATE of certificatesigningrequests/approval that approves
// the CSR with edit applied, by a user with bound roles and rules.
func approve(bound []binding, edit map[string]string, rules ...rbacv1.PolicyRule) request {
	return request{
		Operation: admission.Update, Resource: csrs, Subresource: "approval",
		Object: csrObject(approved, edit), OldObject: csrObject("", edit),
		User: "alice", Bound: bound, Rules: rules,
	}
}

func TestAcceptRoleApprovesTheAgentsCSR(t *testing.T) {
	v := admit(t, approve(joiner, nil))
	assert.DeepEqual(t, v.Denied, []string(nil))
	assert.DeepEqual(t, v.Matched, []string{acceptPolicy})

	// A bootstrap token's identity, and fewer usages, are the agent's too.
	v = admit(t, approve(joiner, map[string]string{
		"username": "system:bootstrap:ab12cd", "groups": "[system:bootstrappers, system:bootstrappers:managedcluster]",
		"usages": "[client auth]",
	}))
	assert.DeepEqual(t, v.Denied, []string(nil))
}

// Each rule broken alone is denied to the role's holder, with a message
// that names the rule. Each was approved before the policy existed.
func TestAcceptRoleApprovesNoOtherCSR(t *testing.T) {
	for _, c := range []struct {
		name string
		edit map[string]string
		want string
	}{
		{"another signer", map[string]string{"signerName": "kubernetes.io/kubelet-serving"}, "the signer of edge-1-abcde is kubernetes.io/kubelet-serving"},
		{"server auth", map[string]string{"usages": "[digital signature, server auth]"}, "asks for usages beyond"},
		{"asked by the user", map[string]string{"username": "alice", "groups": "[system:authenticated]"}, "was asked by alice, not by a join's bootstrap identity"},
		{"a user whose name starts with the ServiceAccount's", map[string]string{"username": bootstrapSA + "-x"}, "was asked by " + bootstrapSA + "-x"},
		{"the ServiceAccount without its group", map[string]string{"groups": "[system:authenticated]"}, "not by a join's bootstrap identity"},
		{"a bootstrap token's user outside the managed-cluster group", map[string]string{"username": "system:bootstrap:ab12cd", "groups": "[system:bootstrappers]"}, "not by a join's bootstrap identity"},
		{"a bootstrap user name that is no token id", map[string]string{"username": "system:bootstrap:ab12cd-x", "groups": "[system:bootstrappers:managedcluster]"}, "not by a join's bootstrap identity"},
		{"no cluster label", map[string]string{"labels": ""}, "has no open-cluster-management.io/cluster-name label"},
		{"a label that names no cluster", map[string]string{"labels": "{open-cluster-management.io/cluster-name: 'Edge 1'}"}, "has no open-cluster-management.io/cluster-name label"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := admit(t, approve(joiner, c.edit))
			assert.Assert(t, v.deniedBy(acceptPolicy), "%+v", v)
			assert.Check(t, is.Contains(strings.Join(v.Denied, "\n"), c.want))
		})
	}
}

// Administrators, the hub's own approver (which holds the signer, not the
// mark) and denials are left alone.
func TestAcceptPolicyLeavesOthersAlone(t *testing.T) {
	evil := map[string]string{"username": "alice", "groups": "[system:authenticated]"}
	v := admit(t, approve(nil, evil, admin))
	assert.DeepEqual(t, v.Matched, []string(nil))

	hubApprover := []rbacv1.PolicyRule{
		{Verbs: []string{"update"}, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests/approval"}},
		{Verbs: []string{"approve"}, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, ResourceNames: []string{"kubernetes.io/kube-apiserver-client"}},
	}
	renewal := map[string]string{"username": "system:open-cluster-management:edge-1:agent1", "groups": "[system:open-cluster-management:edge-1]"}
	v = admit(t, approve(nil, renewal, hubApprover...))
	assert.DeepEqual(t, v.Matched, []string(nil))

	deny := approve(joiner, evil)
	deny.Object = csrObject("[{type: Denied, status: 'True', reason: NotOurs}]", evil)
	v = admit(t, deny)
	assert.DeepEqual(t, v.Matched, []string(nil))
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
