//go:build e2e

package fleetdrain

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/spokekit/spokekit/e2e/fixture"
	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/internal/api/ocm"
)

// clusterSet puts a joined cluster into its own ManagedClusterSet, bound
// to namespace ns, so the placements there see only that cluster.
func clusterSet(set, ns string) string {
	return fmt.Sprintf(`
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: %[1]s}
spec: {clusterSelector: {selectorType: ExclusiveClusterSetLabel}}
---
apiVersion: v1
kind: Namespace
metadata: {name: %[2]s}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: %[1]s, namespace: %[2]s}
spec: {clusterSet: %[1]s}
`, set, ns)
}

// replicaSet is fixture.WorkReplicaSet as the next document of a stream.
func replicaSet(ns, name string) string { return "\n---\n" + fixture.WorkReplicaSet(ns, name) + "\n" }

// fleet on spoke-a: a placement that drops tainted clusters, one that
// tolerates every taint, a replica set for each, and a work made by hand.
var drainFleet = clusterSet("drain", "apps") + `
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
` + replicaSet("apps", "web") + replicaSet("apps", "monitoring") + `
---
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: handmade, namespace: spoke-a}
spec:
  workload:
    manifests:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: handmade, namespace: default}}
`

type clusterReport struct {
	DryRun string `json:"dryRun"`
	Items  []struct {
		Result             string
		AlreadyTainted     bool
		Moves, Stays       []workEntry
		TolerantPlacements []string
	}
}

type workEntry struct {
	Name, Placement, Reason string
	MovesAt                 *metav1.Time
}

func names(ws []workEntry) []string {
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

// joinSet labels a ManagedCluster into a cluster set and adds taints (the
// hub's webhook stamps their timeAdded).
func joinSet(t *testing.T, c *harness.Cluster, cluster, set string, add ...ocm.Taint) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{"cluster.open-cluster-management.io/clusterset": set}}})
	assert.NilError(t, err)
	_, err = c.Dynamic.Resource(ocm.ManagedClusterResource).Patch(ctx(t, time.Minute), cluster, "application/merge-patch+json", patch, metav1.PatchOptions{})
	assert.NilError(t, err)
	addTaints(t, c, cluster, add...)
}

func addTaints(t *testing.T, c *harness.Cluster, cluster string, add ...ocm.Taint) {
	t.Helper()
	for _, taint := range add {
		ops := []map[string]any{{"op": "add", "path": "/spec/taints/-", "value": taint}}
		if len(taints(t, c, cluster)) == 0 {
			ops = []map[string]any{{"op": "add", "path": "/spec/taints", "value": []ocm.Taint{taint}}}
		}
		patch, err := json.Marshal(ops)
		assert.NilError(t, err)
		_, err = c.Dynamic.Resource(ocm.ManagedClusterResource).Patch(ctx(t, time.Minute), cluster, "application/json-patch+json", patch, metav1.PatchOptions{})
		assert.NilError(t, err)
	}
}

func workExists(t *testing.T, c *harness.Cluster, cluster, name string) bool {
	t.Helper()
	return workExistsIn(ctx(t, time.Minute), t, c, cluster, name)
}

// workExistsIn is workExists within cx (a poll's context).
func workExistsIn(cx context.Context, t *testing.T, c *harness.Cluster, cluster, name string) bool {
	t.Helper()
	_, err := c.Dynamic.Resource(ocm.ManifestWorkResource).Namespace(cluster).Get(cx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	assert.NilError(t, err)
	return true
}

// workDeletion says, for a failure message, whether the work is being
// deleted and what holds it ("" when it is not, or cannot be read).
func workDeletion(cx context.Context, c *harness.Cluster, cluster, name string) string {
	w, err := c.Dynamic.Resource(ocm.ManifestWorkResource).Namespace(cluster).Get(cx, name, metav1.GetOptions{})
	if err != nil || w.GetDeletionTimestamp() == nil {
		return ""
	}
	return fmt.Sprintf(" (deleted at %s, held by %v)", w.GetDeletionTimestamp().UTC().Format(time.RFC3339), w.GetFinalizers())
}

// waitWorks waits until the works with these names exist in the cluster
// namespace (and, on the spoke, their ConfigMaps), or are all gone.
func waitWorks(t *testing.T, f fleet, spoke *harness.Cluster, cluster string, exist bool, works ...string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx(t, 3*time.Minute), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, w := range works {
			if workExistsIn(ctx, t, f.hub.Cluster, cluster, w) != exist {
				return false, nil
			}
			_, err := spoke.Kube.CoreV1().ConfigMaps("default").Get(ctx, w, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return false, err
			}
			if (err == nil) != exist {
				return false, nil
			}
		}
		return true, nil
	})
	assert.NilError(t, err, "works %v in %s, want exist=%v", works, cluster, exist)
}

// decided tells whether the placement's PlacementDecisions name the cluster.
func decided(t *testing.T, c *harness.Cluster, ns, placement, cluster string) bool {
	t.Helper()
	return decidedIn(ctx(t, time.Minute), t, c, ns, placement, cluster)
}

// decidedIn is decided within cx (a poll's context).
func decidedIn(cx context.Context, t *testing.T, c *harness.Cluster, ns, placement, cluster string) bool {
	t.Helper()
	l, err := c.Dynamic.Resource(ocm.PlacementDecisionResource).Namespace(ns).List(cx,
		metav1.ListOptions{LabelSelector: ocm.PlacementDecisionLabel + "=" + placement})
	assert.NilError(t, err)
	for _, d := range l.Items {
		ds, _, _ := unstructured.NestedSlice(d.Object, "status", "decisions")
		if slices.ContainsFunc(ds, func(x any) bool { return x.(map[string]any)["clusterName"] == cluster }) {
			return true
		}
	}
	return false
}

func TestClusterDrainAndUncordon(t *testing.T) {
	f := hubFleet(t)
	c := f.hub.Cluster
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), drainFleet))
	joinSet(t, c, "spoke-a", "drain", ocm.Taint{Key: "example.com/maintenance-window", Value: "sunday", Effect: ocm.TaintEffectPreferNoSelect})
	waitWorks(t, f, f.spokeA, "spoke-a", true, "web", "monitoring", "handmade")
	before := taints(t, c, "spoke-a")
	assert.Equal(t, len(before), 1)
	assert.Check(t, before[0].TimeAdded != nil, "the hub's webhook stamps timeAdded")

	t.Run("dry run lists what moves and what stays", func(t *testing.T) {
		r := kubectl(t, c, "fleetdrain", "cluster", "spoke-a", "--min-available", "0", "--dry-run=client", "-o", "json")
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
		assert.Check(t, workExists(t, c, "spoke-a", "web"), "a dry run moves nothing")

		r = kubectl(t, c, "fleetdrain", "cluster", "spoke-a", "--min-available", "0", "--dry-run=server")
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
			{[]string{"cluster", "spoke-a", "--timeout", "-1s"}, 2, "--timeout"},
			{[]string{"cluster", "spoke-a", "-o", "xml"}, 2, "output format"},
			{[]string{"uncordon", "cluster", "no-such-spoke"}, 3, "not found"},
		} {
			r := kubectl(t, c, append([]string{"fleetdrain"}, tc.args...)...)
			assert.Equal(t, r.ExitCode, tc.code, r)
			assert.Check(t, is.Contains(r.Stderr, tc.want), r)
			assert.DeepEqual(t, taints(t, c, "spoke-a"), before)
		}
	})

	t.Run("drain ends once the placement's works are gone", func(t *testing.T) {
		r := kubectl(t, c, "fleetdrain", "cluster", "spoke-a", "--min-available", "0", "--timeout", "2m")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, "handmade"), r)
		assert.Check(t, is.Contains(r.Stdout, "no placement owns it"), r)
		assert.Check(t, is.Contains(r.Stdout, "apps/monitoring tolerates"), r)
		// Gone because the placement controller dropped the cluster and the
		// replica set controller deleted its work; the agent removed the rest.
		assert.Check(t, !decided(t, c, "apps", "web", "spoke-a"))
		assert.Check(t, decided(t, c, "apps", "monitoring", "spoke-a"))
		assert.Check(t, !workExists(t, c, "spoke-a", "web"), "the placement's work left")
		waitWorks(t, f, f.spokeA, "spoke-a", false, "web")
		assert.Check(t, workExists(t, c, "spoke-a", "monitoring") && workExists(t, c, "spoke-a", "handmade"))
		after := taints(t, c, "spoke-a")
		assert.Equal(t, len(after), 2, "%+v", after)
		assert.DeepEqual(t, after[0], before[0])
		assert.Equal(t, after[1].Key, "fleetdrain.spokekit.io/drained")
		assert.Equal(t, after[1].Effect, "NoSelect")
		assert.Check(t, after[1].TimeAdded != nil, "sent without timeAdded (the webhook refuses one), stamped by the hub")

		mc, err := c.Dynamic.Resource(ocm.ManagedClusterResource).Get(ctx(t, time.Minute), "spoke-a", metav1.GetOptions{})
		assert.NilError(t, err)
		r = kubectl(t, c, "fleetdrain", "cluster", "spoke-a", "--min-available", "0", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, "a second drain is a no-op: %s", r)
		assert.Check(t, is.Contains(r.Stdout, `"alreadyTainted": true`), r)
		again, err := c.Dynamic.Resource(ocm.ManagedClusterResource).Get(ctx(t, time.Minute), "spoke-a", metav1.GetOptions{})
		assert.NilError(t, err)
		// Not one write: the spec is the same, and so is fleetdrain's entry in
		// managedFields, which any write of it would stamp with a new time
		// (the hub's controllers keep writing the status, so the
		// resourceVersion cannot tell).
		assert.Check(t, is.DeepEqual(again.Object["spec"], mc.Object["spec"]))
		assert.Check(t, is.DeepEqual(fleetdrainFields(again), fleetdrainFields(mc)), "the second drain wrote to the ManagedCluster")
	})

	t.Run("uncordon removes only the drain taint and the work comes back", func(t *testing.T) {
		r := kubectl(t, c, "fleetdrain", "uncordon", "cluster", "spoke-a", "--dry-run=client")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Equal(t, len(taints(t, c, "spoke-a")), 2)
		r = kubectl(t, c, "fleetdrain", "uncordon", "cluster", "spoke-a")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.DeepEqual(t, taints(t, c, "spoke-a"), before)
		waitWorks(t, f, f.spokeA, "spoke-a", true, "web")
		assert.Check(t, decided(t, c, "apps", "web", "spoke-a"))
		r = kubectl(t, c, "fleetdrain", "uncordon", "cluster", "spoke-a", "-o", "json")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stdout, `"changed": false`), r)
	})
}

// A blank -l parses as the empty selector, which selects every cluster:
// it is refused before any request, and no ManagedCluster of the hub gets
// a taint (--min-available 0, so that the guard would not refuse the
// drain of every cluster first).
func TestClusterBlankSelectorTaintsNothing(t *testing.T) {
	f := hubFleet(t)
	c := f.hub.Cluster
	before := allTaints(t, c)
	assert.Assert(t, len(before) >= 2, "the hub has its spokes: %v", before)
	for _, blank := range []string{" ", "\t "} {
		r := kubectl(t, c, "fleetdrain", "cluster", "-l", blank, "--min-available", "0", "--timeout", "30s")
		assert.Check(t, is.Equal(r.ExitCode, 2), r)
		assert.Check(t, is.Contains(r.Stderr, "is blank and selects everything"), r)
		assert.Check(t, is.DeepEqual(allTaints(t, c), before))
	}
}

// allTaints is the taints of every ManagedCluster of the hub, by name.
func allTaints(t *testing.T, c *harness.Cluster) map[string][]ocm.Taint {
	t.Helper()
	list, err := c.Dynamic.Resource(ocm.ManagedClusterResource).List(ctx(t, time.Minute), metav1.ListOptions{})
	assert.NilError(t, err)
	out := map[string][]ocm.Taint{}
	for _, u := range list.Items {
		out[u.GetName()] = taints(t, c, u.GetName())
	}
	return out
}

// fleetdrainFields is the managedFields entry of kubectl fleetdrain.
func fleetdrainFields(u *unstructured.Unstructured) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, f := range u.GetManagedFields() {
		if f.Manager == "kubectl-fleetdrain" {
			out = append(out, f)
		}
	}
	return out
}
