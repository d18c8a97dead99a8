package spoke

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/scrub"
)

// Where the join's token comes from, as `clusteradm get token` takes it:
// a token of the ServiceAccount clusteradm init (and the cluster-manager
// chart's createBootstrapSA) makes, minted for an hour; or, with
// --use-bootstrap-token, the newest bootstrap token Secret clusteradm init
// --use-bootstrap-token (the chart's createBootstrapToken) makes.
const (
	bootstrapSANamespace     = "open-cluster-management"
	bootstrapSAName          = "agent-registration-bootstrap"
	bootstrapTokenSeconds    = 3600
	bootstrapSecretNamespace = "kube-system"
	bootstrapSecretPrefix    = "bootstrap-token-"
	bootstrapSecretSelector  = "app=cluster-manager" //nolint:gosec // G101: a label selector, no credential
)

// The identities a join's token authenticates as, and the label the
// registration agent puts on its CSRs (csrRules says what is approved).
const (
	csrClusterLabel          = "open-cluster-management.io/cluster-name"
	csrBootstrapUserPrefix   = "system:bootstrap:"
	csrBootstrapSAUser       = "system:serviceaccount:" + bootstrapSANamespace + ":" + bootstrapSAName
	csrBootstrapGroup        = "system:bootstrappers:managedcluster"
	csrBootstrapSAGroup      = "system:serviceaccounts:" + bootstrapSANamespace
	clusterARNAnnotation     = ocm.ClusterAnnotationPrefix + "managed-cluster-arn"
	registrationClientSigner = "kubernetes.io/kube-apiserver-client"
)

// JoinCommandReport is what join-command prints: the `clusteradm join` line
// to run on the new cluster and what went into it.
type JoinCommandReport struct {
	api.ReportMeta `json:",inline"`
	DryRun         string `json:"dryRun,omitempty"`
	HubAPIServer   string `json:"hubAPIServer"`
	// Token is REDACTED unless --show-token.
	Token        string       `json:"token"`
	TokenSource  string       `json:"tokenSource"`
	TokenExpires *metav1.Time `json:"tokenExpires,omitempty"`
	// KlusterletAnnotations are the --klusterlet-annotation values.
	KlusterletAnnotations []string `json:"klusterletAnnotations,omitempty"`
	Command               string   `json:"command"`
}

// Subjects is the ManagedCluster the command lets join, for -o name.
func (r JoinCommandReport) Subjects() []string {
	return []string{api.ObjectName(ocm.ManagedClusterKind, r.Metadata.Name)}
}

// joinToken is the bootstrap credential the line carries.
type joinToken struct {
	// Value is "" under a dry run: no token is minted.
	Value   string
	Source  string
	Expires *metav1.Time
	// BootstrapTokenID is the bootstrap token's id ("" for a
	// ServiceAccount token): the agent asks as system:bootstrap:<id>.
	BootstrapTokenID string
}

// joinFacts is what join-command read before planning.
type joinFacts struct {
	// SpokeNamespace is where a Spoke called the cluster's name is ("": none).
	SpokeNamespace string
	// Cluster is the ManagedCluster of that name (nil: none).
	Cluster      *ocm.ManagedCluster
	HubAPIServer string
	Token        joinToken
}

// joinSettings are the flags the plan depends on.
type joinSettings struct {
	Name        string
	BrushIgnore bool
	ShowToken   bool
	DryRun      cli.DryRun
}

// tokenChars is every character of a bootstrap token or a JWT: a line the
// user pastes into a shell must carry nothing else from the server.
var tokenChars = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// refuseTakenName refuses a name a Spoke or a ManagedCluster uses (pure).
func refuseTakenName(name string, f *joinFacts) error {
	if f.SpokeNamespace != "" {
		return exitcode.RefusedErrorf("%s is taken: the Spoke %s/%s registers a cluster under that name; nothing was changed: pick another name (kubectl spoke status %s -n %s shows that one)",
			name, f.SpokeNamespace, name, name, f.SpokeNamespace)
	}
	if mc := f.Cluster; mc != nil {
		if !mc.Spec.HubAcceptsClient {
			return exitcode.RefusedErrorf("a ManagedCluster %s already exists, not accepted: an agent already asks to join as %s; nothing was changed: if it is the cluster you expect (kubectl get csr -l %s=%s), accept it with clusteradm accept --clusters %s; otherwise pick another name",
				name, name, csrClusterLabel, name, name)
		}
		return exitcode.RefusedErrorf("a ManagedCluster %s already exists (a cluster joined under that name); nothing was changed: pick another name (kubectl spoke status %s shows that one)", name, name)
	}
	return nil
}

// planJoin builds the line from what was read (pure); refuseTakenName
// has refused a name in use before the token was minted.
func planJoin(s joinSettings, f joinFacts) (*JoinCommandReport, error) {
	if err := checkHubURL(f.HubAPIServer); err != nil {
		return nil, err
	}
	token := scrub.Redacted
	switch {
	case f.Token.Value == "":
		token = "TOKEN"
	case !tokenChars.MatchString(f.Token.Value):
		return nil, fmt.Errorf("the token from %s holds characters no token has, so it is not printed: check what serves that token on the hub", f.Token.Source)
	case s.ShowToken:
		token = f.Token.Value
	}
	r := &JoinCommandReport{
		ReportMeta: api.NewReportMeta("SpokeJoinCommand", s.Name), DryRun: cli.DryRunName(s.DryRun),
		HubAPIServer: f.HubAPIServer, Token: token, TokenSource: f.Token.Source, TokenExpires: f.Token.Expires,
	}
	args := []string{"clusteradm", "join", "--hub-token", token, "--hub-apiserver", f.HubAPIServer, "--cluster-name", s.Name}
	if s.BrushIgnore {
		// The agent's prefix written out: clusteradm adds it when missing,
		// and the registration agent drops keys without it.
		a := ocm.BrushIgnoreAnnotation + "=true"
		r.KlusterletAnnotations = append(r.KlusterletAnnotations, a)
		args = append(args, "--klusterlet-annotation", a)
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	r.Command = strings.Join(quoted, " ")
	return r, nil
}

// checkHubURL refuses a hub URL clusteradm join cannot use.
func checkHubURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return exitcode.UsageErrorf("the hub's API server URL %q is not an http(s) URL with a host: give it with --hub-apiserver https://HOST:PORT", s)
	}
	if u.User != nil {
		return exitcode.UsageErrorf("the hub's API server URL carries user information, which would print a credential: give it without, with --hub-apiserver https://HOST:PORT")
	}
	return nil
}

// shellSafe are the characters a shell word may hold unquoted.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9@%+=:,./_-]+$`)

// shellQuote is s as one shell word.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// csrDecision is what accept does with a cluster's CSRs.
type csrDecision struct {
	// Approve are the CSRs to approve, each with what the rules saw.
	Approve []judgedCSR
	// Approved: one of the agent's requests is approved already;
	// ApprovedCSR is that one.
	Approved    bool
	ApprovedCSR judgedCSR
	// NoCSR: the cluster registers without one (AWS IRSA).
	NoCSR bool
	// Refused are the cluster's CSRs the rules refuse, and why.
	Refused []judgedCSR
}

// judgedCSR is a CSR with the rules' verdict on it.
type judgedCSR struct {
	CSR     certificatesv1.CertificateSigningRequest
	Verdict csrVerdict
}

// ready tells whether accept can go on: something to approve, or nothing
// that needs it.
func (d csrDecision) ready() bool { return len(d.Approve) > 0 || d.Approved || d.NoCSR }

// state says the decision in words, naming each refused CSR and why.
func (d csrDecision) state(n int) string {
	s := fmt.Sprintf("%d request(s), %d to approve", n, len(d.Approve))
	for _, j := range d.Refused {
		s += "; " + j.refusal()
	}
	return s
}

// hubState says the decision in words while the hub's registration
// controller is to approve the agent's request.
func (d csrDecision) hubState(n int) string {
	s := fmt.Sprintf("%d request(s), %d the agent's, waiting for the hub's registration controller to approve it", n, len(d.Approve))
	for _, j := range d.Refused {
		s += "; " + j.refusal()
	}
	return s
}

// refusal names a refused CSR, why, and what it asks for.
func (j judgedCSR) refusal() string {
	what := "is not approved"
	if approved, _ := approval(&j.CSR); approved {
		what = "was approved by someone else, though it is not the agent's request"
	}
	s := fmt.Sprintf("certificatesigningrequest/%s %s: %s", j.CSR.Name, what, j.Verdict.Reason)
	if j.Verdict.Subject != "" {
		s += " (subject " + j.Verdict.Subject + ")"
	}
	return s
}

// decideCSRs applies the rules to the CSRs of cluster (pure): only the
// request OCM's agent makes, asked with the join's token (csrRules.judge),
// is approved; every other CSR labelled for the cluster is named as
// refused, with why. Like clusteradm accept (without --requesters or
// --skip-approve-check), when the agents' common names differ, several
// agents ask under one name, and nothing is approved (exit 3). Denied ones
// stay denied; one approved by someone else counts only when the rules
// would have approved it.
func decideCSRs(rules csrRules, mc *ocm.ManagedCluster, csrs []certificatesv1.CertificateSigningRequest) (csrDecision, error) {
	if _, ok := mc.Annotations[clusterARNAnnotation]; ok {
		return csrDecision{NoCSR: true}, nil
	}
	var d csrDecision
	var requesters []string
	for i := range csrs {
		c := &csrs[i]
		approved, denied := approval(c)
		if denied {
			continue
		}
		j := judgedCSR{CSR: *c, Verdict: rules.judge(c)}
		if !j.Verdict.OK {
			d.Refused = append(d.Refused, j)
			continue
		}
		if !slices.Contains(requesters, j.Verdict.CommonName) {
			requesters = append(requesters, j.Verdict.CommonName)
		}
		if approved {
			d.Approved, d.ApprovedCSR = true, j
		} else {
			d.Approve = append(d.Approve, j)
		}
	}
	if len(requesters) > 1 {
		slices.Sort(requesters)
		return csrDecision{}, exitcode.RefusedErrorf("the CSRs of %s come from %d requesters (%s): more than one agent asks to join as %s; nothing was approved: see kubectl get csr -l %s=%s, stop the agent that should not join, deny its CSRs, and run clusteradm accept --clusters %s --requesters CN",
			mc.Name, len(requesters), strings.Join(requesters, ", "), mc.Name, csrClusterLabel, mc.Name, mc.Name)
	}
	return d, nil
}

func approval(c *certificatesv1.CertificateSigningRequest) (approved, denied bool) {
	for _, cond := range c.Status.Conditions {
		switch cond.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		}
	}
	return approved, denied
}

// approvalReason is the reason of a CSR's Approved condition: the hub's
// registration controller gives AutoApprovedByHubCSRApprovingController.
func approvalReason(c *certificatesv1.CertificateSigningRequest) string {
	for _, cond := range c.Status.Conditions {
		if cond.Type == certificatesv1.CertificateApproved {
			return cond.Reason
		}
	}
	return ""
}
