package spoke

import (
	"testing"

	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
)

func TestBadNamesAreUsageErrorsBeforeAnyRequest(t *testing.T) {
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, cli.ExitUsage, "RFC 1123 label",
		[]string{"status", "../x"},
		[]string{"status", "a/b"},
		[]string{"remove", "UPPER", "--dry-run=client"},
		[]string{"force-remove", "a.b", "--yes"},
		[]string{"rotate-kubeconfig", "../x", "--spoke-kubeconfig", "k"},
		[]string{"set", "x/y", "logVerbosity=4"},
		[]string{"get", "spoke-1", "Spoke-2"},
		[]string{"add", "UPPER", "--spoke-kubeconfig", "k"},
		[]string{"list", "-n", "Bad NS"},
		[]string{"status", "spoke-1", "-n", "Bad NS"},
		[]string{"remove", "spoke-1", "-n", "../kube-system"},
	)
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, cli.ExitUsage, "RFC 1123 subdomain",
		[]string{"rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", "k", "--secret", "../other"},
	)
}
