package admissionpolicy

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

var secrets = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// secretWriter is a user bound only to spokekit-spoke-secret-writer (and the
// base spoke roles) in the release namespace.
var secretWriter = []binding{
	{Role: "spokekit-spoke"},
	{Role: "spokekit-spoke-release", Namespace: "mural-system"},
	{Role: "spokekit-spoke-secret-writer", Namespace: "mural-system"},
}

// createSecret is a CREATE of one Secret in mural-system by alice.
func createSecret(bound []binding, object string, rules ...rbacv1.PolicyRule) request {
	return request{
		Operation: admission.Create, Resource: secrets, Namespace: "mural-system",
		Object: object, User: "alice", Bound: bound, Rules: rules,
	}
}

const kubeconfigSecret = `
apiVersion: v1
kind: Secret
metadata:
  name: spoke-1-kubeconfig
  namespace: mural-system
  labels: {app.kubernetes.io/managed-by: kubectl-spoke}
type: Opaque
data: {kubeconfig: YQ==}
`

func TestSecretWriterCreatesKubectlSpokesSecret(t *testing.T) {
	v := admit(t, createSecret(secretWriter, kubeconfigSecret))
	assert.DeepEqual(t, v.Denied, []string(nil))
	assert.DeepEqual(t, v.Matched, []string{"spokekit-spoke-secret-writer"})
}

func TestSecretWriterCreatesNothingElse(t *testing.T) {
	for name, object := range map[string]string{
		"a Helm release record": `
apiVersion: v1
kind: Secret
metadata:
  name: sh.helm.release.v1.mural.v9
  labels: {owner: helm, name: mural, version: "9"}
type: helm.sh/release.v1
`,
		"kubectl-spoke's label and another": `
apiVersion: v1
kind: Secret
metadata:
  name: spoke-1-kubeconfig
  labels: {app.kubernetes.io/managed-by: kubectl-spoke, app: webhook}
type: Opaque
`,
		"no label": `
apiVersion: v1
kind: Secret
metadata: {name: spoke-1-kubeconfig}
type: Opaque
`,
		"a TLS Secret": `
apiVersion: v1
kind: Secret
metadata:
  name: webhook-tls
  labels: {app.kubernetes.io/managed-by: kubectl-spoke}
type: kubernetes.io/tls
`,
		"an annotation": `
apiVersion: v1
kind: Secret
metadata:
  name: spoke-1-kubeconfig
  labels: {app.kubernetes.io/managed-by: kubectl-spoke}
  annotations: {meta.helm.sh/release-name: mural}
type: Opaque
`,
		"an owner": `
apiVersion: v1
kind: Secret
metadata:
  name: spoke-1-kubeconfig
  labels: {app.kubernetes.io/managed-by: kubectl-spoke}
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: x, uid: "1"}]
type: Opaque
`,
	} {
		t.Run(name, func(t *testing.T) {
			v := admit(t, createSecret(secretWriter, object))
			assert.Assert(t, v.deniedBy("spokekit-spoke-secret-writer"), "%+v", v)
		})
	}
}

func TestSecretWriterCreatesOnlyKubeconfigSecretNames(t *testing.T) {
	labelled := func(name string) string {
		return strings.Replace(kubeconfigSecret, "name: spoke-1-kubeconfig", "name: "+name, 1)
	}
	for _, name := range []string{"spoke-1-kubeconfig", "spoke-1-kubeconfig-2027", "spoke-1-kubeconfig-2027.05"} {
		t.Run(name, func(t *testing.T) {
			v := admit(t, createSecret(secretWriter, labelled(name)))
			assert.DeepEqual(t, v.Denied, []string(nil))
		})
	}
	for _, name := range []string{"sh.helm.release.v1.mural.v9", "sh.helm.release.v1.x-kubeconfig", "edge.eu-kubeconfig", "webhook-tls", "kubeconfig", "-kubeconfig", "spoke-1-kubeconfigx"} {
		t.Run(name, func(t *testing.T) {
			v := admit(t, createSecret(secretWriter, labelled(name)))
			assert.Assert(t, v.deniedBy("spokekit-spoke-secret-writer"), "%+v", v)
		})
	}
}

// Reading every Secret of the namespace is no licence to plant one: the
// role's holder who may also list them is narrowed all the same.
func TestSecretWriterWhoMayListSecretsIsNarrowedToo(t *testing.T) {
	list := rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"secrets"}}
	v := admit(t, createSecret(secretWriter, `
apiVersion: v1
kind: Secret
metadata:
  name: sh.helm.release.v1.mural.v9
  labels: {owner: helm, name: mural, version: "9"}
type: helm.sh/release.v1
`, list))
	assert.Assert(t, v.deniedBy("spokekit-spoke-secret-writer"), "%+v", v)
}

// An administrator (who may escalate ClusterRoles, and so grant themselves
// anything) keeps creating any Secret, as helm does.
func TestSecretWriterPolicyLeavesAdministratorsAlone(t *testing.T) {
	v := admit(t, createSecret(nil, `
apiVersion: v1
kind: Secret
metadata:
  name: sh.helm.release.v1.mural.v9
  labels: {owner: helm, name: mural, version: "9"}
type: helm.sh/release.v1
`, admin))
	assert.DeepEqual(t, v.Denied, []string(nil))
}

// Who never held the writer's mark is not narrowed by its policy.
func TestSecretWriterPolicyLeavesOthersAlone(t *testing.T) {
	other := rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"secrets"}}
	v := admit(t, createSecret(nil, `
apiVersion: v1
kind: Secret
metadata: {name: webhook-tls}
type: kubernetes.io/tls
`, other))
	assert.DeepEqual(t, v.Denied, []string(nil))
	assert.DeepEqual(t, v.Matched, []string(nil))
}

const tokenSecret = `
apiVersion: v1
kind: Secret
metadata:
  name: minted
  annotations: {kubernetes.io/service-account.name: fleetconfig-controller}
type: kubernetes.io/service-account-token
`

func TestNoTokenMinting(t *testing.T) {
	createSecrets := rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"secrets"}}
	mint := func(name string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{name}}
	}
	t.Run("denied to a writer of Secrets", func(t *testing.T) {
		v := admit(t, createSecret(nil, tokenSecret, createSecrets))
		assert.Assert(t, v.deniedBy("spokekit-no-token-minting"), "%+v", v)
	})
	t.Run("denied to the secret-writer role", func(t *testing.T) {
		v := admit(t, createSecret(secretWriter, tokenSecret))
		assert.Assert(t, v.deniedBy("spokekit-no-token-minting"), "%+v", v)
	})
	t.Run("denied for another account than the one it may mint", func(t *testing.T) {
		v := admit(t, createSecret(nil, tokenSecret, createSecrets, mint("default")))
		assert.Assert(t, v.deniedBy("spokekit-no-token-minting"), "%+v", v)
	})
	t.Run("denied with no account named", func(t *testing.T) {
		v := admit(t, createSecret(nil, `
apiVersion: v1
kind: Secret
metadata: {name: minted}
type: kubernetes.io/service-account-token
`, createSecrets, mint("")))
		assert.Assert(t, v.deniedBy("spokekit-no-token-minting"), "%+v", v)
	})
	t.Run("allowed to who may mint that account's token", func(t *testing.T) {
		v := admit(t, createSecret(nil, tokenSecret, createSecrets, mint("fleetconfig-controller")))
		assert.DeepEqual(t, v.Denied, []string(nil))
		assert.DeepEqual(t, v.Matched, []string{"spokekit-no-token-minting"})
	})
	t.Run("other Secrets are not its business", func(t *testing.T) {
		v := admit(t, createSecret(nil, kubeconfigSecret, createSecrets))
		assert.DeepEqual(t, v.Matched, []string(nil))
	})
}
