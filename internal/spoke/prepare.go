package spoke

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
	"github.com/spokekit/spokekit/internal/localfile"
	"github.com/spokekit/spokekit/internal/spoke/hubclient"
)

// PrepareOptions are the options of `kubectl spoke prepare`.
type PrepareOptions struct {
	OutputFile string
	Overwrite  bool
	DryRun     cli.DryRun
	Output     *cli.Output
	// Revoke deletes what prepare made instead; Spoke and HubKubeconfig
	// name the Spoke whose use of the credential is checked first, Force
	// revokes without that check, or despite it.
	Revoke        bool
	Spoke         string
	HubKubeconfig string
	Force         bool

	names  prepareNames
	f      *cli.Factory
	client kubernetes.Interface
	genericiooptions.IOStreams
}

// PrepareReport is what prepare prints: each object and what it did, and
// the kubeconfig written.
type PrepareReport struct {
	api.ReportMeta `json:",inline"`
	DryRun         string                 `json:"dryRun,omitempty"`
	Steps          []Step                 `json:"steps"`
	OutputFile     string                 `json:"outputFile,omitempty"`
	Credential     *kubeconfig.Credential `json:"credential,omitempty"`
	// Objects are what a dry run would write (the token's data left out).
	Objects []any  `json:"objects,omitempty"`
	Next    string `json:"next,omitempty"`

	subjects []string
}

// Subjects are the objects prepare keeps on the spoke, for -o name.
func (r PrepareReport) Subjects() []string { return r.subjects }

// tokenTimeout bounds the wait for the token controller to fill the
// token Secret, which it does within moments.
const tokenTimeout = time.Minute

// rbacPropagation bounds how long the written identity's permissions may
// take to reach the authorizer before its check fails.
const rbacPropagation = 30 * time.Second

// NewCmdPrepare builds `kubectl spoke prepare`.
func NewCmdPrepare(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &PrepareOptions{Output: cli.NewOutput(), names: defaultPrepareNames, f: f, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "prepare (--output-file FILE | --revoke)",
		Short: "Give a new cluster the identity the hub's join needs, and write its kubeconfig for add; or revoke it",
		Long: cli.LongDesc(`
			Prepare a cluster to be registered as a spoke: run it against the new
			spoke cluster (the kubeconfig flags select it, as with kubectl; an
			admin's kubeconfig, the hub is not asked), and it makes there:

			* the namespace spokekit-system (or the one -n names), marked as
			  prepare's; an existing namespace without that mark is refused
			  (exit 3), since whoever acts in it would reach the account below;
			* the ServiceAccount spokekit-join in it;
			* the ClusterRole spokekit:spoke-join with what the hub's FleetConfig
			  controller does with the stored kubeconfig, in addon and in unified
			  mode (clusteradm join installing the klusterlet operator, the
			  agent's namespace, clusteradm unjoin on removal), and what add and
			  rotate-kubeconfig read to tell the cluster apart; bound to that
			  ServiceAccount only;
			* the Secret spokekit-join-token, of type
			  kubernetes.io/service-account-token: its token does not expire,
			  and lives as long as the Secret and the ServiceAccount.

			Then it writes --output-file (mode 0600, never over an existing file
			without --overwrite): a kubeconfig of the cluster's server and CA as
			this kubeconfig has them, and that token. Before the file is put in
			place it is checked as kubectl spoke add checks it: a long-lived
			credential, and each permission the join needs
			(SelfSubjectAccessReview). Hand it to add on the hub.

			The role is as narrow as the join allows, and still as powerful as
			cluster-admin: the join installs CRDs and the klusterlet operator,
			whose own ClusterRole grants escalate and bind on roles, and creating
			that needs escalate, with which any right can be granted. Keep the
			file as you would an admin kubeconfig; the hub keeps it in a Secret.
			The klusterlet's Default mode is covered; Hosted mode is not.

			Objects of these names that prepare did not make (no label
			app.kubernetes.io/managed-by=kubectl-spoke) are refused (exit 3).
			Running it again changes nothing, reuses the token, and writes the
			file again with --overwrite; a ClusterRole of an older version gets
			this version's rules.

			With --revoke it deletes instead, with the same admin kubeconfig,
			what it made: the token Secret (the token stops working at once),
			the ClusterRoleBinding, the ServiceAccount and the ClusterRole. The
			namespace stays (other tools may keep objects there); objects not
			labelled as kubectl-spoke's are refused (exit 3). Revoke only when
			the hub no longer uses the kubeconfig: in addon mode once the agent
			on the spoke took it over (PivotComplete). Name the spoke's Spoke
			with --spoke NAME --hub-kubeconfig FILE and that is checked first;
			without them, or when the hub still uses it, --revoke refuses
			(exit 3) unless --force is given. Run again, it says nothing is
			left (exit 0).`),
		Example: templates.Examples(`
			# Prepare the new cluster with its admin kubeconfig
			kubectl spoke prepare --kubeconfig spoke-2-admin.kubeconfig --output-file spoke-2.kubeconfig

			# Then, on the hub
			kubectl spoke add spoke-2 --spoke-kubeconfig spoke-2.kubeconfig --values values.yaml

			# See the objects it would make
			kubectl spoke prepare --kubeconfig spoke-2-admin.kubeconfig --output-file spoke-2.kubeconfig --dry-run=client -o yaml

			# Once the agent took spoke-2 over (addon mode), revoke the prepared token
			kubectl spoke prepare --kubeconfig spoke-2-admin.kubeconfig --revoke --spoke spoke-2 --hub-kubeconfig hub.kubeconfig

			# After kubectl spoke remove spoke-2, when the hub is not at hand
			kubectl spoke prepare --kubeconfig spoke-2-admin.kubeconfig --revoke --force`),
		Args:              cli.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              cli.RunE(o, o.Complete),
	}
	fl := cmd.Flags()
	fl.StringVar(&o.OutputFile, "output-file", "", "Where to write the kubeconfig of the prepared identity (mode 0600).")
	fl.BoolVar(&o.Overwrite, "overwrite", false, "Replace --output-file when it exists.")
	fl.BoolVar(&o.Revoke, "revoke", false, "Delete what prepare made on this cluster (its token stops working) instead of making it.")
	fl.StringVar(&o.Spoke, "spoke", "", "With --revoke: the Spoke of this cluster on the hub, checked to no longer use the prepared kubeconfig.")
	fl.StringVar(&o.HubKubeconfig, "hub-kubeconfig", "", "With --spoke: the kubeconfig file of the hub (its current context).")
	fl.BoolVar(&o.Force, "force", false, "With --revoke: revoke without checking the Spoke, or although the hub may still use the kubeconfig.")
	cli.AddDryRunFlag(cmd)
	o.Output.AddFlags(cmd)
	return cmd
}

// Complete reads --dry-run and -n.
func (o *PrepareOptions) Complete(cmd *cobra.Command, _ []string) error {
	var err error
	if o.DryRun, err = cli.GetDryRun(cmd); err != nil {
		return err
	}
	ns, explicit, err := o.f.Namespace()
	if err != nil {
		return exitcode.RefusedErrorf("%w; nothing was changed", err)
	}
	if explicit {
		o.names.Namespace = ns
	}
	return nil
}

// Validate rejects bad input before any request: the output file first.
func (o *PrepareOptions) Validate() error {
	if err := o.Output.Validate(); err != nil {
		return err
	}
	if err := cli.ValidateNames(cli.NamespaceName, o.names.Namespace); err != nil {
		return err
	}
	if o.Revoke {
		return o.validateRevoke()
	}
	if o.Spoke != "" || o.HubKubeconfig != "" || o.Force {
		return exitcode.UsageErrorf("--spoke, --hub-kubeconfig and --force go with --revoke")
	}
	if o.OutputFile == "" {
		return exitcode.UsageErrorf("--output-file is required: the kubeconfig of the prepared identity is written there")
	}
	if _, err := os.Lstat(o.OutputFile); err == nil && !o.Overwrite {
		return exitcode.RefusedErrorf("%s exists; nothing was changed: pass --overwrite to replace it, or name another file", o.OutputFile)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return exitcode.RefusedErrorf("%w; nothing was changed", err)
	}
	if info, err := os.Stat(filepath.Dir(o.OutputFile)); err != nil || !info.IsDir() {
		return exitcode.RefusedErrorf("the directory of %s does not exist; nothing was changed", o.OutputFile)
	}
	return nil
}

// validateRevoke: --revoke writes no file, and a Spoke to check is named
// with the hub it is on.
func (o *PrepareOptions) validateRevoke() error {
	if o.OutputFile != "" || o.Overwrite {
		return exitcode.UsageErrorf("--revoke writes no kubeconfig: --output-file and --overwrite do not go with it")
	}
	if (o.Spoke == "") != (o.HubKubeconfig == "") {
		return exitcode.UsageErrorf("--spoke NAME and --hub-kubeconfig FILE go together: the Spoke is read on that hub")
	}
	if o.Spoke == "" {
		return nil
	}
	if err := cli.ValidateNames(cli.ClusterName, o.Spoke); err != nil {
		return err
	}
	if _, err := os.Stat(o.HubKubeconfig); err != nil {
		return exitcode.RefusedErrorf("--hub-kubeconfig: %w; nothing was deleted", err)
	}
	return nil
}

// Run reads what exists, plans, writes the objects, waits for the token,
// checks the kubeconfig as add would, and writes it; with --revoke it
// deletes them instead.
func (o *PrepareOptions) Run(ctx context.Context) error {
	cfg, err := o.f.ToRESTConfig()
	if err != nil {
		return exitcode.RefusedErrorf("the spoke's kubeconfig: %w; nothing was changed", err)
	}
	if o.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return fmt.Errorf("building the client: %w", err)
	}
	if o.Revoke {
		return o.revoke(ctx)
	}
	cluster, err := clusterOf(cfg)
	if err != nil {
		return err
	}
	facts, err := o.read(ctx, "nothing was changed")
	if err != nil {
		return err
	}
	plan, err := planPrepare(o.names, *facts)
	if err != nil {
		return err
	}
	if err := o.checkAccess(ctx, plan.access(), "nothing was changed"); err != nil {
		return err
	}
	p := cli.NewProgress(o.ErrOut)
	if err := o.apply(ctx, plan, p); err != nil {
		return err
	}
	report := &PrepareReport{
		ReportMeta: o.reportMeta("SpokePrepare"),
		DryRun:     cli.DryRunName(o.DryRun), Steps: plan.steps(o.DryRun), subjects: plan.subjects(),
	}
	if o.DryRun != cli.DryRunNone {
		report.Objects = plan.written()
		report.Next = "run again without --dry-run to make these and write " + o.OutputFile
		return o.print(report)
	}
	token, err := o.waitToken(ctx, p)
	if err != nil {
		return fmt.Errorf("%w; the ServiceAccount and its role are in place: run the same command again", err)
	}
	data, err := clientcmd.Write(joinKubeconfig(cluster, o.names.ServiceAccount, token))
	if err != nil {
		return fmt.Errorf("encoding the kubeconfig: %w", err)
	}
	var credential kubeconfig.Credential
	err = placeFile(o.OutputFile, data, o.Overwrite, func(tmp string) error {
		credential, err = checkAsAdd(ctx, tmp, p)
		return err
	})
	if err != nil {
		return err
	}
	report.Steps = append(report.Steps, Step{"kubeconfig " + o.OutputFile, "written (" + credential.Kind + ", expires " + credential.ExpiryString() + "; passes add's checks)"})
	report.OutputFile, report.Credential = o.OutputFile, &credential
	report.Next = "on the hub: kubectl spoke add NAME --spoke-kubeconfig " + o.OutputFile
	return o.print(report)
}

// checkAccess refuses, before any write, when the current user may not do
// each of needs (under --dry-run=client nothing is asked); unchanged ends
// the refusal.
func (o *PrepareOptions) checkAccess(ctx context.Context, needs []authz.Permission, unchanged string) error {
	if o.DryRun == cli.DryRunClient || len(needs) == 0 {
		return nil
	}
	missing, err := authz.Missing(ctx, o.client.AuthorizationV1(), needs)
	if err != nil {
		return exitcode.RefusedErrorf("checking permissions: %w; %s", err, unchanged)
	}
	if len(missing) > 0 {
		return exitcode.RefusedErrorf("the current user may not %s on this cluster; %s: run prepare with the spoke's admin kubeconfig", strings.Join(missing, ", "), unchanged)
	}
	return nil
}

func (o *PrepareOptions) reportMeta(kind string) api.ReportMeta {
	return api.NewNamespacedReportMeta(kind, o.names.Namespace, o.names.ServiceAccount)
}

func (o *PrepareOptions) print(r *PrepareReport) error {
	if err := o.Output.Print(o.Out, r, func() cli.Table { return stepsTable(r.Steps) }); err != nil {
		return err
	}
	if o.Output.IsTable() && r.Next != "" {
		fmt.Fprintln(o.ErrOut, "Next: "+r.Next)
	}
	return nil
}

// read gets the objects of prepare's names. One that cannot be read means
// prepare cannot tell what it would overwrite or delete: it refuses, its
// message ending with unchanged.
func (o *PrepareOptions) read(ctx context.Context, unchanged string) (*prepareFacts, error) {
	n, c := o.names, o.client
	f := &prepareFacts{}
	var err error
	cannotRead := func(what string, err error) error {
		return exitcode.RefusedErrorf("cannot read %s: %w; %s", what, err, unchanged)
	}
	if f.Namespace, err = found(c.CoreV1().Namespaces().Get(ctx, n.Namespace, metav1.GetOptions{})); err != nil {
		return nil, cannotRead("namespace "+n.Namespace, err)
	}
	if f.Namespace != nil {
		if f.ServiceAccount, err = found(c.CoreV1().ServiceAccounts(n.Namespace).Get(ctx, n.ServiceAccount, metav1.GetOptions{})); err != nil {
			return nil, cannotRead("serviceaccount "+n.Namespace+"/"+n.ServiceAccount, err)
		}
		if f.Token, err = found(c.CoreV1().Secrets(n.Namespace).Get(cli.HideBodies(ctx), n.Token, metav1.GetOptions{})); err != nil {
			return nil, cannotRead("secret "+n.Namespace+"/"+n.Token, err)
		}
	}
	if f.Role, err = found(c.RbacV1().ClusterRoles().Get(ctx, n.Role, metav1.GetOptions{})); err != nil {
		return nil, cannotRead("clusterrole "+n.Role, err)
	}
	if f.Binding, err = found(c.RbacV1().ClusterRoleBindings().Get(ctx, n.Role, metav1.GetOptions{})); err != nil {
		return nil, cannotRead("clusterrolebinding "+n.Role, err)
	}
	return f, nil
}

// found is a Get's object, nil when there is none.
func found[T any](obj *T, err error) (*T, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

// access is what writing the plan needs of the current user.
func (p *preparePlan) access() []authz.Permission {
	var out []authz.Permission
	add := func(a objectAction, group, resource, ns, name string) {
		switch a {
		case objectCreate:
			out = append(out, authz.Permission{Verb: "create", Group: group, Resource: resource, Namespace: ns})
		case objectUpdate:
			out = append(out, authz.Permission{Verb: "update", Group: group, Resource: resource, Namespace: ns, Name: name})
		}
	}
	n := p.Names
	add(p.Namespace.Action, "", "namespaces", "", n.Namespace)
	add(p.ServiceAccount.Action, "", "serviceaccounts", n.Namespace, n.ServiceAccount)
	add(p.Role.Action, rbacv1.GroupName, "clusterroles", "", n.Role)
	add(p.Binding.Action, rbacv1.GroupName, "clusterrolebindings", "", n.Role)
	add(p.Token.Action, "", "secrets", n.Namespace, n.Token)
	return out
}

// apply makes the plan's writes in order (the namespace before what lives in
// it). With --dry-run=client it sends nothing; with server every write is a
// server dry run.
// objectWriter is a typed client of one kind of object (ClusterRoles,
// ClusterRoleBindings).
type objectWriter[T any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// createOrUpdate writes obj as the plan says: created, or updated (the plan
// read it, so its resourceVersion guards the update).
func createOrUpdate[T any](ctx context.Context, w objectWriter[T], a objectAction, obj T, create metav1.CreateOptions, update metav1.UpdateOptions) error {
	var err error
	if a == objectCreate {
		_, err = w.Create(ctx, obj, create)
	} else {
		_, err = w.Update(ctx, obj, update)
	}
	return err
}

func (o *PrepareOptions) apply(ctx context.Context, p *preparePlan, progress *cli.Progress) error {
	if o.DryRun == cli.DryRunClient {
		return nil
	}
	n, c := p.Names, o.client
	create := metav1.CreateOptions{FieldManager: hubclient.FieldManager, DryRun: cli.DryRunOption(o.DryRun)}
	update := metav1.UpdateOptions{FieldManager: hubclient.FieldManager, DryRun: cli.DryRunOption(o.DryRun)}
	var err error
	step := func(what string, a objectAction, write func() error) {
		if err != nil || a == objectUnchanged {
			return
		}
		progress.Update("%s %s", map[objectAction]string{objectCreate: "creating", objectUpdate: "updating"}[a], what)
		if err = write(); apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
			err = fmt.Errorf("%s was created or changed by someone else while this command ran: run the same command again", what)
		} else if err != nil {
			err = fmt.Errorf("writing %s: %w; what came before it is in place: run the same command again", what, err)
		}
	}
	step("namespace "+n.Namespace, p.Namespace.Action, func() error {
		_, err := c.CoreV1().Namespaces().Create(ctx, p.Namespace.Object, create)
		return err
	})
	step("serviceaccount "+n.Namespace+"/"+n.ServiceAccount, p.ServiceAccount.Action, func() error {
		_, err := c.CoreV1().ServiceAccounts(n.Namespace).Create(ctx, p.ServiceAccount.Object, create)
		return err
	})
	step("clusterrole "+n.Role, p.Role.Action, func() error {
		return createOrUpdate(ctx, c.RbacV1().ClusterRoles(), p.Role.Action, p.Role.Object, create, update)
	})
	step("clusterrolebinding "+n.Role, p.Binding.Action, func() error {
		return createOrUpdate(ctx, c.RbacV1().ClusterRoleBindings(), p.Binding.Action, p.Binding.Object, create, update)
	})
	step("secret "+n.Namespace+"/"+n.Token, p.Token.Action, func() error {
		_, err := c.CoreV1().Secrets(n.Namespace).Create(cli.HideBodies(ctx), p.Token.Object, create)
		return err
	})
	return err
}

// waitToken waits until the token controller has put the token into the
// Secret, and returns it.
func (o *PrepareOptions) waitToken(ctx context.Context, p *cli.Progress) (string, error) {
	secrets := o.client.CoreV1().Secrets(o.names.Namespace)
	var token string
	err := cli.WaitFor(cli.HideBodies(ctx), "token of serviceaccount "+o.names.ServiceAccount, oneSecret(secrets, o.names.Token), &corev1.Secret{}, tokenTimeout, p,
		func(objs []any) (bool, string, error) {
			for _, obj := range objs {
				if s, ok := obj.(*corev1.Secret); ok && len(s.Data[corev1.ServiceAccountTokenKey]) > 0 {
					token = string(s.Data[corev1.ServiceAccountTokenKey])
					return true, "issued", nil
				}
			}
			return false, "waiting for the token controller to fill secret " + o.names.Token, nil
		})
	return token, err
}

// oneSecret lists and watches the one Secret name.
func oneSecret(secrets typedcorev1.SecretInterface, name string) cache.ListerWatcher {
	narrow := func(o metav1.ListOptions) metav1.ListOptions {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		return o
	}
	return cli.ListThenWatch(
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return secrets.List(ctx, narrow(o))
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return secrets.Watch(ctx, narrow(o))
		})
}

// checkAsAdd runs on the kubeconfig file at path the checks kubectl spoke
// add runs on it: its credential is long-lived, it reaches the cluster, and
// it may do all the join needs. New RBAC takes a moment to reach the
// authorizer, so the permissions are asked again for a while.
func checkAsAdd(ctx context.Context, path string, p *cli.Progress) (kubeconfig.Credential, error) {
	n := spokeKubeconfig{File: path, MinLifetime: kubeconfig.DefaultMinLifetime}
	if err := n.read(time.Now()); err != nil {
		return kubeconfig.Credential{}, err
	}
	if _, err := n.kc.Reach(ctx); err != nil {
		return kubeconfig.Credential{}, err
	}
	p.Update("checking the prepared identity's permissions")
	var missing []string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, rbacPropagation, true, func(ctx context.Context) (bool, error) {
		var err error
		missing, err = n.kc.MissingPermissions(ctx, preparedAccess())
		return err == nil && len(missing) == 0, err
	})
	if len(missing) > 0 {
		return kubeconfig.Credential{}, fmt.Errorf("the prepared identity still may not %s after %s (an admission webhook or another authorizer may deny it); the objects are in place, the file was not written: run the same command again", strings.Join(missing, ", "), rbacPropagation)
	}
	if err != nil {
		return kubeconfig.Credential{}, fmt.Errorf("checking the prepared identity's permissions: %w; the file was not written", err)
	}
	p.Done("the prepared identity may do what the join needs")
	return n.credential, nil
}

// clusterOf is the cluster stanza of the written kubeconfig: the server and
// CA the admin's kubeconfig uses, inlined.
func clusterOf(cfg *rest.Config) (*clientcmdapi.Cluster, error) {
	if cfg.Insecure {
		return nil, exitcode.RefusedErrorf("the spoke's kubeconfig does not check the server's certificate (insecure-skip-tls-verify): a kubeconfig written from it would not either; nothing was changed: use one with the cluster's CA")
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		var err error
		if ca, _, err = localfile.Read(cfg.CAFile, localfile.MaxSize); err != nil {
			return nil, exitcode.RefusedErrorf("the CA of the spoke's kubeconfig: %w; nothing was changed", err)
		}
	}
	return &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca, TLSServerName: cfg.ServerName}, nil
}

// joinKubeconfig is the kubeconfig of the prepared identity.
func joinKubeconfig(cluster *clientcmdapi.Cluster, user, token string) clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["spoke"] = cluster
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[user] = &clientcmdapi.Context{Cluster: "spoke", AuthInfo: user}
	cfg.CurrentContext = user
	return *cfg
}

// placeFile writes data to path with mode 0600 through a temporary file in
// the same directory, which check vets first. The file is then linked into
// place, which fails when path exists, or with overwrite renamed over it:
// path never holds a partial or unchecked file.
func placeFile(path string, data []byte, overwrite bool, check func(tmp string) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // the temporary name goes either way; once linked, path keeps the file
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := check(tmp.Name()); err != nil {
		return err
	}
	if overwrite {
		err = os.Rename(tmp.Name(), path)
	} else {
		err = os.Link(tmp.Name(), path)
	}
	if errors.Is(err, os.ErrExist) {
		return exitcode.RefusedErrorf("%s was created while this command ran; it was not replaced: pass --overwrite, or name another file", path)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// steps is what the plan did, or under a dry run would do.
func (p *preparePlan) steps(dryRun cli.DryRun) []Step {
	n := p.Names
	say := func(a objectAction, updated, unchanged string) string {
		s := map[objectAction]string{objectCreate: "created", objectUpdate: updated, objectUnchanged: unchanged}[a]
		if dryRun != cli.DryRunNone && a != objectUnchanged {
			return "would be " + s
		}
		return s
	}
	return []Step{
		{"namespace " + n.Namespace, say(p.Namespace.Action, "", "exists")},
		{"serviceaccount " + n.Namespace + "/" + n.ServiceAccount, say(p.ServiceAccount.Action, "", "unchanged")},
		{"clusterrole " + n.Role, say(p.Role.Action, "updated to this version's rules", "unchanged")},
		{"clusterrolebinding " + n.Role, say(p.Binding.Action, "updated to bind the ServiceAccount only", "unchanged")},
		{"secret " + n.Namespace + "/" + n.Token, say(p.Token.Action, "", "reused (its token stays valid)")},
	}
}

// subjects are the objects, as -o name prints them.
func (p *preparePlan) subjects() []string {
	n := p.Names
	return []string{
		"namespace/" + n.Namespace, "serviceaccount/" + n.ServiceAccount,
		"clusterrole.rbac.authorization.k8s.io/" + n.Role, "clusterrolebinding.rbac.authorization.k8s.io/" + n.Role, "secret/" + n.Token,
	}
}

// written are the objects the plan creates or updates, without server
// fields, and no Secret data.
func (p *preparePlan) written() []any {
	var out []any
	keep := func(a objectAction, m *metav1.ObjectMeta, obj any) {
		if a != objectUnchanged {
			m.ManagedFields = nil
			out = append(out, obj)
		}
	}
	ns, sa, role, binding, token := p.Namespace.Object.DeepCopy(), p.ServiceAccount.Object.DeepCopy(), p.Role.Object.DeepCopy(), p.Binding.Object.DeepCopy(), p.Token.Object.DeepCopy()
	token.Data = nil
	keep(p.Namespace.Action, &ns.ObjectMeta, ns)
	keep(p.ServiceAccount.Action, &sa.ObjectMeta, sa)
	keep(p.Role.Action, &role.ObjectMeta, role)
	keep(p.Binding.Action, &binding.ObjectMeta, binding)
	keep(p.Token.Action, &token.ObjectMeta, token)
	return out
}
