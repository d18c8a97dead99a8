package spoke

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"net"
	"net/url"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/spoke/hubclient"
)

// saRules are the rules of a join whose token is the bootstrap
// ServiceAccount's, for edge-1.
var saRules = csrRulesFor("edge-1", joinToken{Source: "ServiceAccount"})

// agentTemplate is the request OCM's registration agent makes for edge-1
// (NewCSRDriver's subject, no SANs), agent name agent1.
func agentTemplate() *x509.CertificateRequest {
	return &x509.CertificateRequest{Subject: pkix.Name{
		Organization: []string{"system:open-cluster-management:edge-1", "system:open-cluster-management:managed-clusters"},
		CommonName:   "system:open-cluster-management:edge-1:agent1",
	}}
}

// requestPEM signs tmpl with a new P-256 key, as the agent does, and
// encodes it as one PEM block.
func requestPEM(t *testing.T, tmpl *x509.CertificateRequest) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	assert.NilError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	assert.NilError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// agentCSR is the CSR object the agent creates for edge-1 with the
// bootstrap ServiceAccount's token, with tmpl's request (nil: the agent's).
func agentCSR(t *testing.T, name string, tmpl *x509.CertificateRequest) certificatesv1.CertificateSigningRequest {
	t.Helper()
	if tmpl == nil {
		tmpl = agentTemplate()
	}
	return certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{csrClusterLabel: "edge-1"}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Username: csrBootstrapSAUser, Groups: []string{"system:serviceaccounts", csrBootstrapSAGroup, "system:authenticated"},
			SignerName: registrationClientSigner, Request: requestPEM(t, tmpl),
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth},
		},
	}
}

// Each rule the agent's request meets, broken alone, refuses the CSR with
// a reason that names the rule; the agent's own request is approved.
func TestJudgeApprovesOnlyTheAgentsRequest(t *testing.T) {
	subject := func(f func(*x509.CertificateRequest)) *x509.CertificateRequest {
		tmpl := agentTemplate()
		f(tmpl)
		return tmpl
	}
	csr := func(f func(*certificatesv1.CertificateSigningRequest), tmpl *x509.CertificateRequest) certificatesv1.CertificateSigningRequest {
		c := agentCSR(t, "edge-1-x", tmpl)
		if f != nil {
			f(&c)
		}
		return c
	}
	spec := func(f func(*certificatesv1.CertificateSigningRequestSpec)) certificatesv1.CertificateSigningRequest {
		return csr(func(c *certificatesv1.CertificateSigningRequest) { f(&c.Spec) }, nil)
	}
	otherNameSAN, err := asn1.Marshal([]asn1.RawValue{{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: []byte{0x06, 0x01, 0x2a, 0xa0, 0x03, 0x0c, 0x01, 0x78}}})
	assert.NilError(t, err)
	badSignature := agentCSR(t, "edge-1-x", nil)
	block, _ := pem.Decode(badSignature.Spec.Request)
	block.Bytes[len(block.Bytes)-1] ^= 0xff
	badSignature.Spec.Request = pem.EncodeToMemory(block)

	for _, c := range []struct {
		name   string
		csr    certificatesv1.CertificateSigningRequest
		reason string
	}{
		{"labelled for another cluster", csr(func(c *certificatesv1.CertificateSigningRequest) { c.Labels[csrClusterLabel] = "edge-2" }, nil), `label open-cluster-management.io/cluster-name is "edge-2", not "edge-1"`},
		{"another signer", spec(func(s *certificatesv1.CertificateSigningRequestSpec) { s.SignerName = "kubernetes.io/kubelet-serving" }), `signer is "kubernetes.io/kubelet-serving"`},
		{"server auth", spec(func(s *certificatesv1.CertificateSigningRequestSpec) {
			s.Usages = append(s.Usages, certificatesv1.UsageServerAuth)
		}), `usage "server auth"`},
		{"a user whose name starts with the ServiceAccount's", spec(func(s *certificatesv1.CertificateSigningRequestSpec) { s.Username += "-x" }), `asked by "system:serviceaccount:open-cluster-management:agent-registration-bootstrap-x"`},
		{"an admin", spec(func(s *certificatesv1.CertificateSigningRequestSpec) { s.Username = "kubernetes-admin" }), `asked by "kubernetes-admin"`},
		{"a bootstrap token's user, when the join's token is the ServiceAccount's", spec(func(s *certificatesv1.CertificateSigningRequestSpec) {
			s.Username, s.Groups = "system:bootstrap:ocmhub", []string{csrBootstrapGroup}
		}), `asked by "system:bootstrap:ocmhub"`},
		{"not in the bootstrap group", spec(func(s *certificatesv1.CertificateSigningRequestSpec) { s.Groups = []string{"system:authenticated"} }), "not in the group system:serviceaccounts:open-cluster-management"},
		{"not PEM", spec(func(s *certificatesv1.CertificateSigningRequestSpec) { s.Request = []byte("not a request") }), "not a PEM CERTIFICATE REQUEST"},
		{"another PEM type", spec(func(s *certificatesv1.CertificateSigningRequestSpec) {
			s.Request = bytes.Replace(s.Request, []byte("CERTIFICATE REQUEST"), []byte("NEW CERTIFICATE REQUEST"), 2)
		}), "not a PEM CERTIFICATE REQUEST"},
		{"a second request after the first", spec(func(s *certificatesv1.CertificateSigningRequestSpec) {
			s.Request = append(s.Request, requestPEM(t, subject(func(r *x509.CertificateRequest) { r.Subject.Organization = []string{"kubeadm:cluster-admins"} }))...)
		}), "more than the one PEM CERTIFICATE REQUEST"},
		{"text before the request", spec(func(s *certificatesv1.CertificateSigningRequestSpec) {
			s.Request = append([]byte("hello\n"), s.Request...)
		}), "more than the one PEM CERTIFICATE REQUEST"},
		{"a signature that does not verify", badSignature, "signature does not verify"},
		{"O=kubeadm:cluster-admins", csr(nil, subject(func(r *x509.CertificateRequest) {
			r.Subject.Organization = []string{"kubeadm:cluster-admins"}
		})), `organizations (groups) are ["kubeadm:cluster-admins"]`},
		{"an organization more", csr(nil, subject(func(r *x509.CertificateRequest) {
			r.Subject.Organization = append(r.Subject.Organization, "system:masters")
		})), "not exactly"},
		{"without the managed-clusters organization", csr(nil, subject(func(r *x509.CertificateRequest) { r.Subject.Organization = r.Subject.Organization[:1] })), "not exactly"},
		{"another cluster's organization", csr(nil, subject(func(r *x509.CertificateRequest) {
			r.Subject.Organization[0] = "system:open-cluster-management:edge-2"
		})), "not exactly"},
		{"another cluster's common name", csr(nil, subject(func(r *x509.CertificateRequest) {
			r.Subject.CommonName = "system:open-cluster-management:edge-2:agent1"
		})), `common name "system:open-cluster-management:edge-2:agent1" is not system:open-cluster-management:edge-1:AGENT`},
		{"no agent name", csr(nil, subject(func(r *x509.CertificateRequest) { r.Subject.CommonName = "system:open-cluster-management:edge-1:" })), "is not system:open-cluster-management:edge-1:AGENT"},
		{"a common name of one more part", csr(nil, subject(func(r *x509.CertificateRequest) {
			r.Subject.CommonName = "system:open-cluster-management:edge-1:agent1:x"
		})), "is not system:open-cluster-management:edge-1:AGENT"},
		{"an organizational unit", csr(nil, subject(func(r *x509.CertificateRequest) { r.Subject.OrganizationalUnit = []string{"ops"} })), "names the attribute 2.5.4.11"},
		{"two common names", csr(nil, subject(func(r *x509.CertificateRequest) {
			// pkix.Name writes one CN: two need the raw sequence.
			seq := r.Subject.ToRDNSequence()
			seq = append(seq, pkix.RelativeDistinguishedNameSET{{Type: oidCommonName, Value: "system:open-cluster-management:edge-1:agent2"}})
			raw, err := asn1.Marshal(seq)
			assert.NilError(t, err)
			r.RawSubject = raw
		})), "2 common names"},
		{"a DNS name", csr(nil, subject(func(r *x509.CertificateRequest) { r.DNSNames = []string{"hub.example.com"} })), "1 subject alternative name(s)"},
		{"an IP address", csr(nil, subject(func(r *x509.CertificateRequest) { r.IPAddresses = []net.IP{net.IPv4(10, 0, 0, 1)} })), "1 subject alternative name(s)"},
		{"an email address", csr(nil, subject(func(r *x509.CertificateRequest) { r.EmailAddresses = []string{"a@example.com"} })), "1 subject alternative name(s)"},
		{"a URI", csr(nil, subject(func(r *x509.CertificateRequest) { r.URIs = []*url.URL{{Scheme: "spiffe", Host: "x"}} })), "1 subject alternative name(s)"},
		{"an otherName Go does not parse", csr(nil, subject(func(r *x509.CertificateRequest) {
			r.ExtraExtensions = []pkix.Extension{{Id: oidSubjectAltName, Value: otherNameSAN}}
		})), "asks for subject alternative names"},
	} {
		v := saRules.judge(&c.csr)
		assert.Check(t, !v.OK, c.name)
		assert.Check(t, is.Contains(v.Reason, c.reason), c.name)
	}

	legit := agentCSR(t, "edge-1-x", nil)
	v := saRules.judge(&legit)
	assert.Check(t, v.OK, v.Reason)
	assert.Check(t, is.Equal(v.CommonName, "system:open-cluster-management:edge-1:agent1"))
	assert.Check(t, is.Equal(v.Subject, "CN=system:open-cluster-management:edge-1:agent1,O=system:open-cluster-management:edge-1+O=system:open-cluster-management:managed-clusters"))
	// Fewer usages than the agent's are fine.
	legit.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}
	assert.Check(t, saRules.judge(&legit).OK)

	// A join with a bootstrap token Secret approves that token's user alone.
	tokenRules := csrRulesFor("edge-1", joinToken{BootstrapTokenID: "ocmhub"})
	byToken := agentCSR(t, "edge-1-y", nil)
	byToken.Spec.Username, byToken.Spec.Groups = "system:bootstrap:ocmhub", []string{"system:bootstrappers", csrBootstrapGroup}
	assert.Check(t, tokenRules.judge(&byToken).OK)
	byToken.Spec.Username = "system:bootstrap:other1"
	assert.Check(t, is.Contains(tokenRules.judge(&byToken).Reason, `asked by "system:bootstrap:other1", not by the join's token (system:bootstrap:ocmhub)`))
	assert.Check(t, is.Contains(saRules.judge(&byToken).Reason, "not by the join's token (system:serviceaccount:open-cluster-management:agent-registration-bootstrap)"))
}

// --accept approves the agent's requests, names the others with why, and
// like clusteradm accept refuses two agents asking under one name.
func TestDecideCSRs(t *testing.T) {
	mc := &ocm.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge-1"}}
	agent := agentCSR(t, "edge-1-a", nil)
	renewed := agentCSR(t, "edge-1-b", nil)
	admin := agentCSR(t, "edge-1-evil", &x509.CertificateRequest{Subject: pkix.Name{CommonName: "mallory\x1b]0;x\a", Organization: []string{"kubeadm:cluster-admins"}}})
	denied := agentCSR(t, "edge-1-denied", nil)
	denied.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied}}
	approved := agentCSR(t, "edge-1-approved", nil)
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved}}
	approvedAdmin := admin
	approvedAdmin.Status.Conditions = approved.Status.Conditions
	tmpl := agentTemplate()
	tmpl.Subject.CommonName = "system:open-cluster-management:edge-1:agent2"
	second := agentCSR(t, "edge-1-second", tmpl)

	names := func(js []judgedCSR) []string {
		var out []string
		for _, j := range js {
			out = append(out, j.CSR.Name)
		}
		return out
	}
	for _, c := range []struct {
		name             string
		csrs             []certificatesv1.CertificateSigningRequest
		approve, refused []string
		ready            bool
	}{
		{"the agent's requests", []certificatesv1.CertificateSigningRequest{agent, renewed}, []string{"edge-1-a", "edge-1-b"}, nil, true},
		{"a request for cluster-admin beside the agent's", []certificatesv1.CertificateSigningRequest{admin, agent}, []string{"edge-1-a"}, []string{"edge-1-evil"}, true},
		{"a request for cluster-admin alone: wait", []certificatesv1.CertificateSigningRequest{admin}, nil, []string{"edge-1-evil"}, false},
		{"one someone else approved counts only when the agent's", []certificatesv1.CertificateSigningRequest{approvedAdmin}, nil, []string{"edge-1-evil"}, false},
		{"already approved", []certificatesv1.CertificateSigningRequest{approved, agent}, []string{"edge-1-a"}, nil, true},
		{"denied stays denied", []certificatesv1.CertificateSigningRequest{denied}, nil, nil, false},
		{"none yet", nil, nil, nil, false},
	} {
		d, err := decideCSRs(saRules, mc, c.csrs)
		assert.NilError(t, err, c.name)
		assert.Check(t, is.DeepEqual(names(d.Approve), c.approve), c.name)
		assert.Check(t, is.DeepEqual(names(d.Refused), c.refused), c.name)
		assert.Check(t, is.Equal(d.ready(), c.ready), c.name)
	}

	// The progress names the refused request, why, and its subject, escaped.
	d, err := decideCSRs(saRules, mc, []certificatesv1.CertificateSigningRequest{admin})
	assert.NilError(t, err)
	var out strings.Builder
	p := cli.NewProgress(&out)
	p.Update("%s", d.state(1))
	assert.Check(t, is.Contains(out.String(), `1 request(s), 0 to approve; certificatesigningrequest/edge-1-evil is not approved: its organizations (groups) are ["kubeadm:cluster-admins"]`))
	assert.Check(t, is.Contains(out.String(), `(subject CN=mallory^[]0\;x\x07,O=kubeadm:cluster-admins)`), out.String())
	assert.Check(t, !strings.ContainsAny(out.String(), "\x1b\a"))

	// Waiting for the hub: the agent's request approved by the hub's
	// registration controller is the one named, with the reason; one for
	// cluster-admin that someone approved is named as not the agent's.
	byHub := agentCSR(t, "edge-1-a", nil)
	byHub.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Reason: "AutoApprovedByHubCSRApprovingController"}}
	d, err = decideCSRs(saRules, mc, []certificatesv1.CertificateSigningRequest{approvedAdmin, byHub})
	assert.NilError(t, err)
	assert.Check(t, d.Approved && d.ApprovedCSR.CSR.Name == "edge-1-a" && approvalReason(&d.ApprovedCSR.CSR) == "AutoApprovedByHubCSRApprovingController", "%+v", d)
	assert.Check(t, is.Contains(d.hubState(2), "certificatesigningrequest/edge-1-evil was approved by someone else, though it is not the agent's request"))
	d, err = decideCSRs(saRules, mc, []certificatesv1.CertificateSigningRequest{agent})
	assert.NilError(t, err)
	assert.Check(t, !d.Approved, "the agent's request is not approved until the hub approves it")
	assert.Check(t, is.Contains(d.hubState(1), "waiting for the hub's registration controller to approve it"))

	// Two agents ask under one name: nothing is approved.
	_, err = decideCSRs(saRules, mc, []certificatesv1.CertificateSigningRequest{agent, second})
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	assert.ErrorContains(t, err, "come from 2 requesters (system:open-cluster-management:edge-1:agent1, system:open-cluster-management:edge-1:agent2)")
	assert.ErrorContains(t, err, "nothing was approved")

	// A cluster registering through AWS IRSA asks for no certificate.
	irsa := &ocm.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge-1", Annotations: map[string]string{clusterARNAnnotation: "arn:aws:eks:x"}}}
	d, err = decideCSRs(saRules, irsa, nil)
	assert.NilError(t, err)
	assert.Check(t, d.ready() && len(d.Approve) == 0)
}

// A CSR that changed before it was approved (a conflict) is decided again
// as read: relabelled for another cluster, it is not approved.
func TestApproveCSRDecidesAgainAfterAConflict(t *testing.T) {
	csr := agentCSR(t, "edge-1-a", nil)
	csr.ResourceVersion = "1" // as read
	relabelled := csr.DeepCopy()
	relabelled.Labels[csrClusterLabel] = "edge-2"
	relabelled.ResourceVersion = "2"
	kube := fake.NewClientset(relabelled)
	updates := 0
	kube.PrependReactor("update", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "approval" {
			return false, nil, nil
		}
		updates++
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}, csr.Name, nil)
	})
	h := &HubClient{hubclient.NewForClients(nil, kube, "")}
	err := h.approveCSR(t.Context(), saRules, &csr)
	assert.Equal(t, exitcode.Of(err), exitcode.Refused, "%v", err)
	assert.ErrorContains(t, err, `certificatesigningrequest/edge-1-a changed since it was read and is not approved: its label open-cluster-management.io/cluster-name is "edge-2"`)
	assert.Equal(t, updates, 1, "no approval after the re-read")
}
