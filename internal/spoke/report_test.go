package spoke

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
)

// Every report says dryRun the same way as fleetdrain's and park's: the
// strategy's name, a string, left out on a real run.
func TestReportsSpellDryRunAsTheStrategyName(t *testing.T) {
	server := cli.DryRunName(cli.DryRunServer)
	for name, report := range map[string]any{
		"add":    &AddReport{DryRun: server},
		"remove": &RemoveReport{DryRun: server},
		"rotate": &RotateReport{DryRun: server},
		"set":    &SetReport{DryRun: server},
	} {
		data, err := json.Marshal(report)
		assert.NilError(t, err)
		var got struct {
			DryRun any `json:"dryRun"`
		}
		assert.NilError(t, json.Unmarshal(data, &got))
		assert.Equal(t, got.DryRun, "server", name)
	}
}

// -o name and -o jsonpath read a report the way they read a cluster object.
func TestReportsPrintAsName(t *testing.T) {
	meta := api.NewNamespacedReportMeta("SpokeRemove", "mural-system", "spoke-2")
	for _, format := range []string{"name", "jsonpath={.metadata.name}", "custom-columns=NAME:.metadata.name", "wide"} {
		o := cli.NewOutput()
		*o.PrintFlags.OutputFormat = format
		assert.NilError(t, o.Validate(), format)
		r := &RemoveReport{ReportMeta: meta, Steps: []Step{{"spoke mural-system/spoke-2", "deleted"}}}
		var buf bytes.Buffer
		assert.NilError(t, o.Print(&buf, r, r.table), format)
		assert.Check(t, strings.Contains(buf.String(), "spoke-2"), "%s: %s", format, buf.String())
	}
	o := cli.NewOutput()
	*o.PrintFlags.OutputFormat = "name"
	var buf bytes.Buffer
	assert.NilError(t, o.Print(&buf, &RemoveReport{ReportMeta: meta}, nil))
	assert.Equal(t, buf.String(), "spoke.fleetconfig.open-cluster-management.io/spoke-2\n")
}

// -o name prints the Spokes each command acted on, or the ManagedCluster of
// a cluster joined out of band, as kubectl get -o name names them.
func TestNamePrintsTheSpokes(t *testing.T) {
	meta := api.NewNamespacedReportMeta("Spoke", "mural-system", "spoke-1")
	spoke, managed := "spoke.fleetconfig.open-cluster-management.io/", "managedcluster.cluster.open-cluster-management.io/"
	for _, c := range []struct {
		report any
		want   string
	}{
		{SpokeList{Items: []SpokeRow{{ReportMeta: meta}, {ReportMeta: api.NewReportMeta("SpokeRow", "by-hand"), OutOfBand: true}}}, spoke + "spoke-1\n" + managed + "by-hand\n"},
		{SpokeList{}, ""},
		{&SpokeStatus{ReportMeta: meta}, spoke + "spoke-1\n"},
		{&SpokeStatus{ReportMeta: meta, OutOfBand: true}, managed + "spoke-1\n"},
		{&AddReport{ReportMeta: meta}, spoke + "spoke-1\n"},
		{&RemoveReport{ReportMeta: meta}, spoke + "spoke-1\n"},
		{&SetReport{ReportMeta: meta}, spoke + "spoke-1\n"},
		{&RotateReport{ReportMeta: meta}, spoke + "spoke-1\n"},
	} {
		assert.Check(t, is.Equal(clitest.PrintName(t, c.report), c.want), "%T", c.report)
	}
}
