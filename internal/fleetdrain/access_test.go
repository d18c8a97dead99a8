package fleetdrain

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spokekit/spokekit/internal/cli"
)

func TestNodeAccessFollowsThePlan(t *testing.T) {
	report := DrainReport{Items: []NodeReport{
		{Evict: []PlannedPod{{Namespace: "web", Name: "a"}, {Namespace: "db", Name: "b"}}},
		{Evict: []PlannedPod{{Namespace: "web", Name: "c"}}},
	}}
	describe := func(needs []cli.Access) []string {
		var out []string
		for _, a := range cli.UniqueAccess(needs) {
			out = append(out, cli.DescribeAccess(a))
		}
		return out
	}
	assert.DeepEqual(t, describe(nodeAccess(report, false)),
		[]string{"patch nodes", "watch pods", "create pods/eviction in namespace db", "create pods/eviction in namespace web"})
	assert.DeepEqual(t, describe(nodeAccess(report, true)),
		[]string{"patch nodes", "watch pods", "delete pods in namespace db", "delete pods in namespace web"})
}
