package fleetdrain

import (
	"testing"

	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
)

func TestBadNamesAreUsageErrorsBeforeAnyRequest(t *testing.T) {
	clitest.AssertExitBeforeAnyRequest(t, NewCmdFleetdrain, cli.ExitUsage, "RFC 1123 subdomain",
		[]string{"node", "../x"},
		[]string{"node", "worker-1", "Worker_2", "--dry-run=client"},
		[]string{"uncordon", "node", "a/b"},
	)
	clitest.AssertExitBeforeAnyRequest(t, NewCmdFleetdrain, cli.ExitUsage, "RFC 1123 label",
		[]string{"cluster", "UPPER", "--dry-run=client"},
		[]string{"cluster", "spoke-1", "../x"},
		[]string{"uncordon", "cluster", "a.b"},
	)
}
