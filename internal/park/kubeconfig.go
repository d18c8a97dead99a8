package park

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
)

// The lifetimes a --role token may be asked for: the TokenRequest API's
// least, and a year, past which a "short-lived" credential is not one.
const (
	MinTokenDuration     = 10 * time.Minute
	MaxTokenDuration     = 365 * 24 * time.Hour
	DefaultTokenDuration = 8 * time.Hour
)

// The kinds of credential park kubeconfig writes.
const (
	CredentialAdmin = "admin"
	CredentialToken = "token"
)

// KubeconfigReport is what park kubeconfig did (or, under a dry run, would
// do): the file it wrote and, with --role, what it made in the workload
// cluster, or with --revoke what it deleted there. It never holds the
// credential.
type KubeconfigReport struct {
	api.ReportMeta `json:",inline"`
	DryRun         string `json:"dryRun,omitempty"`
	// Revoke is set by --revoke: Objects are deleted, no file is written.
	Revoke     bool   `json:"revoke,omitempty"`
	OutputFile string `json:"outputFile,omitempty"`
	// Source is where the admin kubeconfig was read: the cluster's
	// NAME-kubeconfig Secret.
	Source     string `json:"source"`
	Server     string `json:"server"`
	Credential string `json:"credential,omitempty"`
	// Role, User, ServiceAccount and Expires describe a --role credential:
	// User is the management cluster's user it is for.
	Role           string           `json:"role,omitempty"`
	User           string           `json:"user,omitempty"`
	ServiceAccount string           `json:"serviceAccount,omitempty"`
	Expires        *metav1.Time     `json:"expires,omitempty"`
	Objects        []WorkloadObject `json:"objects,omitempty"`
}

// Subjects is the Cluster whose kubeconfig this is, for -o name.
func (r KubeconfigReport) Subjects() []string {
	return []string{api.ObjectName(capi.ClusterKind, r.Metadata.Name)}
}

// KubeconfigTable is the human view: one row per object made or reused in
// the workload cluster, and the file.
func KubeconfigTable(r KubeconfigReport) cli.Table {
	t := cli.Table{Columns: []cli.Column{{Name: "ACTION"}, {Name: "KIND"}, {Name: "NAMESPACE"}, {Name: "NAME"}, {Name: "DETAIL"}}}
	for _, o := range r.Objects {
		t.Rows = append(t.Rows, []string{o.Action, o.Kind, orDash(o.Namespace), o.Name, o.Detail})
	}
	if r.Revoke {
		return t
	}
	what := "admin credential of the cluster, does not expire"
	if r.Credential == CredentialToken {
		what = "token of ServiceAccount " + r.ServiceAccount + " bound to ClusterRole " + r.Role
		if r.Expires != nil {
			what += ", expires " + r.Expires.UTC().Format(time.RFC3339)
		}
	}
	t.Rows = append(t.Rows, []string{"write", "kubeconfig", "-", r.OutputFile, what + " (server " + r.Server + ")"})
	return t
}

// KubeconfigOptions are the options of `kubectl park kubeconfig`.
type KubeconfigOptions struct {
	genericiooptions.IOStreams
	Output     *cli.Output
	Name       string
	Namespace  string
	OutputFile string
	Overwrite  bool
	Role       string
	Duration   time.Duration
	Revoke     bool
	DryRun     cli.DryRun

	durationSet bool
	f           *cli.Factory
	progress    *cli.Progress
}

// NewCmdKubeconfig builds `kubectl park kubeconfig NAME`.
func NewCmdKubeconfig(f *cli.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &KubeconfigOptions{IOStreams: streams, Output: cli.NewOutput(), Duration: DefaultTokenDuration, f: f}
	cmd := &cobra.Command{
		Use:   "kubeconfig NAME (--output-file FILE | --role ROLE --revoke)",
		Short: "Write a kubeconfig for a Cluster API cluster: its admin one, or a token bound to a role; or revoke your tokens of a role",
		Long: cli.LongDesc(`
			Write the kubeconfig of a Cluster API cluster to a file only you may
			read (mode 0600). It is never written over an existing file unless
			--overwrite is given.

			Without --role it is the admin kubeconfig Cluster API keeps in the
			NAME-kubeconfig Secret: a long-lived cluster-admin credential that
			nothing rotates. Fetch it when you need it and delete it after;
			reading that Secret takes the opt-in Role for it (see rbac.yaml).

			With --role ROLE the admin kubeconfig is used, in memory only, to
			make in the workload cluster a ServiceAccount of your own in
			spokekit-system bound to the ClusterRole ROLE, and the file holds a
			token of that ServiceAccount valid for --duration instead: use your
			own RBAC for routine work. The ServiceAccount and its
			ClusterRoleBinding are named after ROLE and your user name on the
			management cluster (as kubectl auth whoami shows it; a hash keeps
			the name short and unique), labelled as kubectl-park's and
			annotated with that user name; a re-run reuses them.

			With --role ROLE --revoke nothing is written: your ServiceAccount
			and ClusterRoleBinding of ROLE are deleted, and every token of them
			stops working at once; other users' stay. Objects that are not
			kubectl-park's, were made for another user, or bind anything else
			are refused (exit 3). Run again, it says nothing is left (exit 0).

			The kubeconfig read from the Secret is refused (exit 3) if it would
			run a program or read a local file. -o prints a report of what was
			done; the credential is never printed.`),
		Example: templates.Examples(`
			# The admin kubeconfig of the cluster "app"
			kubectl park kubeconfig app -n dynamo-prod --output-file app.kubeconfig

			# A token that may only read (ClusterRole view), valid for 8 hours
			kubectl park kubeconfig app -n dynamo-prod --output-file app-view.kubeconfig --role view --duration 8h

			# What --role would make in the cluster, without making it or writing the file
			kubectl park kubeconfig app -n dynamo-prod --output-file app-view.kubeconfig --role view --dry-run=client

			# Revoke your view tokens at once: delete your ServiceAccount and its binding
			kubectl park kubeconfig app -n dynamo-prod --role view --revoke

			# What --revoke would delete
			kubectl park kubeconfig app -n dynamo-prod --role view --revoke --dry-run=client`),
		Args:              cli.ExactArgs(1, "NAME"),
		ValidArgsFunction: cli.ResourceNames(f, "clusters."+capi.Group),
		RunE:              cli.RunE(o, o.Complete),
	}
	o.Output.AddFlags(cmd)
	cli.AddDryRunFlag(cmd)
	cmd.Flags().StringVar(&o.OutputFile, "output-file", "", "The file to write the kubeconfig to (mode 0600). Required, but with --revoke.")
	cmd.Flags().BoolVar(&o.Overwrite, "overwrite", false, "Replace the file if it exists.")
	cmd.Flags().StringVar(&o.Role, "role", "", "Write a token of your own ServiceAccount bound to this ClusterRole of the workload cluster (e.g. view) instead of the admin kubeconfig.")
	cmd.Flags().DurationVar(&o.Duration, "duration", o.Duration, fmt.Sprintf("With --role: how long the token is valid (%s to %s).", MinTokenDuration, MaxTokenDuration))
	cmd.Flags().BoolVar(&o.Revoke, "revoke", false, "With --role: delete your ServiceAccount and ClusterRoleBinding of the role in the workload cluster, so its tokens stop working, and write no file.")
	return cmd
}

// Complete reads the command line and the kubeconfig; it sends no request.
func (o *KubeconfigOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Name = args[0]
	o.durationSet = cmd.Flags().Changed("duration")
	var err error
	if o.DryRun, err = cli.GetDryRun(cmd); err != nil {
		return err
	}
	if o.Namespace, _, err = o.f.Namespace(); err != nil {
		return err
	}
	o.progress = cli.NewProgress(o.ErrOut)
	return nil
}

// Validate rejects bad flags, and a file that may not be written, before
// any request.
func (o *KubeconfigOptions) Validate() error {
	if err := validateTarget(o.Name, o.Namespace); err != nil {
		return err
	}
	if err := o.Output.Validate(); err != nil {
		return err
	}
	if o.Revoke {
		return o.validateRevoke()
	}
	if o.OutputFile == "" {
		return exitcode.UsageErrorf("--output-file is required: the kubeconfig holds a credential, so it is written to a file only you may read, never to the terminal")
	}
	if o.Role == "" && o.durationSet {
		return exitcode.UsageErrorf("--duration goes with --role: the admin kubeconfig's credential does not expire")
	}
	if o.Role != "" {
		if err := validateRole(o.Role); err != nil {
			return err
		}
		if o.Duration < MinTokenDuration || o.Duration > MaxTokenDuration {
			return exitcode.UsageErrorf("--duration must be between %s and %s, got %s", MinTokenDuration, MaxTokenDuration, o.Duration)
		}
	}
	return cli.CheckCredentialFile(o.OutputFile, o.Overwrite)
}

// validateRevoke: --revoke names the role whose objects go, and writes no
// file.
func (o *KubeconfigOptions) validateRevoke() error {
	switch {
	case o.Role == "":
		return exitcode.UsageErrorf("--revoke goes with --role ROLE: it deletes your ServiceAccount of that role (the admin credential cannot be revoked this way)")
	case o.OutputFile != "" || o.Overwrite || o.durationSet:
		return exitcode.UsageErrorf("--revoke writes no kubeconfig: --output-file, --overwrite and --duration do not go with it")
	}
	return validateRole(o.Role)
}

func validateRole(role string) error {
	if errs := content.IsPathSegmentName(role); len(errs) > 0 || len(role) > 253 {
		return exitcode.UsageErrorf("%q is not a valid ClusterRole name (at most 253 characters, not . or .., no / or %%)", role)
	}
	return nil
}

// Run reads the cluster's admin kubeconfig, makes the --role credential
// if asked, and writes the file.
func (o *KubeconfigOptions) Run(ctx context.Context) error {
	return onPlatform(o.f, o.Namespace, func(p *Platform) error { return o.kubeconfig(ctx, p) })
}

func (o *KubeconfigOptions) kubeconfig(ctx context.Context, p *Platform) error {
	if _, err := p.Cluster(ctx, o.Name); err != nil {
		return err
	}
	admin, source, err := o.adminKubeconfig(ctx, p)
	if err != nil {
		return err
	}
	report := KubeconfigReport{
		ReportMeta: api.NewNamespacedReportMeta("ClusterKubeconfig", o.Namespace, o.Name),
		DryRun:     cli.DryRunName(o.DryRun), OutputFile: o.OutputFile, Source: source, Server: admin.Server, Credential: CredentialAdmin,
	}
	if o.Revoke {
		return o.revoke(ctx, p, admin, report)
	}
	data, err := admin.Bytes()
	if o.Role != "" {
		data, err = o.roleKubeconfig(ctx, p, admin, &report)
	}
	if err != nil {
		return err
	}
	if o.DryRun != cli.DryRunNone {
		o.progress.Done("dry run: nothing was made in cluster %s/%s and %s was not written", o.Namespace, o.Name, o.OutputFile)
		return o.Output.Print(o.Out, report, func() cli.Table { return KubeconfigTable(report) })
	}
	if err := cli.WriteCredentialFile(o.OutputFile, data, o.Overwrite); err != nil {
		return err
	}
	o.progress.Done("wrote %s (mode 0600)", o.OutputFile)
	if report.Credential == CredentialAdmin {
		fmt.Fprintf(o.ErrOut, "Warning: %s holds the admin credential of cluster %s/%s: cluster-admin, long-lived, not rotated; whoever has a copy keeps full access. Treat it like a root password and delete it when done. For routine work use a narrower one: kubectl park kubeconfig %s -n %s --output-file FILE --role view --duration 8h\n",
			o.OutputFile, o.Namespace, o.Name, o.Name, o.Namespace)
	}
	return o.Output.Print(o.Out, report, func() cli.Table { return KubeconfigTable(report) })
}

// revoke deletes the user's --role objects and says what went.
func (o *KubeconfigOptions) revoke(ctx context.Context, p *Platform, admin *kubeconfig.Kubeconfig, report KubeconfigReport) error {
	report.Revoke, report.Credential = true, ""
	if err := o.revokeRole(ctx, p, admin, &report); err != nil {
		return err
	}
	switch {
	case len(report.Objects) == 0:
		o.progress.Done("nothing left to revoke: user %q has no ServiceAccount of ClusterRole %s in cluster %s/%s", report.User, o.Role, o.Namespace, o.Name)
	case o.DryRun != cli.DryRunNone:
		o.progress.Done("dry run: nothing was deleted in cluster %s/%s", o.Namespace, o.Name)
	default:
		o.progress.Done("revoked: the tokens of ServiceAccount %s no longer work in cluster %s/%s", report.ServiceAccount, o.Namespace, o.Name)
	}
	if len(report.Objects) == 0 && o.Output.IsTable() {
		return nil
	}
	return o.Output.Print(o.Out, report, func() cli.Table { return KubeconfigTable(report) })
}

// adminKubeconfig reads the cluster's NAME-kubeconfig Secret through the
// loader for kubeconfigs from a cluster. A Secret not there yet, or one
// the user may not read, is a refusal that says what to do.
func (o *KubeconfigOptions) adminKubeconfig(ctx context.Context, p *Platform) (*kubeconfig.Kubeconfig, string, error) {
	s, source, err := p.kubeconfigSecret(ctx, o.Name)
	switch {
	case apierrors.IsForbidden(err):
		return nil, source, exitcode.RefusedErrorf("the current user may not read %s, the cluster's admin kubeconfig; nothing was written. An administrator lets you read that one Secret with:\n  %s",
			source, cli.SecretGrant("spokekit-park", o.Namespace, capi.KubeconfigSecretName(o.Name), []string{"get"}, cli.UserName(ctx, p.Kube.AuthenticationV1())))
	case apierrors.IsNotFound(err):
		return nil, source, exitcode.RefusedErrorf("cluster %s/%s has no %s yet: Cluster API writes it once the control plane is up; nothing was written (see: kubectl park status %s -n %s)", o.Namespace, o.Name, source, o.Name, o.Namespace)
	case err != nil:
		return nil, source, fmt.Errorf("reading %s: %w; nothing was written", source, err)
	}
	kc, err := kubeconfig.FromSecret(s, capi.KubeconfigSecretKey)
	if err != nil {
		return nil, source, err
	}
	return kc, source, nil
}

// roleObjectName is the name of the ServiceAccount and ClusterRoleBinding
// made for one user and one ClusterRole: a readable form of both, cut to
// keep the name at most 63 characters, and a hash of the two exact names,
// since the readable forms alone can agree (role a-b for user c, role a for
// user b-c; any two names that differ only in characters a name cannot
// hold). The user annotation turns the rare equal hash into a refusal.
func roleObjectName(role, user string) string {
	sum := sha256.Sum256([]byte(role + "\x00" + user))
	return "spokekit-park-" + nameSlug(role, 20) + "-" + nameSlug(user, 19) + "-" + hex.EncodeToString(sum[:4])
}

// nameSlug is s in lower-case letters, digits and dashes, at most n long,
// no dash at either end ("x" when nothing is left).
func nameSlug(s string, n int) string {
	slug := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, s)
	slug = strings.Trim(slug[:min(len(slug), n)], "-")
	if slug == "" {
		return "x"
	}
	return slug
}
