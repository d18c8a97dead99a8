package cli

import (
	"strconv"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// DryRun is the --dry-run strategy: none, client (print the plan, send
// nothing) or server (send every write with dryRun=All). Its values are
// those of kubectl's cmdutil.DryRunStrategy, which k8s.io/kubectl/pkg/drain
// takes; kubectl's package itself is not imported here, so the plugins that
// do not drain nodes do not carry it (see docs/performance.md).
type DryRun int

// The dry-run strategies.
const (
	DryRunNone DryRun = iota
	DryRunClient
	DryRunServer
)

// dryRunUnchanged is what a bare --dry-run sets (kubectl's deprecated form).
const dryRunUnchanged = "unchanged"

// AddDryRunFlag registers --dry-run=none|client|server as kubectl does.
func AddDryRunFlag(cmd *cobra.Command) {
	cmd.Flags().String("dry-run", "none",
		`Must be "none", "server", or "client". If client strategy, only print the object that would be sent, without sending it. If server strategy, submit server-side request without persisting the resource.`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = dryRunUnchanged
	_ = cmd.RegisterFlagCompletionFunc("dry-run", cobra.FixedCompletions([]string{"none", "client", "server"}, cobra.ShellCompDirectiveNoFileComp))
}

// GetDryRun reads --dry-run as kubectl reads it (a bare --dry-run and the
// old true/false are accepted with kubectl's deprecation warning); a bad
// value is a usage error.
func GetDryRun(cmd *cobra.Command) (DryRun, error) {
	value, err := cmd.Flags().GetString("dry-run")
	if err != nil {
		return DryRunNone, exitcode.UsageErrorf("%v", err)
	}
	b, err := strconv.ParseBool(value)
	if err == nil {
		if b {
			klog.Warningf(`--dry-run=%v is deprecated (boolean value) and can be replaced with --dry-run=%s.`, value, "client")
			return DryRunClient, nil
		}
		klog.Warningf(`--dry-run=%v is deprecated (boolean value) and can be replaced with --dry-run=%s.`, value, "none")
		return DryRunNone, nil
	}
	switch value {
	case dryRunUnchanged:
		klog.Warning(`--dry-run is deprecated and can be replaced with --dry-run=client.`)
		return DryRunClient, nil
	case "client":
		return DryRunClient, nil
	case "server":
		return DryRunServer, nil
	case "none":
		return DryRunNone, nil
	}
	return DryRunNone, exitcode.UsageErrorf(`Invalid dry-run value (%v). Must be "none", "server", or "client".`, value)
}

// DryRunOption is the metav1 DryRun field for a write under strategy s.
func DryRunOption(s DryRun) []string {
	if s == DryRunServer {
		return []string{"All"}
	}
	return nil
}

// DryRunName is the dryRun field of every report printed with -o: "client"
// or "server", and "" (left out) when the command wrote for real. One type
// and one spelling in all three plugins, so a script reads them the same way.
func DryRunName(s DryRun) string {
	switch s {
	case DryRunClient:
		return "client"
	case DryRunServer:
		return "server"
	}
	return ""
}
