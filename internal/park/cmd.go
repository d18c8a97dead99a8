// Package park is `kubectl park`: parking a Cluster API cluster's workers at
// zero, bringing them back, and reading the cluster's health.
package park

import (
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/spokekit/spokekit/internal/cli"
)

// NewCmdPark builds `kubectl park` and its subcommands.
func NewCmdPark(streams genericiooptions.IOStreams) *cobra.Command {
	root, f := cli.NewRoot(cli.Plugin{
		Name:  "park",
		Short: "Park a Cluster API cluster's workers at zero, resume them, read its health",
		Long: cli.LongDesc(`
			Stop paying for a Cluster API cluster's workers without losing the
			cluster: park scales every worker pool to zero and records what it
			was, resume brings back exactly that.

			Run it against the platform cluster, in the namespace of the
			cluster's Environment (-n).`),
		Example: templates.Examples(`
			# Park the cluster "app" and wait until its workers are gone
			kubectl park cluster app -n dynamo-prod --wait

			# Bring back exactly what was parked
			kubectl park resume app -n dynamo-prod --wait`),
	}, streams)
	root.AddCommand(
		NewCmdParkCluster(f, streams),
		NewCmdResume(f, streams),
		NewCmdList(f, streams),
		NewCmdStatus(f, streams),
		NewCmdKubeconfig(f, streams),
	)
	return root
}

// validateTarget checks a Cluster's name and namespace before any request.
func validateTarget(name, namespace string) error {
	if err := cli.ValidateNames(cli.CAPIClusterName, name); err != nil {
		return err
	}
	return cli.ValidateNames(cli.NamespaceName, namespace)
}

// changeOptions are what the commands that change a cluster (park cluster,
// park resume) share: the cluster, the dry run, -o, and how long --wait waits.
type changeOptions struct {
	genericiooptions.IOStreams
	Output    *cli.Output
	Name      string
	Namespace string
	Wait      bool
	Timeout   time.Duration
	DryRun    cli.DryRun
	// ClusterKubeconfig is the user's own kubeconfig for the workload
	// cluster, which --wait reads (else its NAME-kubeconfig secret).
	ClusterKubeconfig string
	// bulk is -l, -A and --max-concurrent: many clusters in one run (bulk.go).
	bulk

	f        *cli.Factory
	progress *cli.Progress
}

func newChangeOptions(f *cli.Factory, streams genericiooptions.IOStreams, timeout time.Duration) changeOptions {
	return changeOptions{IOStreams: streams, Output: cli.NewOutput(), Timeout: timeout, f: f}
}

// Complete fills the options from the command line and the kubeconfig; it
// sends no request.
func (o *changeOptions) Complete(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		o.Name = args[0]
	}
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

// Validate rejects a bad name, -o or --timeout before any request.
func (o *changeOptions) Validate() error {
	if err := o.validateBulk(); err != nil {
		return err
	}
	if o.Selector == "" {
		if err := validateTarget(o.Name, o.Namespace); err != nil {
			return err
		}
	} else if err := cli.ValidateNames(cli.NamespaceName, o.Namespace); err != nil {
		return err
	}
	if err := o.Output.Validate(); err != nil {
		return err
	}
	return cli.ValidateTimeout(o.Timeout)
}

// addClusterKubeconfigFlag adds --cluster-kubeconfig, the way into the
// workload cluster that --wait reads.
func (o *changeOptions) addClusterKubeconfigFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.ClusterKubeconfig, "cluster-kubeconfig", "", "With --wait: kubeconfig file of the cluster itself, your own access to it (default: the NAME-kubeconfig secret, if you may read it).")
}

// done says on stderr what the command did to the cluster: nothing (it was
// so already), nothing under a dry run, or what changed.
func (o *changeOptions) done(changed bool, already, did string) {
	switch {
	case !changed:
		o.progress.Done("cluster %s/%s %s: nothing changed", o.Namespace, o.Name, already)
	case o.DryRun != cli.DryRunNone:
		o.progress.Done("dry run: cluster %s/%s was not changed", o.Namespace, o.Name)
	default:
		o.progress.Done("cluster %s/%s %s", o.Namespace, o.Name, did)
	}
}

// warn says w (if any) about the cluster on stderr.
func (o *changeOptions) warn(w string) {
	if w != "" {
		o.progress.Printf("cluster %s/%s: %s", o.Namespace, o.Name, w)
	}
}

// waits tells whether the command waits: --wait, and not a dry run.
func (o *changeOptions) waits() bool { return o.Wait && o.DryRun == cli.DryRunNone }
