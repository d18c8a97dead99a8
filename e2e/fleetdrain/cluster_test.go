//go:build e2e

package fleetdrain

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/e2e/standin/placement"
	"github.com/spokekit/spokekit/internal/api/ocm"
)

// fleet is a spoke with an unrelated taint, a placement that drops tainted
// clusters, one that tolerates every taint, and three works: one from each
// placement and one made by hand.
const fleet = `
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: spoke-a}
spec:
  hubAcceptsClient: true
  taints:
  - {key: example.com/maintenance-window, value: sunday, effect: PreferNoSelect, timeAdded: "2026-01-01T00:00:00Z"}
---
apiVersion: v1
kind: Namespace
metadata: {name: spoke-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: web, namespace: apps}
spec: {}
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: monitoring, namespace: apps}
spec:
  tolerations: [{operator: Exists}]
---
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata:
  name: web
  namespace: spoke-a
  labels: {work.open-cluster-management.io/placementname: web, work.open-cluster-management.io/manifestworkreplicaset: apps.web}
spec: {workload: {manifests: []}}
---
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata:
  name: monitoring
  namespace: spoke-a
  labels: {work.open-cluster-management.io/placementname: monitoring, work.open-cluster-management.io/manifestworkreplicaset: apps.monitoring}
spec: {workload: {manifests: []}}
---
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: handmade, namespace: spoke-a}
spec: {workload: {manifests: []}}
`

type clusterReport struct {
	DryRun string `json:"dryRun"`
	Items  []struct {
		Result             string
		AlreadyTainted     bool
		Moves, Stays       []struct{ Name, Placement, Reason string }
		TolerantPlacements []string
	}
}

func names(ws []struct{ Name, Placement, Reason string }) []string {
	out := []string{}
	for _, w := range ws {
		out = append(out, w.Name)
	}
	return out
}

func taints(t *testing.T, c *harness.Cluster, name string) []ocm.Taint {
	t.Helper()
	u, err := c.Dynamic.Resource(ocm.ManagedClusterResource).Get(ctx(t, time.Minute), name, metav1.GetOptions{})
	assert.NilError(t, err)
	data, err := json.Marshal(u.Object["spec"].(map[string]any)["taints"])
	assert.NilError(t, err)
	var out []ocm.Taint
	assert.NilError(t, json.Unmarshal(data, &out))
	return out
}

func workExists(t *testing.T, c *harness.Cluster, name string) bool {
	t.Helper()
	_, err := c.Dynamic.Resource(ocm.ManifestWorkResource).Namespace("spoke-a").Get(ctx(t, time.Minute), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	assert.NilError(t, err)
	return true
}

func TestClusterDrainAndUncordon(t *testing.T) {
	c := hub.get(t)
	standin, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go func() { _ = placement.Run(standin, c.Dynamic) }()
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), fleet))
	before := taints(t, c, "spoke-a")
	assert.Equal(t, len(before), 1)

	t.Run("dry run lists what moves and what stays", func(t *testing.T) {
		r := kubectl(t, c, "fleetdrain", "cluster", "spoke-a", "--dry-run=client", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		var rep clusterReport
		assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &rep), r)
		assert.Equal(t, rep.DryRun, "client")
		item := rep.Items[0]
		assert.Equal(t, item.Result, "Planned")
		assert.DeepEqual(t, names(item.Moves), []string{"web"})
		assert.DeepEqual(t, names(item.Stays), []string{"handmade", "monitoring"})
		assert.DeepEqual(t, item.TolerantPlacements, []string{"apps/monitoring"})
		assert.DeepEqual(t, taints(t, c, "spoke-a"), before)
		assert.Check(t, workExists(t, c, "web"), "a dry run moves nothing")

		r = kubectl(t, c, "fleetdrain", "cluster", "spoke-a", "--dry-run=server")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.DeepEqual(t, taints(t, c, "spoke-a"), before)
	})

	t.Run("bad input changes nothing", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"cluster", "spoke-a", "no-such-spoke"}, 3, `ManagedCluster "no-such-spoke" not found`},
			{[]string{"cluster"}, 2, "at least 1 cluster name"},
			{[]string{"cluster", "spoke-a", "--timeout", "0s"}, 2, "--timeout"},
			{[]string{"cluster", "spoke-a", "-o", "xml"}, 2, "output format"},
			{[]string{"uncordon", "cluster", "no-such-spoke"}, 3, "not found"},
		} {
			r := kubectl(t, c, append([]string{"fleetdrain"}, tc.args...)...)
			assert.Equal(t, r.ExitCode, tc.code, r)
			assert.Check(t, is.Contains(r.Stderr, tc.want), r)
			assert.DeepEqual(t, taints(t, c, "spoke-a"), before)
		}
	})

	t.Run("drain moves placement works and reports the rest", func(t *testing.T) {
		r := kubectl(t, c, "fleetdrain", "cluster", "spoke-a", "--timeout", "1m")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, "handmade"), r)
		assert.Check(t, is.Contains(r.Stdout, "no placement owns it"), r)
		assert.Check(t, is.Contains(r.Stdout, "apps/monitoring tolerates"), r)
		assert.Check(t, !workExists(t, c, "web"), "the placement's work left")
		assert.Check(t, workExists(t, c, "monitoring") && workExists(t, c, "handmade"))
		after := taints(t, c, "spoke-a")
		assert.Equal(t, len(after), 2, "%+v", after)
		assert.DeepEqual(t, after[0], before[0])
		assert.Equal(t, after[1].Key, "fleetdrain.spokekit.io/drained")
		assert.Equal(t, after[1].Effect, "NoSelect")
		assert.Check(t, after[1].TimeAdded == nil, "timeAdded is left to the hub")

		r = kubectl(t, c, "fleetdrain", "cluster", "spoke-a", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, "a second drain is a no-op: %s", r)
		assert.Check(t, is.Contains(r.Stdout, `"alreadyTainted": true`), r)
		assert.Equal(t, len(taints(t, c, "spoke-a")), 2)
	})

	t.Run("uncordon removes only the drain taint", func(t *testing.T) {
		r := kubectl(t, c, "fleetdrain", "uncordon", "cluster", "spoke-a", "--dry-run=client")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Equal(t, len(taints(t, c, "spoke-a")), 2)
		r = kubectl(t, c, "fleetdrain", "uncordon", "cluster", "spoke-a")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.DeepEqual(t, taints(t, c, "spoke-a"), before)
		r = kubectl(t, c, "fleetdrain", "uncordon", "cluster", "spoke-a", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, `"changed": false`), r)
	})
}
