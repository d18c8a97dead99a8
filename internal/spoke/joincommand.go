package spoke

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/util/retry"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/scrub"
)

// joinRBAC names the roles join-command needs beyond the base ones.
const joinRBAC = "kubectl-spoke's rbac.yaml (ClusterRole spokekit-spoke; to mint the join token, spokekit-spoke-join bound with a RoleBinding in namespace " +
	bootstrapSANamespace + "; for --accept, spokekit-spoke-accept; --use-bootstrap-token lists the Secrets of " + bootstrapSecretNamespace + ", which no shipped role grants)"

var csrResource = schema.GroupVersionResource{Group: "certificates.k8s.io", Version: "v1", Resource: "certificatesigningrequests"}

// JoinCommandOptions are the options of `kubectl spoke join-command`.
type JoinCommandOptions struct {
	Name              string
	BrushIgnore       bool
	ShowToken         bool
	UseBootstrapToken bool
	HubAPIServer      string
	Wait              bool
	Accept            bool
	Timeout           time.Duration
	DryRun            cli.DryRun
	Output            *cli.Output

	f *cli.Factory
	genericiooptions.IOStreams
}

// NewCmdJoinCommand builds `kubectl spoke join-command`.
func NewCmdJoinCommand(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &JoinCommandOptions{Timeout: 10 * time.Minute, Output: cli.NewOutput(), f: f, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "join-command NAME",
		Short: "Print the clusteradm join line for a cluster only the hub can be reached from",
		Long: cli.LongDesc(`
			Print the clusteradm join command that registers a cluster with the
			hub as NAME, for a cluster the hub cannot reach but that reaches the
			hub (an out-of-band join): its operator runs the line there. No
			Spoke registers such a cluster: list and status show it as
			OutOfBand, and remove refuses it with the steps to unjoin it.

			The token is the one clusteradm get token gives: a token of the
			ServiceAccount open-cluster-management/agent-registration-bootstrap
			that clusteradm init makes, minted for one hour; or, with
			--use-bootstrap-token, the newest bootstrap token Secret
			(bootstrap-token-*, labelled app=cluster-manager) in kube-system.
			It is printed as REDACTED unless --show-token: anyone who holds it
			can ask to register clusters with this hub. The hub's URL is the
			kubeconfig's server, as clusteradm prints it; give the one the
			cluster reaches with --hub-apiserver.

			--brush-ignore adds the klusterlet annotation brush-ignore=true
			(agent.open-cluster-management.io/brush-ignore on the
			ManagedCluster): PaletteAI then installs nothing on the cluster.

			The line is printed first; --wait then waits until the cluster's
			agent has created its ManagedCluster. --accept (implies --wait)
			accepts it as clusteradm accept does, more strictly: only the client
			certificate request OCM's registration agent makes, asked with the
			printed token, counts (signer kube-apiserver-client; usages digital
			signature, key encipherment, client auth; subject
			CN=system:open-cluster-management:NAME:AGENT with the organizations
			system:open-cluster-management:NAME and
			system:open-cluster-management:managed-clusters and nothing else; no
			subject alternative names), from one agent. It names every other
			request labelled for the cluster, with why it is left alone. A user
			who may approve certificate requests has it approve the agent's; the
			shipped roles may not, and it waits for the hub's registration
			controller to approve it (feature gate ManagedClusterAutoApproval,
			the join's identity among the ClusterManager's autoApproveUsers).
			Then it sets hubAcceptsClient and waits until the cluster has joined
			and is available.

			NAME must be a valid cluster name that no Spoke and no ManagedCluster
			uses (exit 3 otherwise, nothing changed). Minting a token needs a
			role the base ones lack: see docs/permissions.md.`),
		Example: templates.Examples(`
			# The line to run on the new cluster (token redacted)
			kubectl spoke join-command edge-1 --brush-ignore

			# Print the token, wait for the cluster and accept it
			kubectl spoke join-command edge-1 --brush-ignore --show-token --accept --timeout 30m

			# The values as JSON, for a script that passes them on
			kubectl spoke join-command edge-1 --show-token -o json`),
		Args:              cli.ExactArgs(1, "NAME"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              cli.RunE(o, o.Complete),
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.BrushIgnore, "brush-ignore", false, "Add the klusterlet annotation brush-ignore=true, so PaletteAI installs nothing on the cluster.")
	fl.BoolVar(&o.ShowToken, "show-token", false, "Print the token instead of REDACTED.")
	fl.BoolVar(&o.UseBootstrapToken, "use-bootstrap-token", false, "Take the bootstrap token Secret of kube-system instead of minting a ServiceAccount token (a hub set up with clusteradm init --use-bootstrap-token).")
	fl.StringVar(&o.HubAPIServer, "hub-apiserver", "", "The hub's API server URL as the cluster reaches it (default: the kubeconfig's server).")
	fl.BoolVar(&o.Wait, "wait", false, "After printing, wait until the cluster's agent has created its ManagedCluster.")
	fl.BoolVar(&o.Accept, "accept", false, "Wait for the cluster, approve the agent's CSR (or wait for the hub to) and accept it as clusteradm accept does, and wait until it joined and is available.")
	fl.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long --wait and --accept wait (0: no limit).")
	cli.AddDryRunFlag(cmd)
	o.Output.AddFlags(cmd)
	return cmd
}

// Complete reads the name and the dry-run strategy.
func (o *JoinCommandOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Name = args[0]
	o.Wait = o.Wait || o.Accept
	var err error
	o.DryRun, err = cli.GetDryRun(cmd)
	return err
}

// Validate rejects bad input before any request.
func (o *JoinCommandOptions) Validate() error {
	if err := cli.ValidateNames(cli.ClusterName, o.Name); err != nil {
		return err
	}
	if err := o.f.ValidateNamespace(); err != nil {
		return err
	}
	if err := o.Output.Validate(); err != nil {
		return err
	}
	if err := cli.ValidateTimeout(o.Timeout); err != nil {
		return err
	}
	if o.DryRun != cli.DryRunNone && o.Wait {
		return exitcode.UsageErrorf("--dry-run mints no token, so no cluster can join: run --wait or --accept without it")
	}
	if o.HubAPIServer != "" {
		if err := checkHubURL(o.HubAPIServer); err != nil {
			return err
		}
	}
	if o.Name == fleetconfig.HubAsSpokeName {
		return exitcode.RefusedErrorf("%s is the name FleetConfig gives the hub's own cluster; nothing was changed: pick another name", o.Name)
	}
	return nil
}

// Run checks the name, mints the token, prints the line, then waits and
// accepts as asked.
func (o *JoinCommandOptions) Run(ctx context.Context) error {
	hub, err := NewHubClient(ctx, o.f)
	if err != nil {
		return err
	}
	facts, err := o.read(ctx, hub)
	if err != nil {
		return err
	}
	if err := refuseTakenName(o.Name, facts); err != nil {
		return err
	}
	if err := cli.Preflight(ctx, hub.Authz(), o.DryRun, joinRBAC, o.access()); err != nil {
		return err
	}
	if o.DryRun == cli.DryRunNone {
		if facts.Token, err = o.token(ctx, hub); err != nil {
			return err
		}
	}
	r, err := planJoin(joinSettings{Name: o.Name, BrushIgnore: o.BrushIgnore, ShowToken: o.ShowToken, DryRun: o.DryRun}, *facts)
	if err != nil {
		return err
	}
	if err := o.print(r); err != nil {
		return err
	}
	if !o.Wait {
		return nil
	}
	approver := false
	if o.Accept {
		missing, err := authz.Missing(ctx, hub.Authz(), approvalAccess())
		if err != nil {
			return fmt.Errorf("checking whether you may approve the cluster's certificate request: %w", err)
		}
		approver = len(missing) == 0
	}
	return o.waitAndAccept(ctx, hub, r, csrRulesFor(o.Name, facts.Token), approver)
}

// read gathers what the plan decides on: whether the name is taken, and
// the hub's URL.
func (o *JoinCommandOptions) read(ctx context.Context, hub *HubClient) (*joinFacts, error) {
	f := &joinFacts{HubAPIServer: o.HubAPIServer, Token: joinToken{Source: o.tokenSource()}}
	// The Spoke's name is the cluster's, whatever its namespace.
	namespaces, err := hub.SpokeNamespaces(ctx, o.Name)
	if err != nil {
		return nil, exitcode.RefusedErrorf("checking that no Spoke is called %s: %w; nothing was changed", o.Name, err)
	}
	if len(namespaces) > 0 {
		f.SpokeNamespace = namespaces[0]
	}
	if f.Cluster, err = hub.ManagedCluster(ctx, o.Name); err != nil {
		return nil, exitcode.RefusedErrorf("%w; nothing was changed", err)
	}
	if f.HubAPIServer == "" {
		cfg, err := o.f.ToRESTConfig()
		if err != nil {
			return nil, err
		}
		f.HubAPIServer = cfg.Host
		if !strings.Contains(f.HubAPIServer, "://") {
			f.HubAPIServer = "https://" + f.HubAPIServer
		}
	}
	return f, nil
}

func (o *JoinCommandOptions) tokenSource() string {
	if o.UseBootstrapToken {
		return "bootstrap token Secret in " + bootstrapSecretNamespace
	}
	return "ServiceAccount " + bootstrapSANamespace + "/" + bootstrapSAName
}

// access is what the command will do on the hub, checked before the token
// is minted.
func (o *JoinCommandOptions) access() []authz.Permission {
	var out []authz.Permission
	if o.UseBootstrapToken {
		out = append(out, access("list", secretResource, bootstrapSecretNamespace))
	} else {
		out = append(out, authz.Permission{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: bootstrapSANamespace, Name: bootstrapSAName})
	}
	if o.Wait {
		out = append(out, access("list", ocm.ManagedClusterResource, ""), access("watch", ocm.ManagedClusterResource, ""))
	}
	if o.Accept {
		out = append(out,
			access("get", csrResource, ""), access("list", csrResource, ""), access("watch", csrResource, ""),
			authz.Permission{Verb: "patch", Group: ocm.ManagedClusterResource.Group, Resource: ocm.ManagedClusterResource.Resource, Name: o.Name},
			// What the registration webhook asks before hubAcceptsClient changes.
			authz.Permission{Verb: "update", Group: "register.open-cluster-management.io", Resource: "managedclusters", Subresource: "accept", Name: o.Name})
	}
	return out
}

// approvalAccess is what approving a join's CSR takes. No shipped role
// grants it: RBAC cannot narrow it to OCM's registration subjects, so
// whoever holds it may have a client certificate signed for any subject.
// Without it, --accept leaves approval to the hub's registration
// controller, which checks the subject itself.
func approvalAccess() []authz.Permission {
	return []authz.Permission{
		{Verb: "update", Group: csrResource.Group, Resource: csrResource.Resource, Subresource: "approval"},
		{Verb: "approve", Group: csrResource.Group, Resource: "signers", Name: registrationClientSigner},
	}
}

// token obtains the join's token as clusteradm get token does. Request
// logs never show it.
func (o *JoinCommandOptions) token(ctx context.Context, hub *HubClient) (joinToken, error) {
	t := joinToken{Source: o.tokenSource()}
	ctx = cli.HideBodies(ctx)
	if o.UseBootstrapToken {
		secrets, err := hub.Secrets(ctx, bootstrapSecretNamespace, bootstrapSecretSelector)
		if err != nil {
			return t, exitcode.RefusedErrorf("listing the bootstrap token Secrets of %s: %w; nothing was changed", bootstrapSecretNamespace, err)
		}
		s := newestBootstrapSecret(secrets)
		if s == nil {
			return t, exitcode.RefusedErrorf("there is no bootstrap token Secret (%s*, labelled %s) in %s; nothing was changed: run without --use-bootstrap-token to mint a ServiceAccount token",
				bootstrapSecretPrefix, bootstrapSecretSelector, bootstrapSecretNamespace)
		}
		t.Source = "Secret " + bootstrapSecretNamespace + "/" + s.Name
		t.BootstrapTokenID = string(s.Data["token-id"])
		t.Value = t.BootstrapTokenID + "." + string(s.Data["token-secret"])
		if exp, err := time.Parse(time.RFC3339, string(s.Data["expiration"])); err == nil {
			t.Expires = &metav1.Time{Time: exp}
		}
		return t, nil
	}
	tr, err := hub.CreateToken(ctx, bootstrapSANamespace, bootstrapSAName, bootstrapTokenSeconds)
	if apierrors.IsNotFound(err) {
		return t, exitcode.RefusedErrorf("there is no ServiceAccount %s/%s (clusteradm init makes it); nothing was changed: a hub set up with clusteradm init --use-bootstrap-token has a bootstrap token Secret instead: run again with --use-bootstrap-token",
			bootstrapSANamespace, bootstrapSAName)
	}
	if err != nil {
		return t, fmt.Errorf("minting a token of ServiceAccount %s/%s: %w", bootstrapSANamespace, bootstrapSAName, err)
	}
	t.Value, t.Expires = tr.Status.Token, &tr.Status.ExpirationTimestamp
	return t, nil
}

// newestBootstrapSecret is the newest bootstrap token Secret, as
// clusteradm picks it.
func newestBootstrapSecret(secrets []corev1.Secret) *corev1.Secret {
	var newest *corev1.Secret
	for i := range secrets {
		s := &secrets[i]
		if strings.HasPrefix(s.Name, bootstrapSecretPrefix) && (newest == nil || newest.CreationTimestamp.Before(&s.CreationTimestamp)) {
			newest = s
		}
	}
	return newest
}

// print writes the line (or the report with -o) to stdout, and in the
// table view what to do with it to stderr.
func (o *JoinCommandOptions) print(r *JoinCommandReport) error {
	if !o.Output.IsTable() {
		return o.Output.Print(o.Out, r, nil)
	}
	fmt.Fprintln(o.Out, r.Command)
	fmt.Fprintf(o.ErrOut, "Run it on the cluster %s, with a kubeconfig of that cluster (clusteradm installs the klusterlet there).\n", o.Name)
	switch {
	case r.DryRun != "":
		fmt.Fprintln(o.ErrOut, "Dry run: no token was minted; run again without --dry-run.")
	case r.Token == scrub.Redacted:
		fmt.Fprintf(o.ErrOut, "The token (%s) is not shown: run again with --show-token to print it; anyone who holds it can ask to register clusters with this hub.\n", r.TokenSource)
	}
	if r.TokenExpires != nil && r.DryRun == "" {
		fmt.Fprintf(o.ErrOut, "The token expires at %s: the cluster must join before.\n", r.TokenExpires.UTC().Format(time.RFC3339))
	}
	if u, err := url.Parse(r.HubAPIServer); err == nil && loopback(u.Hostname()) {
		fmt.Fprintf(o.ErrOut, "Warning: %s is this machine's own address; give the URL the cluster reaches the hub at with --hub-apiserver.\n", r.HubAPIServer)
	}
	if !o.Accept && r.DryRun == "" {
		fmt.Fprintf(o.ErrOut, "Next: once it ran, check the request (kubectl get csr -l %s=%s) and accept it: clusteradm accept --clusters %s (or run this with --accept to wait and accept).\n",
			csrClusterLabel, o.Name, o.Name)
	}
	return nil
}

func loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// waitAndAccept waits for the cluster's ManagedCluster and, with --accept,
// accepts it and waits until it joined.
func (o *JoinCommandOptions) waitAndAccept(ctx context.Context, hub *HubClient, r *JoinCommandReport, rules csrRules, approver bool) error {
	d := cli.NewDeadline(o.Timeout)
	p := cli.NewProgress(o.ErrOut)
	var mc ocm.ManagedCluster
	err := cli.WaitFor(ctx, "ManagedCluster "+o.Name, hub.WatchNamed(ocm.ManagedClusterResource, "", o.Name), &unstructured.Unstructured{}, d.Left(), p,
		func(objs []any) (bool, string, error) {
			found, err := one(objs, &mc)
			if err != nil || !found {
				return false, "not there yet: run the printed command on the cluster", err
			}
			return true, "created by the cluster's agent", nil
		})
	if err == nil && o.Accept {
		err = hub.acceptCluster(ctx, rules, &mc, approver, d, p)
	}
	if err != nil && exitcode.Of(err) == exitcode.TimedOut {
		until := ""
		if r.TokenExpires != nil {
			until = " (the token is valid until " + r.TokenExpires.UTC().Format(time.RFC3339) + ")"
		}
		if o.Accept && !approver {
			return fmt.Errorf("%w; the cluster may still join%s: see kubectl spoke status %s. You may not approve certificate requests, so the hub's registration controller approves the agent's: "+
				"it does only with its feature gate ManagedClusterAutoApproval on and the join's identity (%s) among its auto-approved users (ClusterManager spec.registrationConfiguration); otherwise a cluster administrator runs this command with --accept, or clusteradm accept --clusters %s",
				err, until, o.Name, rules.Requester, o.Name)
		}
		return fmt.Errorf("%w; the cluster may still join%s: see kubectl spoke status %s, and accept it with clusteradm accept --clusters %s", err, until, o.Name, o.Name)
	}
	return err
}

// acceptCluster does what clusteradm accept does, for the agent's request
// alone: approves the cluster's CSRs the rules allow (an approver), or waits
// until the hub's registration controller approved one, sets
// hubAcceptsClient, then waits until the cluster joined and is available.
// The CSRs it refuses are named, with why.
func (h *HubClient) acceptCluster(ctx context.Context, rules csrRules, mc *ocm.ManagedCluster, approver bool, d cli.Deadline, p *cli.Progress) error {
	var decision csrDecision
	err := cli.WaitFor(ctx, "a certificate signing request of "+mc.Name, h.WatchLabelled(csrResource, csrClusterLabel+"="+mc.Name), &unstructured.Unstructured{}, d.Left(), p,
		func(objs []any) (bool, string, error) {
			csrs := make([]certificatesv1.CertificateSigningRequest, len(objs))
			for i := range objs {
				if err := api.DecodeUnstructured(objs[i].(*unstructured.Unstructured), &csrs[i]); err != nil {
					return false, "", err
				}
			}
			var err error
			if decision, err = decideCSRs(rules, mc, csrs); err != nil {
				return false, "", err
			}
			if approver {
				return decision.ready(), decision.state(len(csrs)), nil
			}
			return decision.Approved || decision.NoCSR, decision.hubState(len(csrs)), nil
		})
	if err != nil {
		return err
	}
	for _, j := range decision.Refused {
		p.Printf("%s", j.refusal())
	}
	if approver {
		for i := range decision.Approve {
			c := &decision.Approve[i].CSR
			if err := h.approveCSR(ctx, rules, c); err != nil {
				return err
			}
			p.Printf("certificatesigningrequest/%s approved (subject %s)", c.Name, decision.Approve[i].Verdict.Subject)
		}
	} else if !decision.NoCSR {
		c := decision.ApprovedCSR
		p.Printf("certificatesigningrequest/%s approved, reason %s (subject %s)", c.CSR.Name, approvalReason(&c.CSR), c.Verdict.Subject)
	}
	if err := h.AcceptCluster(ctx, mc.Name); err != nil {
		return err
	}
	p.Printf("managedcluster/%s accepted (hubAcceptsClient: true)", mc.Name)
	return h.waitClusterJoined(ctx, mc.Name, d, p)
}

// approveCSR approves one CSR the rules allowed. When it changed
// meanwhile, it is read again and decided again: left alone once someone
// approved or denied it, refused when the rules no longer allow it.
func (h *HubClient) approveCSR(ctx context.Context, rules csrRules, csr *certificatesv1.CertificateSigningRequest) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if approved, denied := approval(csr); approved || denied {
			return nil
		}
		if v := rules.judge(csr); !v.OK {
			return exitcode.RefusedErrorf("certificatesigningrequest/%s changed since it was read and is not approved: %s", csr.Name, v.Reason)
		}
		c := csr.DeepCopy()
		c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "KubectlSpokeAccept",
			Message: "approved by kubectl spoke join-command --accept", LastUpdateTime: metav1.Now(),
		})
		err := h.UpdateCSRApproval(ctx, c)
		if apierrors.IsConflict(err) {
			fresh, gerr := h.CSR(ctx, c.Name)
			if gerr != nil {
				return fmt.Errorf("reading certificatesigningrequest %s again after a conflict: %w", c.Name, gerr)
			}
			*csr = *fresh
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("approving certificatesigningrequest %s: %w", csr.Name, err)
	}
	return nil
}
