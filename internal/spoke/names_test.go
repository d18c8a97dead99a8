package spoke

import (
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
)

func TestBadNamesAreUsageErrorsBeforeAnyRequest(t *testing.T) {
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Usage, "RFC 1123 label",
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
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Usage, "RFC 1123 subdomain",
		[]string{"rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", "k", "--secret", "../other"},
	)
}

// Each command's report, printed for real in every format -o offers.
func TestEveryCommandPrintsInEveryFormat(t *testing.T) {
	clitest.AssertEveryOutputOffers(t, NewCmdSpoke)
	meta := api.NewNamespacedReportMeta("Spoke", "mural-system", "spoke-1")
	steps := []Step{{"spoke mural-system/spoke-1", "created"}}
	t.Run("add", func(t *testing.T) {
		r := &AddReport{ReportMeta: meta, Steps: steps}
		clitest.AssertPrintsInEveryFormat(t, r, func() cli.Table { return stepsTable(r.Steps) })
	})
	t.Run("list and get", func(t *testing.T) {
		l := SpokeList{APIVersion: api.ReportGroupVersion.String(), Kind: "SpokeList", Items: []SpokeRow{{ReportMeta: meta, Phase: "Running"}}}
		clitest.AssertPrintsInEveryFormat(t, l, func() cli.Table { return l.Table(time.Now()) })
	})
	t.Run("status", func(t *testing.T) {
		r := SpokeStatus{ReportMeta: meta, Phase: "Running", Conditions: []ConditionReport{}}
		clitest.AssertPrintsInEveryFormat(t, r, r.Table)
	})
	t.Run("remove and force-remove", func(t *testing.T) {
		r := &RemoveReport{ReportMeta: meta, Steps: steps}
		clitest.AssertPrintsInEveryFormat(t, r, r.table)
	})
	t.Run("rotate-kubeconfig", func(t *testing.T) {
		r := &RotateReport{ReportMeta: meta, Secret: "spoke-1-kubeconfig-2"}
		clitest.AssertPrintsInEveryFormat(t, r, r.table)
	})
	t.Run("set", func(t *testing.T) {
		// set builds its table in place; -o prints the report.
		clitest.AssertPrintsInEveryFormat(t, &SetReport{ReportMeta: meta, Changes: []SetChange{{Field: "logVerbosity", From: 2, To: 4}}}, nil)
	})
}

func TestListSelectorsAreCheckedBeforeAnyRequest(t *testing.T) {
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Usage, "-l selects spokes: name them or select them, not both",
		[]string{"get", "spoke-1", "-l", "team=ml"})
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Usage, `invalid --selector "a in (b"`,
		[]string{"list", "-l", "a in (b"})
}

// An API server that does not answer is named as such (exit 1); one that
// answers but does not serve the Spoke kind says that instead.
func TestUnreachableServerAndMissingCRDSayWhich(t *testing.T) {
	kc := clitest.UnreachableKubeconfig(t)
	for _, args := range [][]string{{"list"}, {"status", "spoke-1"}, {"list", "-n", "fleet"}} {
		code, _, stderr := clitest.RunCommand(NewCmdSpoke, append(args, "--kubeconfig", kc)...)
		assert.Check(t, is.Equal(code, exitcode.Failed), "%q: %s", args, stderr)
		assert.Check(t, is.Contains(stderr, "cannot reach the API server"), "%q", args)
	}
	srv := clitest.NewAPIServer(t)
	notFound := `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"the server could not find the requested resource"}`
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/fleet/spokes", 404, notFound)
	code, _, stderr := clitest.RunCommand(NewCmdSpoke, "list", "-n", "fleet", "--kubeconfig", srv.Kubeconfig)
	assert.Check(t, is.Equal(code, exitcode.Failed), stderr)
	assert.Check(t, is.Contains(stderr, "does not serve"), stderr)
	assert.Check(t, !strings.Contains(stderr, "cannot reach"), stderr)
}

// set's FIELD=VALUE arguments are input: checked in Validate, before any request.
func TestSetAssignmentsAreCheckedBeforeAnyRequest(t *testing.T) {
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Usage, "=3",
		[]string{"set", "spoke-1", "=3"})
}

// force-remove takes the values file like remove does: one of the two flags.
func TestForceRemoveTakesOneValuesFile(t *testing.T) {
	clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Usage, "--values and --helmrelease",
		[]string{"force-remove", "spoke-3", "--yes", "--values", "v.yaml", "--helmrelease", "hr.yaml"})
}
