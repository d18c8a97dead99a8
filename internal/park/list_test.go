package park

import (
	"bytes"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
)

func withWorkers(c *capi.Cluster, desired, current, ready int32) *capi.Cluster {
	c.Status.Workers = &capi.ReplicaCounts{DesiredReplicas: &desired, Replicas: &current, ReadyReplicas: &ready}
	return c
}

func TestListStates(t *testing.T) {
	running := withWorkers(threePools(), 6, 6, 6)
	resuming := withWorkers(threePools(), 6, 4, 3)
	resuming.Name = "coming-back"
	parking := applyToCluster(t, threePools(), func(c *capi.Cluster) Patch {
		p, _ := PlanPark(c, parkedAt, "alice")
		return p.Patch
	})
	parking.Name = "going"
	withWorkers(parking, 0, 2, 2)
	parked := applyToCluster(t, threePools(), func(c *capi.Cluster) Patch {
		p, _ := PlanPark(c, parkedAt, "alice")
		return p.Patch
	})
	parked.Name = "asleep"
	withWorkers(parked, 0, 0, 0)

	l := ClusterList{ReportMeta: api.NewReportMeta("ParkStateList", "")}
	for _, c := range []*capi.Cluster{running, resuming, parking, parked} {
		l.Items = append(l.Items, Row(c))
	}
	assert.Equal(t, l.Items[0].State, StateRunning)
	assert.Equal(t, l.Items[1].State, StateResuming)
	assert.Equal(t, l.Items[2].State, StateParking)
	assert.Equal(t, l.Items[3].State, StateParked)
	var out bytes.Buffer
	assert.NilError(t, cli.WriteTable(&out, ListTable(l, parkedAt.Add(26*time.Hour), true), true))
	golden.Assert(t, out.String(), "list-wide.golden")
}

// -o name prints the Clusters each command read or changed, as kubectl get
// -o name names them.
func TestNamePrintsTheClusters(t *testing.T) {
	meta := api.NewNamespacedReportMeta("ParkPlan", "fleet", "c1")
	for _, c := range []struct {
		report any
		want   string
	}{
		{ClusterList{Items: []ClusterRow{{ReportMeta: meta}, {ReportMeta: api.NewNamespacedReportMeta("ParkState", "other", "c2")}}}, "cluster.cluster.x-k8s.io/c1\ncluster.cluster.x-k8s.io/c2\n"},
		{ClusterList{}, ""},
		{&ParkPlan{ReportMeta: meta}, "cluster.cluster.x-k8s.io/c1\n"},
		{&ResumePlan{ReportMeta: meta}, "cluster.cluster.x-k8s.io/c1\n"},
		{StatusReport{ReportMeta: meta}, "cluster.cluster.x-k8s.io/c1\n"},
	} {
		assert.Check(t, is.Equal(clitest.PrintName(t, c.report), c.want), "%T", c.report)
	}
}
