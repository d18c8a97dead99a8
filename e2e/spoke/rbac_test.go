//go:build e2e

package spoke

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/spokekit/spokekit/e2e/fixture"
	"github.com/spokekit/spokekit/e2e/harness"
)

// bindings bind the spoke plugin's roles to the ServiceAccount spokekit-ops/operator:
// the cluster-wide one everywhere, the release one and the opt-in Secret
// writer in the release namespace only. The per-Secret Roles and the
// per-cluster ManifestWork bindings are made as the refused commands say.
var spokeBindings = fixture.Docs(
	fixture.Binding("", "spokekit-spoke-operator", "spokekit-spoke", "spokekit-ops/operator"),
	fixture.Binding(releaseNamespace, "spokekit-spoke-operator", "spokekit-spoke-release", "spokekit-ops/operator"),
	fixture.Binding(releaseNamespace, "spokekit-spoke-secret-writer-operator", "spokekit-spoke-secret-writer", "spokekit-ops/operator"),
)

// otherSecrets are Secrets of the release namespace the plugin did not
// write for the operator: the Hub's kubeconfig, a Helm release record and
// another cluster's kubeconfig.
const otherSecrets = `
apiVersion: v1
kind: Secret
metadata: {name: least-hub-kubeconfig, namespace: mural-system}
stringData: {kubeconfig: the hub's}
---
apiVersion: v1
kind: Secret
metadata: {name: sh.helm.release.v1.least.v1, namespace: mural-system, labels: {owner: helm, name: least}}
type: helm.sh/release.v1
stringData: {release: the release record}
---
apiVersion: v1
kind: Secret
metadata: {name: least-other-kubeconfig, namespace: mural-system}
stringData: {kubeconfig: another cluster's}
`

// TestLeastPrivilege runs every command as a ServiceAccount bound to only
// the roles of plugins/kubectl-spoke/rbac.yaml (with its admission policy),
// granting the one Secret or namespace a command asks for when it refuses;
// tries each escalation the roles once allowed and sees it denied; then
// takes one verb away and shows the writing command refuses before it
// changes anything.
func TestLeastPrivilege(t *testing.T) {
	roles, err := harness.PluginRBAC("spoke")
	assert.NilError(t, err)
	policy, err := harness.PluginManifest("spoke", "admission-policy.yaml")
	assert.NilError(t, err)
	assert.NilError(t, hub.ApplyYAML(ctx(t), policy+"\n---\n"+roles+"\n---\n"+spokeBindings+"\n---\n"+otherSecrets))
	as, err := hub.ServiceAccountCommand(ctx(t), t.TempDir(), "spokekit-ops", "operator")
	assert.NilError(t, err)
	admin := hub.For(t.TempDir())
	canPatch := []string{"patch", "spokes.fleetconfig.open-cluster-management.io", "-n", releaseNamespace}
	assert.NilError(t, as.WaitCanI(ctx(t), true, canPatch...))
	run := func(args ...string) harness.Result {
		t.Helper()
		forgetEarlierTestsClusters(t)
		r := harness.Kubectl(t, as, append([]string{"spoke", "-n", releaseNamespace}, args...)...)
		return r
	}
	// granted runs a command that first refuses for want of a narrow grant,
	// makes the grant it prints as an administrator, and runs it again.
	var asked []string
	granted := func(args ...string) {
		t.Helper()
		r := run(args...)
		if r.ExitCode == 3 && len(harness.Grants(r.Stderr)) > 0 {
			asked = append(asked, harness.Grants(r.Stderr)[0][2])
			assert.NilError(t, admin.RunGrants(ctx(t), r.Stderr, as))
			r = run(args...)
		}
		assert.Equal(t, r.ExitCode, 0, "%v: %s", args, r)
	}
	values := writeFile(t, "values.yaml", valuesFile)
	rotated := writeKubeconfig(t, signedCert(t, spoke1, "rotated-rbac", time.Now().Add(2*365*24*time.Hour)))

	// No grant for the Secret yet: add refuses before it writes anything.
	r := run("add", "least", "--spoke-kubeconfig", spoke1.Kubeconfig, "--values", values, "--apply")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "may not read secret mural-system/least-kubeconfig"), r)
	assert.Check(t, is.Contains(r.Stderr, "kubectl create role spokekit-spoke:least-kubeconfig -n mural-system --verb get,update --resource secrets --resource-name least-kubeconfig"), r)
	assert.Check(t, !secretExists(t, "least"))
	assert.Check(t, spokeObject(t, "least") == nil)
	assert.Equal(t, readFile(t, values), valuesFile)

	for _, args := range [][]string{
		{"add", "least", "--spoke-kubeconfig", spoke1.Kubeconfig, "--values", values, "--apply", "--wait", "--timeout", "2m"},
		{"list"},
		{"get", "least", "-o", "wide"},
		{"status", "least"},
		{"set", "least", "logVerbosity=4"},
		{"rotate-kubeconfig", "least", "--spoke-kubeconfig", rotated},
		{"rotate-kubeconfig", "least", "--spoke-kubeconfig", rotated, "--secret", "least-kubeconfig-2027"},
	} {
		granted(args...)
	}
	t.Run("out-of-scope Spoke writes are denied", func(t *testing.T) {
		before := spokeObject(t, "least")
		patch := func(p string) []string {
			return []string{"patch", "spokes.fleetconfig.open-cluster-management.io", "least", "-n", releaseNamespace, "--type", "merge", "-p", p}
		}
		for what, p := range map[string]string{
			"klusterlet values: the agent's image": `{"spec":{"klusterlet":{"values":{"images":{"registry":"evil.example"}}}}}`,
			"klusterlet valuesFrom":                `{"spec":{"klusterlet":{"valuesFrom":{"name":"evil-values","key":"values.yaml"}}}}`,
			"proxyUrl":                             `{"spec":{"proxyUrl":"http://proxy.evil.example:3128"}}`,
			"proxyCa":                              `{"spec":{"proxyCa":"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}}`,
			"addOns[].deploymentConfig":            `{"spec":{"addOns":[{"configName":"least-addon","deploymentConfig":{"customizedVariables":[{"name":"IMAGE","value":"evil.example/agent"}]}}]}}`,
			"secretReference to a foreign Secret":  `{"spec":{"kubeconfig":{"secretReference":{"name":"least-other-kubeconfig"}}}}`,
			"secretReference to the Hub's Secret":  `{"spec":{"kubeconfig":{"secretReference":{"name":"least-hub-kubeconfig"}}}}`,
		} {
			assert.NilError(t, as.WaitDenied(ctx(t), "spokekit-spoke-fields", patch(p)...))
			r := harness.Kubectl(t, as, patch(p)...)
			assert.Check(t, r.ExitCode != 0 && strings.Contains(r.Stderr, "denied request") && strings.Contains(r.Stderr, "spokekit-spoke-fields"), "%s: %s", what, r)
			t.Logf("%s: denied: %s", what, strings.TrimSpace(r.Stderr))
		}
		assert.DeepEqual(t, spokeObject(t, "least").Object["spec"], before.Object["spec"])
	})
	for _, args := range [][]string{
		{"remove", "least", "--values", values, "--wait", "--timeout", "2m"},
		{"add", "least-force", "--spoke-kubeconfig", spoke1.Kubeconfig, "--apply"},
		{"force-remove", "least-force", "--yes", "--even-if-reachable", "--timeout", "2m"},
	} {
		granted(args...)
	}
	assert.Equal(t, readFile(t, values), valuesFile)
	// Each narrow grant was asked for by the command that needed it.
	assert.DeepEqual(t, asked, []string{"spokekit-spoke:least-kubeconfig", "spokekit-spoke-works", "spokekit-spoke:least-kubeconfig-2027", "spokekit-spoke:least-force-kubeconfig"})

	t.Run("escalations are denied", func(t *testing.T) {
		denied := func(why string, args ...string) {
			t.Helper()
			r := harness.Kubectl(t, as, args...)
			assert.Check(t, r.ExitCode != 0, "%s: allowed: %s", why, r)
			assert.Check(t, strings.Contains(r.Stderr, "forbidden") || strings.Contains(r.Stderr, "denied request"), "%s: %s", why, r)
			t.Logf("%s: denied: %s", why, strings.TrimSpace(r.Stderr))
		}
		token := writeFile(t, "token.yaml", `apiVersion: v1
kind: Secret
metadata:
  name: least-token
  namespace: mural-system
  annotations: {kubernetes.io/service-account.name: default}
type: kubernetes.io/service-account-token
`)
		denied("mint a token: create a service-account-token Secret", "create", "-f", token)
		r := harness.Kubectl(t, admin, "get", "secret", "least-token", "-n", releaseNamespace)
		assert.Check(t, r.ExitCode != 0, "the token Secret was created: %s", r)
		denied("read a token Secret", "get", "secret", "least-token", "-n", releaseNamespace)
		denied("ask for a token", "create", "token", "default", "-n", releaseNamespace)
		denied("list the release namespace's Secrets", "get", "secrets", "-n", releaseNamespace)
		denied("list every Secret", "get", "secrets", "-A")
		denied("read the Hub's kubeconfig Secret", "get", "secret", "least-hub-kubeconfig", "-n", releaseNamespace)
		denied("read Helm's release Secret", "get", "secret", "sh.helm.release.v1.least.v1", "-n", releaseNamespace)
		denied("read another cluster's kubeconfig Secret", "get", "secret", "least-other-kubeconfig", "-n", releaseNamespace)
		helm := writeFile(t, "helm.yaml", `apiVersion: v1
kind: Secret
metadata: {name: sh.helm.release.v1.least.v1, namespace: mural-system, labels: {owner: helm, name: least}}
type: helm.sh/release.v1
stringData: {release: rewritten}
`)
		denied("update Helm's release Secret", "replace", "-f", helm)
		denied("patch Helm's release Secret", "label", "secret", "sh.helm.release.v1.least.v1", "-n", releaseNamespace, "status=deployed", "--overwrite")
		denied("plant the next Helm release record", "create", "secret", "generic", "sh.helm.release.v1.least.v2", "-n", releaseNamespace, "--type", "helm.sh/release.v1", "--from-literal", "release=planted")
		denied("create an unlabelled Secret", "create", "secret", "generic", "least-planted", "-n", releaseNamespace, "--from-literal", "a=b")
		denied("list ManifestWorks everywhere", "get", "manifestworks.work.open-cluster-management.io", "-A")
		denied("list ManifestWorks of an unbound cluster namespace", "get", "manifestworks.work.open-cluster-management.io", "-n", "spokekit-ops")
	})

	// Without create on Spokes, add --apply refuses before it writes the secret.
	fewer, err := harness.WithoutVerb(roles, "verbs: [get, list, watch, create, patch, delete]", "create")
	assert.NilError(t, err)
	assert.NilError(t, hub.ApplyYAML(ctx(t), fewer))
	t.Cleanup(func() { assert.Check(t, hub.ApplyYAML(ctx(t), roles)) })
	canCreate := []string{"create", "spokes.fleetconfig.open-cluster-management.io", "-n", releaseNamespace}
	assert.NilError(t, as.WaitCanI(ctx(t), false, canCreate...))
	r = run("add", "least-2", "--spoke-kubeconfig", spoke1.Kubeconfig, "--values", values, "--apply")
	if r.ExitCode == 3 && len(harness.Grants(r.Stderr)) > 0 {
		assert.NilError(t, admin.RunGrants(ctx(t), r.Stderr, as))
		r = run("add", "least-2", "--spoke-kubeconfig", spoke1.Kubeconfig, "--values", values, "--apply")
	}
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "may not create spokes.fleetconfig.open-cluster-management.io in namespace mural-system; nothing was changed"), r)
	assert.Check(t, is.Contains(r.Stderr, "spokekit-spoke-release"), r)
	assert.Check(t, !secretExists(t, "least-2"))
	assert.Equal(t, readFile(t, values), valuesFile)
	assert.Check(t, spokeObject(t, "least-2") == nil)
}

// csrClusterLabel is the label OCM's agent puts on its request, naming
// the cluster it joins as.
const csrClusterLabel = "open-cluster-management.io/cluster-name"

// clusterAdminCSR asks the hub for a client certificate for the subject
// O=kubeadm:cluster-admins, labelled for cluster as the agent labels its
// request, with the usages the agent asks for, as the holder of token. It
// returns the CSR's name.
func clusterAdminCSR(t *testing.T, cluster, token string) string {
	t.Helper()
	cfg := &rest.Config{
		Host: hub.Config.Host, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: hub.Config.CAData, CAFile: hub.Config.CAFile},
	}
	kube, err := kubernetes.NewForConfig(cfg)
	assert.NilError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	assert.NilError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "mallory", Organization: []string{"kubeadm:cluster-admins"}},
	}, key)
	assert.NilError(t, err)
	csr, err := kube.CertificatesV1().CertificateSigningRequests().Create(ctx(t), &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: cluster + "-", Labels: map[string]string{csrClusterLabel: cluster}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	t.Cleanup(func() {
		err := hub.Kube.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), csr.Name, metav1.DeleteOptions{})
		assert.Check(t, err)
	})
	return csr.Name
}

// approvedCSR tells whether the CSR name carries an Approved condition.
func approvedCSR(t *testing.T, name string) bool {
	t.Helper()
	csr, err := hub.Kube.CertificatesV1().CertificateSigningRequests().Get(ctx(t), name, metav1.GetOptions{})
	assert.NilError(t, err)
	return slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
		return c.Type == certificatesv1.CertificateApproved
	})
}

// TestLeastPrivilegeJoin joins a cluster out of band as a ServiceAccount
// bound to the base roles and the opt-in spokekit-spoke-join and
// spokekit-spoke-accept, with admission-policy.yaml applied, on a hub
// configured to approve joins itself (harness AutoApproveJoins). A year's
// join token is denied. A request for O=kubeadm:cluster-admins, made with
// the printed token and labelled for the cluster before its agent starts,
// cannot be approved by hand (the roles hold no approval; the old
// spokekit-spoke-accept approved it), is never approved by the hub's
// registration controller, and is named and left by join-command --accept,
// which sees the hub approve the agent's own request; the cluster joins.
func TestLeastPrivilegeJoin(t *testing.T) {
	const name = "edge-least"
	t.Cleanup(func() { unjoinByHand(t, name) })
	roles, err := harness.PluginRBAC("spoke")
	assert.NilError(t, err)
	policy, err := harness.PluginManifest("spoke", "admission-policy.yaml")
	assert.NilError(t, err)
	assert.NilError(t, hub.ApplyYAML(ctx(t), policy+"\n---\n"+roles+"\n---\n"+joinerBindings+"\n---\n"+optInBindings))
	autoApproveJoins(t)
	as, err := hub.ServiceAccountCommand(ctx(t), t.TempDir(), "spokekit-ops", "joiner")
	assert.NilError(t, err)
	assert.NilError(t, as.WaitCanI(ctx(t), true, "create", "serviceaccounts/agent-registration-bootstrap", "--subresource", "token", "-n", harness.BootstrapSANamespace))
	assert.NilError(t, as.WaitCanI(ctx(t), true, "patch", "managedclusters.cluster.open-cluster-management.io"))

	// A TokenRequest stores nothing, so waiting on the real one changes
	// nothing either.
	year := []string{"create", "token", "agent-registration-bootstrap", "-n", harness.BootstrapSANamespace, "--duration", "8760h"}
	assert.NilError(t, as.WaitDeniedRequest(ctx(t), "spokekit-join-token-lifetime", year...))
	r := harness.Kubectl(t, as, year...)
	assert.Check(t, r.ExitCode != 0 && strings.Contains(r.Stderr, "denied request") && strings.Contains(r.Stderr, "spokekit-join-token-lifetime"), r)
	assert.Equal(t, r.Stdout, "", r)

	s, v := startJoinCommand(t, as, name)
	evil := clusterAdminCSR(t, name, v.Token)
	// Join plus accept by hand: the request the join's token made for
	// cluster-admins cannot be approved.
	r = harness.Kubectl(t, as, "certificate", "approve", evil)
	assert.Check(t, r.ExitCode != 0 && strings.Contains(r.Stderr, "forbidden"), r)
	assert.Check(t, !approvedCSR(t, evil), "%s approved by hand", evil)

	r = finishJoin(t, s, v, name, spoke2)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stderr, "certificatesigningrequest/"+evil+" is not approved: "), r)
	assert.Check(t, is.Contains(r.Stderr, "O=kubeadm:cluster-admins"), r)
	assert.Check(t, is.Regexp(`certificatesigningrequest/\S+ approved, reason AutoApprovedByHubCSRApprovingController \(subject CN=system:open-cluster-management:`+name+`:`, r.Stderr), r)
	assert.Check(t, is.Regexp(`ManagedCluster `+name+`: JOINED True, AVAILABLE True`, r.Stderr), r)
	// The hub had the whole join to approve it, and did not.
	assert.Check(t, !approvedCSR(t, evil), "%s approved", evil)
}

// autoApproveJoins configures the hub to approve joins itself, as a hub
// that relies on the shipped roles is configured, until the test ends.
func autoApproveJoins(t *testing.T) {
	t.Helper()
	restore, err := hub.AutoApproveJoins(ctx(t))
	assert.NilError(t, err)
	t.Cleanup(func() { assert.Check(t, restore()) })
}
