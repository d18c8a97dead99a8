package cli

import (
	"github.com/spf13/cobra"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// DryRun is the --dry-run strategy: none, client (print the plan, send
// nothing) or server (send every write with dryRun=All).
type DryRun = cmdutil.DryRunStrategy

// The dry-run strategies.
const (
	DryRunNone   = cmdutil.DryRunNone
	DryRunClient = cmdutil.DryRunClient
	DryRunServer = cmdutil.DryRunServer
)

// AddDryRunFlag registers --dry-run=none|client|server as kubectl does.
func AddDryRunFlag(cmd *cobra.Command) {
	cmdutil.AddDryRunFlag(cmd)
	_ = cmd.RegisterFlagCompletionFunc("dry-run", cobra.FixedCompletions([]string{"none", "client", "server"}, cobra.ShellCompDirectiveNoFileComp))
}

// GetDryRun reads --dry-run; a bad value is a usage error.
func GetDryRun(cmd *cobra.Command) (DryRun, error) {
	s, err := cmdutil.GetDryRunStrategy(cmd)
	if err != nil {
		return DryRunNone, UsageErrorf("%v", err)
	}
	return s, nil
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
