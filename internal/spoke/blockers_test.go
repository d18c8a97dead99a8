package spoke

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// TestRemovalBlockers follows fleetconfig-controller's rule: works no add-on
// owns block; placement works leave only with forceClusterDrain, and then
// only those whose placement does not tolerate the workload-cleanup taint.
func TestRemovalBlockers(t *testing.T) {
	work := func(name, placement string, owners ...string) ocm.ManifestWork {
		w := ocm.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if placement != "" {
			w.Labels = map[string]string{ocm.PlacementLabel: placement, ocm.ManifestWorkReplicaSetLabel: "apps." + placement}
		}
		for _, o := range owners {
			w.OwnerReferences = append(w.OwnerReferences, metav1.OwnerReference{Kind: o, Name: "x"})
		}
		return w
	}
	placement := func(name string, tols ...ocm.Toleration) ocm.Placement {
		p := ocm.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}}
		p.Spec.Tolerations = tols
		return p
	}
	placements := []ocm.Placement{
		placement("web"),
		placement("monitoring", ocm.Toleration{Operator: ocm.TolerationOpExists}),
	}
	placed := []ocm.ManifestWork{work("web", "web"), work("monitoring", "monitoring"), work("addon", "", ocm.ManagedClusterAddOnKind, "Deployment")}

	off := newSpoke("spoke-1")
	b := FindRemovalBlockers(&off, placed, placements, nil, now)
	assert.DeepEqual(t, b, RemovalBlockers{Placed: []string{"web", "monitoring"}})
	err := b.Refusal("spoke-1")
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	assert.Check(t, is.Contains(err.Error(), "run `kubectl fleetdrain cluster spoke-1` first"))

	on := newSpoke("spoke-1", func(s *fleetconfig.Spoke) { s.Spec.CleanupConfig.ForceClusterDrain = true })
	b = FindRemovalBlockers(&on, placed, placements, nil, now)
	assert.DeepEqual(t, b, RemovalBlockers{Kept: []string{"monitoring (placement apps/monitoring)"}})
	assert.Check(t, is.Contains(b.Refusal("spoke-1").Error(), TaintWorkloadCleanup))

	b = FindRemovalBlockers(&on, placed[:1], placements, nil, now)
	assert.NilError(t, b.Refusal("spoke-1"), "the web work leaves with the taint")

	// A placement that cannot be found shows nothing: its work stays.
	b = FindRemovalBlockers(&on, placed[:1], placements[1:], nil, now)
	assert.DeepEqual(t, b, RemovalBlockers{Kept: []string{"web (its placement web cannot be found)"}})
	b = FindRemovalBlockers(&on, placed[:1], nil, nil, now)
	assert.Check(t, b.Refusal("spoke-1") != nil, "no placements listed at all")

	b = FindRemovalBlockers(&on, append(placed, work("hand-made", "")), placements, nil, now)
	assert.DeepEqual(t, b.HandMade, []string{"hand-made"})
	assert.Check(t, is.Contains(b.Refusal("spoke-1").Error(), "kubectl delete manifestwork -n spoke-1 hand-made"), "hand-made works come first")
}
