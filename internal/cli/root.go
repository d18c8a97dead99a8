package cli

import (
	"context"
	"errors"
	goflag "flag"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/spokekit/spokekit/internal/clientrate"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
)

// Namespace returns the namespace from -n or the current context, and whether -n was given.
func (f *Factory) Namespace() (string, bool, error) {
	ns, explicit, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", false, fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	return ns, explicit, nil
}

// Plugin describes one binary: `kubectl <Name> ...`.
type Plugin struct {
	Name    string
	Short   string
	Long    string
	Example string
}

// NewRoot builds the root command of a plugin with kubectl's global flags,
// shell completion for them and a `version` subcommand. Help reads as
// `kubectl <name> ...`.
func NewRoot(p Plugin, streams genericiooptions.IOStreams) (*cobra.Command, *Factory) {
	configFlags := genericclioptions.NewConfigFlags(true).WithDiscoveryBurst(300).WithDiscoveryQPS(50.0)
	f := newFactory(configFlags)

	root := &cobra.Command{
		Use:     p.Name,
		Short:   p.Short,
		Long:    p.Long, // RenderHelp adds the exit codes
		Example: p.Example,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl " + p.Name,
		},
		SilenceErrors: true,
		SilenceUsage:  true,
		CompletionOptions: cobra.CompletionOptions{
			// kubectl calls the plugin's __complete through kubectl_complete-<plugin>;
			// shell scripts for the plugin alone would bypass kubectl.
			DisableDefaultCmd: true,
		},
	}
	Group(root)
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitcode.Error{Code: exitcode.Usage, Err: err}
	})

	configFlags.WrapConfigFn = func(c *rest.Config) *rest.Config { return markUnreachable(endWithRun(clientrate.Set(c), root.Context)) }
	flags := root.PersistentFlags()
	f.addFlags(flags)
	flags.BoolVar(&kubeconfig.AllowInsecureSecrets, "allow-insecure-kubeconfig-secrets", false,
		"Use kubeconfigs read from Secrets even when they send requests over plain http, to link-local or cloud metadata addresses, through a proxy, or without checking the server's certificate.")
	addLogFlags(flags)
	registerGlobalCompletions(root, f)
	root.AddCommand(newCmdVersion(p.Name, f, streams))
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		RenderHelp(root)
		help(c, args)
	})
	return root, f
}

// addLogFlags adds kubectl's -v/--v, so `-v=6` shows the requests a command
// makes, as it does in kubectl. The log goes to stderr through logWriter:
// klog writes straight to stderr otherwise, past every filter.
func addLogFlags(flags *pflag.FlagSet) {
	gf := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(gf)
	// Every line once, to the output set below (FATAL also to stderr as it is).
	for name, value := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL", "one_output": "true"} {
		if err := gf.Set(name, value); err != nil {
			panic(err)
		}
	}
	klog.SetOutput(logWriter{})
	flags.AddGoFlag(gf.Lookup("v"))
	flags.AddGoFlag(gf.Lookup("vmodule"))
}

// logWriter writes klog's lines to stderr with the credentials of URLs
// scrubbed and control characters escaped: from -v=6 client-go logs every
// request's URL, and a kubeconfig's server URL may carry a password or a
// token as user name. A live progress line on the terminal is cleared for
// the log line and drawn again below it, not torn.
type logWriter struct{}

func (logWriter) Write(p []byte) (int, error) {
	line := EscapeTerminal(string(p))
	if live := onScreen.Load(); live != nil && live.logAbove(line) {
		return len(p), nil
	}
	if _, err := os.Stderr.WriteString(line); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Group makes cmd a command that only holds subcommands: alone it prints its
// help; with an unknown subcommand it is a usage error.
func Group(cmd *cobra.Command) {
	cmd.SuggestionsMinimumDistance = 2
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
		}
		return &exitcode.Error{Code: exitcode.Usage, Err: errors.New(msg)}
	}
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
}

// NoArgs rejects positional arguments as a usage error.
func NoArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return exitcode.UsageErrorf("%q takes no arguments, got %q", c.CommandPath(), args)
	}
	return nil
}

// ExactArgs requires n positional arguments, named in the error.
func ExactArgs(n int, names ...string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return exitcode.UsageErrorf("%q needs exactly %d argument(s) (%s), got %d", c.CommandPath(), n, strings.Join(names, ", "), len(args))
		}
		return nil
	}
}

// MinArgs requires at least n positional arguments.
func MinArgs(n int, name string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < n {
			return exitcode.UsageErrorf("%q needs at least %d %s", c.CommandPath(), n, name)
		}
		return nil
	}
}

// Execute runs the command line and returns the exit code, printing any error
// once to stderr the way kubectl does. The command's context ends at the
// first SIGINT or SIGTERM; a command that fails then exits with
// exitcode.Interrupted, whatever its error (often a request cut short).
func Execute(root *cobra.Command, args []string, streams genericiooptions.IOStreams) int {
	ctx, stop := withInterrupt(context.Background())
	defer stop()
	root.SetArgs(args)
	ran := noteRun(root)
	cmd, err := root.ExecuteContextC(ctx)
	endLiveLine()
	if err == nil {
		return exitcode.OK
	}
	code := exitcode.Of(err)
	if code == exitcode.Failed && !*ran {
		// cobra's own checks of the command line (arguments, required
		// flags, flag groups) fail before the command runs.
		code = exitcode.Usage
	}
	msg := err.Error()
	// A bare API or connection error reads as kubectl prints it; wrapped ones
	// already carry their context.
	if m, ok := standardErrorMessage(unwrapExit(err)); ok {
		msg = m
	}
	code, msg = explainAPIError(err, code, msg)
	if Interrupted(ctx) {
		code = exitcode.Interrupted
		if !errors.Is(err, exitcode.ErrInterrupted) {
			msg = context.Cause(ctx).Error() + ": " + strings.TrimPrefix(msg, "error: ")
		}
	}
	if !strings.HasPrefix(msg, "error: ") && !strings.HasPrefix(msg, "Error from server") {
		msg = "error: " + msg
	}
	fmt.Fprintln(streams.ErrOut, EscapeTerminal(strings.TrimRight(msg, "\n")))
	if code == exitcode.Usage && cmd != nil {
		fmt.Fprintf(streams.ErrOut, "See '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

// noteRun makes every command of the tree record that it started to run.
func noteRun(root *cobra.Command) *bool {
	ran := new(bool)
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if run := c.RunE; run != nil {
			c.RunE = func(c *cobra.Command, args []string) error {
				*ran = true
				return run(c, args)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return ran
}

func unwrapExit(err error) error {
	var ee *exitcode.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// Main is the whole of a plugin's main function. What commands print is
// escaped for the terminal (see terminalWriter).
func Main(newRoot func(genericiooptions.IOStreams) *cobra.Command) {
	streams := escapingStreams(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	os.Exit(Execute(newRoot(streams), os.Args[1:], streams))
}

// Options is a leaf command's options once Complete has read its input:
// Validate checks that input before any request, Run does the work.
type Options interface {
	Validate() error
	Run(ctx context.Context) error
}

// RunE is the RunE of every leaf command, kubectl's order: complete (read
// flags, arguments and clients), validate, run.
func RunE(o Options, complete func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := complete(cmd, args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
}

// standardErrorMessage words an API or connection error exactly as kubectl
// does; ok is false for any other error.
func standardErrorMessage(err error) (msg string, ok bool) {
	if status, isStatus := err.(apierrors.APIStatus); isStatus {
		switch s := status.Status(); {
		case s.Reason == metav1.StatusReasonUnauthorized:
			return fmt.Sprintf("error: You must be logged in to the server (%s)", s.Message), true
		case len(s.Reason) > 0:
			return fmt.Sprintf("Error from server (%s): %s", s.Reason, err.Error()), true
		default:
			return fmt.Sprintf("Error from server: %s", err.Error()), true
		}
	}
	if apierrors.IsUnexpectedObjectError(err) {
		return fmt.Sprintf("Server returned an unexpected response: %s", err.Error()), true
	}
	if t, isURL := err.(*url.Error); isURL { //nolint:errorlint // only a bare error: a wrapped one keeps its own words
		if strings.Contains(t.Err.Error(), "connection refused") {
			host := t.URL
			if server, err := url.Parse(t.URL); err == nil {
				host = server.Host
			}
			return fmt.Sprintf("The connection to the server %s was refused - did you specify the right host or port?", host), true
		}
		return fmt.Sprintf("Unable to connect to the server: %v", t.Err), true
	}
	return "", false
}
