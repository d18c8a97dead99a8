package park

import (
	"testing"

	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
)

func TestBadNamesAreUsageErrorsBeforeAnyRequest(t *testing.T) {
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, cli.ExitUsage, "RFC 1123 subdomain",
		[]string{"cluster", "../x"},
		[]string{"resume", "a/b"},
		[]string{"status", "UPPER"},
	)
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, cli.ExitUsage, "RFC 1123 label",
		[]string{"list", "-n", "Bad NS"},
		[]string{"cluster", "app", "-n", "Bad NS", "--dry-run=client"},
		[]string{"resume", "app", "-n", "../x"},
		[]string{"status", "app", "-n", "a.b"},
	)
}

func TestEveryCommandPrintsInEveryFormat(t *testing.T) {
	clitest.AssertEveryOutputOffers(t, NewCmdPark)
}

// A blank selector parses as the empty one, which selects every cluster:
// it is a usage error before any request, never "all".
func TestBlankSelectorsAreUsageErrorsBeforeAnyRequest(t *testing.T) {
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, cli.ExitUsage, "selects everything",
		[]string{"list", "-l", " "},
		[]string{"list", "-A", "--selector", "\t"},
	)
}
