package spoke

import (
	"encoding/json"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spokekit/spokekit/internal/cli"
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
