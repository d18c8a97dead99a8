package park

import (
	"testing"
	"time"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
)

func TestBadNamesAreUsageErrorsBeforeAnyRequest(t *testing.T) {
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "RFC 1123 subdomain",
		[]string{"cluster", "../x"},
		[]string{"resume", "a/b"},
		[]string{"status", "UPPER"},
	)
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "RFC 1123 label",
		[]string{"list", "-n", "Bad NS"},
		[]string{"cluster", "app", "-n", "Bad NS", "--dry-run=client"},
		[]string{"resume", "app", "-n", "../x"},
		[]string{"status", "app", "-n", "a.b"},
	)
}

// Each command's report, printed for real in every format -o offers.
func TestEveryCommandPrintsInEveryFormat(t *testing.T) {
	clitest.AssertEveryOutputOffers(t, NewCmdPark)
	three, zero := int32(3), int32(0)
	changes := []PoolChange{{Kind: MachineDeployments, Name: "md-0", From: PoolState{Replicas: &three}, To: PoolState{Replicas: &zero}}}
	t.Run("cluster", func(t *testing.T) {
		plan := ParkPlan{ReportMeta: api.NewNamespacedReportMeta("ParkPlan", "dynamo-prod", "app"), Changes: changes}
		clitest.AssertPrintsInEveryFormat(t, plan, func() cli.Table { return changesTable(plan.Changes) })
	})
	t.Run("resume", func(t *testing.T) {
		plan := ResumePlan{ReportMeta: api.NewNamespacedReportMeta("ResumePlan", "dynamo-prod", "app"), Changes: changes}
		clitest.AssertPrintsInEveryFormat(t, plan, func() cli.Table { return changesTable(plan.Changes) })
	})
	t.Run("list", func(t *testing.T) {
		l := ClusterList{ReportMeta: api.NewReportMeta("ParkStateList", ""), Items: []ClusterRow{
			{ReportMeta: api.NewNamespacedReportMeta("ParkState", "dynamo-prod", "app"), State: StateRunning, ReadyWorkers: &three, DesiredWorkers: &three},
		}}
		clitest.AssertPrintsInEveryFormat(t, l, func() cli.Table { return ListTable(l, time.Now(), false) })
	})
	t.Run("status", func(t *testing.T) {
		// status writes its own human view; -o prints the report.
		r := StatusReport{ReportMeta: api.NewNamespacedReportMeta("ClusterStatus", "dynamo-prod", "app"), Platform: PlatformView{Phase: "Provisioned"}}
		clitest.AssertPrintsInEveryFormat(t, r, nil)
	})
}

// A blank selector parses as the empty one, which selects every cluster:
// it is a usage error before any request, never "all".
func TestBlankSelectorsAreUsageErrorsBeforeAnyRequest(t *testing.T) {
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "selects everything",
		[]string{"list", "-l", " "},
		[]string{"list", "-A", "--selector", "\t"},
	)
}
