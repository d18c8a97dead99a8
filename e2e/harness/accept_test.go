package harness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"slices"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
)

// joinCSR is a CSR labelled for edge-1, asked by user in groups for the
// common name cn.
func joinCSR(t *testing.T, name, user, cn string, groups ...string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	assert.NilError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}, key)
	assert.NilError(t, err)
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterNameLabel: "edge-1"}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Username: user, Groups: groups, SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
		},
	}
}

// accepted runs Accept on a hub holding csrs and edge-1's ManagedCluster,
// and names the CSRs it approved.
func accepted(t *testing.T, skipApproveCheck bool, csrs ...*certificatesv1.CertificateSigningRequest) []string {
	t.Helper()
	objs := make([]runtime.Object, len(csrs))
	for i, c := range csrs {
		objs[i] = c
	}
	kube := fake.NewClientset(objs...)
	mc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster", "metadata": map[string]any{"name": "edge-1"}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{managedClusterGVR: "ManagedClusterList"}, mc)
	h := &OCMHub{Cluster: &Cluster{Kube: kube, Dynamic: dyn}}
	_, err := h.Accept(t.Context(), "edge-1", skipApproveCheck)
	assert.NilError(t, err)
	l, err := kube.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
	assert.NilError(t, err)
	var out []string
	for _, c := range l.Items {
		if slices.ContainsFunc(c.Status.Conditions, func(cond certificatesv1.CertificateSigningRequestCondition) bool {
			return cond.Type == certificatesv1.CertificateApproved && cond.Reason == "Accepted"
		}) {
			out = append(out, c.Name)
		}
	}
	return out
}

// The stand-in accepts as clusteradm accept does: the CSRs of the one
// bootstrap requester of the cluster, nothing when two agents ask, and
// every one only with --skip-approve-check (the controller's re-accept).
func TestAcceptApprovesOneBootstrapRequester(t *testing.T) {
	const cn = "system:open-cluster-management:edge-1:agent1"
	agent := func() *certificatesv1.CertificateSigningRequest {
		return joinCSR(t, "edge-1-agent", "system:bootstrap:abc123", cn, bootstrapGroup, "system:authenticated")
	}
	byUser := func() *certificatesv1.CertificateSigningRequest {
		return joinCSR(t, "edge-1-alice", "alice", cn, "system:authenticated")
	}
	outsideGroup := func() *certificatesv1.CertificateSigningRequest {
		return joinCSR(t, "edge-1-nogroup", "system:bootstrap:abc123", cn, "system:authenticated")
	}
	second := func() *certificatesv1.CertificateSigningRequest {
		return joinCSR(t, "edge-1-second", "system:bootstrap:abc123", "system:open-cluster-management:edge-1:agent2", bootstrapGroup)
	}
	assert.Check(t, is.DeepEqual(accepted(t, false, agent(), byUser(), outsideGroup()), []string{"edge-1-agent"}))
	assert.Check(t, is.DeepEqual(accepted(t, false, agent(), second()), []string(nil)), "two requesters: nothing approved")
	assert.Check(t, is.DeepEqual(accepted(t, true, agent(), byUser(), second()), []string{"edge-1-agent", "edge-1-alice", "edge-1-second"}))
}
