package spoke

import (
	"bytes"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// What OCM's registration agent asks for (open-cluster-management.io/ocm
// v1.0.0, pkg/registration/register/csr: NewCSRDriver's subject, the v1
// CSR control's usages): the hub's own approver (validateCSR) checks the
// same subject, more loosely.
const (
	ocmSubjectPrefix      = "system:open-cluster-management:"
	ocmManagedClustersOrg = ocmSubjectPrefix + "managed-clusters"
)

// agentUsages are the key usages the agent asks for; a request may ask for
// fewer, never others.
var agentUsages = []certificatesv1.KeyUsage{
	certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth,
}

// The subject attributes the agent's request holds (RFC 4519): a request
// naming anything else (OU, serial number, an email attribute) is not the
// agent's.
var (
	oidCommonName     = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidOrganization   = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidSubjectAltName = asn1.ObjectIdentifier{2, 5, 29, 17}
)

const csrRequestBlockType = "CERTIFICATE REQUEST"

// csrRules are what join-command --accept approves: the client certificate
// OCM's registration agent asks for when it joins Cluster, asked with the
// join's own token (Requester, in Group). Anything else labelled for the
// cluster is someone else's request: approving it would sign whatever
// identity its subject names (O=kubeadm:cluster-admins makes a hub admin).
type csrRules struct {
	Cluster string
	// Requester is the user name the join's token authenticates as,
	// matched whole.
	Requester string
	// Group is the group that user is in as a bootstrap identity.
	Group string
}

// csrVerdict is what the rules say of one CSR.
type csrVerdict struct {
	OK bool
	// Reason says why a CSR is not approved ("" when OK).
	Reason string
	// Subject is the request's subject as x509 writes it ("" when it
	// could not be read); CommonName is the agent's requester name.
	Subject    string
	CommonName string
}

// csrRulesFor are the rules of the join whose token came from source (pure):
// a ServiceAccount token authenticates as that account, a bootstrap token
// as system:bootstrap:<token-id>.
func csrRulesFor(cluster string, t joinToken) csrRules {
	if t.BootstrapTokenID != "" {
		return csrRules{Cluster: cluster, Requester: csrBootstrapUserPrefix + t.BootstrapTokenID, Group: csrBootstrapGroup}
	}
	return csrRules{Cluster: cluster, Requester: csrBootstrapSAUser, Group: csrBootstrapSAGroup}
}

// judge decides one CSR (pure). Each rule refuses with a reason a user can
// act on; the first one broken is named.
func (r csrRules) judge(c *certificatesv1.CertificateSigningRequest) csrVerdict {
	refuse := func(v csrVerdict, format string, args ...any) csrVerdict {
		v.OK, v.Reason = false, fmt.Sprintf(format, args...)
		return v
	}
	var v csrVerdict
	if got := c.Labels[csrClusterLabel]; got != r.Cluster {
		return refuse(v, "its label %s is %q, not %q", csrClusterLabel, got, r.Cluster)
	}
	if c.Spec.SignerName != registrationClientSigner {
		return refuse(v, "its signer is %q, not %s", c.Spec.SignerName, registrationClientSigner)
	}
	for _, u := range c.Spec.Usages {
		if !slices.Contains(agentUsages, u) {
			return refuse(v, "it asks for the usage %q; the agent asks only for digital signature, key encipherment and client auth", u)
		}
	}
	if c.Spec.Username != r.Requester {
		return refuse(v, "it was asked by %q, not by the join's token (%s)", c.Spec.Username, r.Requester)
	}
	if !slices.Contains(c.Spec.Groups, r.Group) {
		return refuse(v, "its requester is not in the group %s", r.Group)
	}
	req, err := parseRequest(c.Spec.Request)
	if err != nil {
		return refuse(v, "%v", err)
	}
	v.Subject = req.Subject.String()
	if err := r.checkSubject(req); err != nil {
		return refuse(v, "%v", err)
	}
	if err := checkNoSANs(req); err != nil {
		return refuse(v, "%v", err)
	}
	v.OK, v.CommonName = true, req.Subject.CommonName
	return v
}

// parseRequest reads a request that is one PEM certificate request and
// nothing else, signed by the key it carries.
func parseRequest(data []byte) (*x509.CertificateRequest, error) {
	block, rest := pem.Decode(data)
	if block == nil || block.Type != csrRequestBlockType {
		return nil, fmt.Errorf("its request is not a PEM %s", csrRequestBlockType)
	}
	// pem.Decode skips text before the block: a request with a preamble or
	// a second block is not one the agent wrote.
	if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("-----BEGIN")) || len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("its request holds more than the one PEM %s", csrRequestBlockType)
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("its request cannot be read: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("its request's signature does not verify: %w", err)
	}
	return req, nil
}

// checkSubject wants the agent's subject exactly: one CN naming the
// cluster and an agent, and the two organizations (groups) of a managed
// cluster, nothing else.
func (r csrRules) checkSubject(req *x509.CertificateRequest) error {
	cns := 0
	for _, a := range req.Subject.Names {
		switch {
		case a.Type.Equal(oidCommonName):
			cns++
		case a.Type.Equal(oidOrganization):
		default:
			return fmt.Errorf("its subject names the attribute %s; the agent's names only CN and O", a.Type)
		}
	}
	if cns != 1 {
		return fmt.Errorf("its subject holds %d common names, not one", cns)
	}
	clusterOrg := ocmSubjectPrefix + r.Cluster
	orgs := slices.Sorted(slices.Values(req.Subject.Organization))
	if want := slices.Sorted(slices.Values([]string{clusterOrg, ocmManagedClustersOrg})); !slices.Equal(orgs, want) {
		return fmt.Errorf("its organizations (groups) are %q, not exactly %q", orgs, want)
	}
	agent, ok := strings.CutPrefix(req.Subject.CommonName, clusterOrg+":")
	if !ok || agent == "" || strings.Contains(agent, ":") {
		return fmt.Errorf("its common name %q is not %s:AGENT", req.Subject.CommonName, clusterOrg)
	}
	return nil
}

// checkNoSANs refuses subject alternative names of every kind, those Go
// parses (DNS, IP, email, URI) and those it does not (otherName,
// directoryName): the agent asks for none.
func checkNoSANs(req *x509.CertificateRequest) error {
	if n := len(req.DNSNames) + len(req.IPAddresses) + len(req.EmailAddresses) + len(req.URIs); n > 0 {
		return fmt.Errorf("it asks for %d subject alternative name(s); the agent asks for none", n)
	}
	for _, e := range req.Extensions {
		if e.Id.Equal(oidSubjectAltName) {
			return errors.New("it asks for subject alternative names; the agent asks for none")
		}
	}
	return nil
}
