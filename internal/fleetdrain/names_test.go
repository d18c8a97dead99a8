package fleetdrain

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
)

func TestBadNamesAreUsageErrorsBeforeAnyRequest(t *testing.T) {
	clitest.AssertExitBeforeAnyRequest(t, NewCmdFleetdrain, exitcode.Usage, "RFC 1123 subdomain",
		[]string{"node", "../x"},
		[]string{"node", "worker-1", "Worker_2", "--dry-run=client"},
		[]string{"uncordon", "node", "a/b"},
	)
	clitest.AssertExitBeforeAnyRequest(t, NewCmdFleetdrain, exitcode.Usage, "RFC 1123 label",
		[]string{"cluster", "UPPER", "--dry-run=client"},
		[]string{"cluster", "spoke-1", "../x"},
		[]string{"uncordon", "cluster", "a.b"},
	)
}

// Each command's report, printed for real in every format -o offers.
func TestEveryCommandPrintsInEveryFormat(t *testing.T) {
	clitest.AssertEveryOutputOffers(t, NewCmdFleetdrain)
	t.Run("node", func(t *testing.T) {
		r := DrainReport{ReportMeta: api.NewReportMeta("DrainReport", "nodes"), Items: []NodeReport{
			{ReportMeta: api.NewReportMeta("NodeDrain", "worker-1"), Result: NodeDrained, Evict: []PlannedPod{}},
		}}
		clitest.AssertPrintsInEveryFormat(t, r, r.planTable)
		clitest.AssertPrintsInEveryFormat(t, r, r.resultTable)
	})
	t.Run("cluster", func(t *testing.T) {
		r := ClusterDrainReport{ReportMeta: api.NewReportMeta("ClusterDrainReport", "clusters"), Items: []ClusterReport{
			{ReportMeta: api.NewReportMeta("ClusterDrain", "spoke-1"), Result: ClusterDrained, Moves: []WorkEntry{}, Stays: []WorkEntry{}},
		}}
		clitest.AssertPrintsInEveryFormat(t, r, r.table)
	})
	t.Run("uncordon", func(t *testing.T) {
		r := UncordonReport{ReportMeta: api.NewReportMeta("UncordonReport", "nodes"), Items: []UncordonEntry{
			{ReportMeta: api.NewReportMeta(api.NodeKind.Kind, "worker-1"), Changed: true, Detail: "uncordoned"},
		}}
		clitest.AssertPrintsInEveryFormat(t, r, r.table)
	})
}

func TestUnreachableServerIsNamed(t *testing.T) {
	kc := clitest.UnreachableKubeconfig(t)
	for _, args := range [][]string{{"node", "worker-1"}, {"cluster", "spoke-1"}, {"uncordon", "node", "worker-1"}, {"uncordon", "cluster", "spoke-1"}} {
		code, _, stderr := clitest.RunCommand(NewCmdFleetdrain, append(args, "--kubeconfig", kc)...)
		assert.Check(t, is.Equal(code, exitcode.Failed), "%q: %s", args, stderr)
		assert.Check(t, is.Contains(stderr, "cannot reach the API server"), "%q: %s", args, stderr)
	}
}

// --timeout 0 is no limit, as in every command; a negative one is refused
// before any request.
func TestClusterTimeoutZeroIsNoLimit(t *testing.T) {
	clitest.AssertExitBeforeAnyRequest(t, NewCmdFleetdrain, exitcode.Usage, "--timeout must not be negative",
		[]string{"cluster", "spoke-1", "--timeout", "-1s"})
	srv := clitest.NewAPIServer(t)
	code, _, stderr := clitest.RunCommand(NewCmdFleetdrain, "cluster", "spoke-1", "--timeout", "0", "--kubeconfig", srv.Kubeconfig)
	assert.Check(t, code != exitcode.Usage, stderr)
	assert.Check(t, len(srv.Requests()) > 0, "it went on to read the ManagedCluster")
}

// A blank selector parses as the empty one, which selects every node, pod
// or cluster: it is a usage error before any request, never "all".
func TestBlankSelectorsAreUsageErrorsBeforeAnyRequest(t *testing.T) {
	clitest.AssertExitBeforeAnyRequest(t, NewCmdFleetdrain, exitcode.Usage, "selects everything",
		[]string{"node", "-l", " "},
		[]string{"node", "--selector", "\t"},
		[]string{"node", "worker-1", "--pod-selector", "  "},
		// On the hub, -l " " would taint every ManagedCluster.
		[]string{"cluster", "-l", " "},
		[]string{"check", "-l", " "},
	)
}
