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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/spokekit/spokekit/e2e/fixture"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/fleetdrain"
)

func drainTainted(t *testing.T, f fleet, cluster string) bool {
	t.Helper()
	for _, taint := range taints(t, f.hub.Cluster, cluster) {
		if taint.Key == fleetdrain.DrainTaintKey {
			return true
		}
	}
	return false
}

// The placement guard against the real placement controller: a drain that
// would empty a Placement is refused with nothing tainted; an allowed one
// ends in the decision the guard predicted, the moved work Applied and
// Available there; -l with --max-concurrent 1 drains in waves.
func TestClusterGuardAgainstThePlacementController(t *testing.T) {
	f := drainBed(t, "guard", "{}", "guard-a", "guard-b")
	c := f.hub.Cluster
	// Now one of the two clusters only, and a work with a manifest: the
	// work agent reports an empty one's Available as Unknown. Its ConfigMap
	// is this test's own: the apps set's work "web" puts default/web on the
	// spoke API server these clusters' agents share.
	// The Placement first, and its work set once it decided: while the
	// placement controller first scores the two clusters, its decision can
	// flip between them within a second, and under load OCM's
	// ManifestWorkReplicaSet controller was seen to keep the work it made
	// on the cluster decided first (seen once with four e2e jobs at once).
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), fixture.Placement("guard", "web", "{numberOfClusters: 1}")))
	err := wait.PollUntilContextTimeout(ctx(t, 3*time.Minute), 200*time.Millisecond, 2*time.Minute, true, func(cx context.Context) (bool, error) {
		p, err := c.Dynamic.Resource(ocm.PlacementResource).Namespace("guard").Get(cx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		n, _, _ := unstructured.NestedInt64(p.Object, "status", "numberOfSelectedClusters")
		return n == 1 && placementSatisfied(p) &&
			decidedIn(cx, t, c, "guard", "web", "guard-a") != decidedIn(cx, t, c, "guard", "web", "guard-b"), nil
	})
	assert.NilError(t, err, "the placement decides on one cluster")
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), fixture.WorkReplicaSetOf("guard", "web", "guard-web")))
	var selected, spare, last string
	err = wait.PollUntilContextTimeout(ctx(t, 3*time.Minute), 200*time.Millisecond, 2*time.Minute, true, func(cx context.Context) (bool, error) {
		a, b := decidedIn(cx, t, c, "guard", "web", "guard-a"), decidedIn(cx, t, c, "guard", "web", "guard-b")
		workA, workB := workExistsIn(cx, t, c, "guard-a", "web"), workExistsIn(cx, t, c, "guard-b", "web")
		last = fmt.Sprintf("decided guard-a=%v guard-b=%v; work on guard-a=%v%s guard-b=%v%s", a, b,
			workA, workDeletion(cx, c, "guard-a", "web"), workB, workDeletion(cx, c, "guard-b", "web"))
		switch {
		case a && !b:
			selected, spare = "guard-a", "guard-b"
			return workA && !workB, nil
		case b && !a:
			selected, spare = "guard-b", "guard-a"
			return workB && !workA, nil
		}
		return false, nil
	})
	assert.NilError(t, err, "the placement decides on one cluster, its work there alone (last seen: %s)", last)

	r := kubectl(t, c, "fleetdrain", "cluster", "guard-a", "guard-b")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "placement guard/web selects 1 today ("+selected+"); 0 would remain eligible (none), it needs 1"), r)
	assert.Check(t, is.Contains(r.Stderr, "nothing was tainted"), r)
	assert.Check(t, !drainTainted(t, f, "guard-a") && !drainTainted(t, f, "guard-b"), "a refusal taints nothing")

	r = kubectl(t, c, "fleetdrain", "cluster", selected, "--wait-for=healthy", "--timeout", "2m", "-o", "json")
	assert.Equal(t, r.ExitCode, 0, r)
	var rep struct {
		Placements []fleetdrain.PlacementCheck
		Items      []struct {
			Result string
			Moves  []struct {
				Name    string
				MovedTo []string
			}
		}
	}
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &rep), r)
	assert.Equal(t, len(rep.Placements), 1, r)
	assert.DeepEqual(t, rep.Placements[0].Predicted, []string{spare})
	// What the guard predicted is what the placement controller decided.
	assert.Check(t, decided(t, c, "guard", "web", spare))
	assert.Check(t, !decided(t, c, "guard", "web", selected))
	assert.Equal(t, rep.Items[0].Result, "Drained")
	assert.DeepEqual(t, rep.Items[0].Moves[0].MovedTo, []string{spare})
	r = kubectl(t, c, "fleetdrain", "uncordon", "cluster", selected)
	assert.Equal(t, r.ExitCode, 0, r)

	// Waves: one cluster at a time, the placement allowed to empty.
	r = kubectl(t, c, "fleetdrain", "cluster", "-l", "cluster.open-cluster-management.io/clusterset=guard", "--max-concurrent", "1", "--min-available", "0", "--timeout", "2m", "-o", "json")
	assert.Equal(t, r.ExitCode, 0, r)
	var waves struct {
		Items []struct {
			Metadata struct{ Name string }
			Wave     int
			Result   string
		}
	}
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &waves), r)
	assert.Equal(t, len(waves.Items), 2, r)
	for i, item := range waves.Items {
		assert.Check(t, is.Equal(item.Wave, i+1))
		assert.Check(t, is.Equal(item.Result, "Drained"))
	}
	assert.Check(t, is.Contains(r.Stderr, "(wave 2)"), r)
	r = kubectl(t, c, "fleetdrain", "uncordon", "cluster", "guard-a", "guard-b")
	assert.Equal(t, r.ExitCode, 0, r)
}

// placementSatisfied says whether the placement controller reports the
// Placement's decisions complete (condition PlacementSatisfied True).
func placementSatisfied(p *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
	return slices.ContainsFunc(conds, func(x any) bool {
		cond, _ := x.(map[string]any)
		return cond["type"] == "PlacementSatisfied" && cond["status"] == "True"
	})
}
