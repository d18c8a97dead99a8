package spoke

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
)

// spokeKubeconfig is the --spoke-kubeconfig file add and rotate-kubeconfig
// take. It is read and its credential checked in Validate, so a file that
// is missing, malformed or short-lived is refused before any request.
type spokeKubeconfig struct {
	File        string
	MinLifetime time.Duration

	kc         *kubeconfig.Kubeconfig
	credential kubeconfig.Credential
}

func (n *spokeKubeconfig) addFlags(cmd *cobra.Command, usage string) {
	cmd.Flags().StringVar(&n.File, "spoke-kubeconfig", "", usage)
	cmd.Flags().DurationVar(&n.MinLifetime, "min-credential-lifetime", n.MinLifetime, "Refuse credentials that expire sooner than this.")
	_ = cmd.MarkFlagRequired("spoke-kubeconfig")
	_ = cmd.MarkFlagFilename("spoke-kubeconfig")
}

// read loads the file and checks its credential against now.
func (n *spokeKubeconfig) read(now time.Time) error {
	if n.MinLifetime < 0 {
		return exitcode.UsageErrorf("--min-credential-lifetime must not be negative")
	}
	kc, err := kubeconfig.Load(n.File)
	if err != nil {
		return exitcode.RefusedErrorf("%w; nothing was changed", err)
	}
	if reasons := kc.InsecureParts(); len(reasons) > 0 {
		return n.refused(fmt.Errorf("%s; once stored, every command reading it from the Secret refuses it, so it is not stored (or pass --allow-insecure-kubeconfig-secrets here and to those commands, if this is meant)", strings.Join(reasons, "; ")))
	}
	if n.credential, err = kc.Credential(now, n.MinLifetime); err != nil {
		return n.refused(err)
	}
	n.kc = kc
	return nil
}

// refused is err, a check of the new kubeconfig that failed, as a refusal
// that names the file.
func (n *spokeKubeconfig) refused(err error) error {
	return exitcode.RefusedErrorf("%s: %w; nothing was changed", n.File, err)
}
