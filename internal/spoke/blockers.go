package spoke

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// RemovalBlockers are the ManifestWorks that would keep the hub from
// unjoining a spoke, by fleetconfig-controller's rule: it waits while any
// work in the cluster's namespace has no ManagedClusterAddOn owner. With
// cleanupConfig.forceClusterDrain it first taints the cluster
// TaintWorkloadCleanup (NoSelect), so the works of placements that do not
// tolerate that taint leave; without it, placement works stay.
type RemovalBlockers struct {
	// HandMade: no placement or add-on owns them; only deleting them helps.
	HandMade []string
	// Placed: placement works while forceClusterDrain is off.
	Placed []string
	// Kept: with forceClusterDrain, works whose placement keeps the
	// cluster despite the workload-cleanup taint ("work (placement ns/name)"),
	// or cannot be found.
	Kept []string
}

// TaintWorkloadCleanup is the taint fleetconfig-controller puts on a
// deleted spoke's ManagedCluster when forceClusterDrain is set.
const TaintWorkloadCleanup = "fleetconfig.open-cluster-management.io/workload-cleanup"

// FindRemovalBlockers sorts a spoke's works by what would keep it (pure).
// taints are the ManagedCluster's; now stands for when the hub would add
// the workload-cleanup taint.
func FindRemovalBlockers(s *fleetconfig.Spoke, works []ocm.ManifestWork, placements []ocm.Placement, taints []ocm.Taint, now time.Time) RemovalBlockers {
	var b RemovalBlockers
	cleanup := ocm.Taint{Key: TaintWorkloadCleanup, Effect: ocm.TaintEffectNoSelect, TimeAdded: &metav1.Time{Time: now}}
	taints = append(append([]ocm.Taint(nil), taints...), cleanup)
	for i := range works {
		w := &works[i]
		switch {
		case w.IsAddOnWork():
		case !w.IsPlacementWork():
			b.HandMade = append(b.HandMade, w.Name)
		case !s.Spec.CleanupConfig.ForceClusterDrain:
			b.Placed = append(b.Placed, w.Name)
		default:
			ps := ocm.PlacementsOf(w.Labels, placements)
			if len(ps) == 0 {
				// Nothing shows the work will leave: it stays, as far as
				// anyone can tell.
				b.Kept = append(b.Kept, fmt.Sprintf("%s (its placement %s cannot be found)", w.Name, w.Labels[ocm.PlacementLabel]))
			}
			for _, p := range ps {
				if ocm.Misconfigured(p.Spec.Tolerations) != "" {
					continue
				}
				if _, leaves := ocm.KeptUntil(p.Spec.Tolerations, taints, true); !leaves {
					b.Kept = append(b.Kept, fmt.Sprintf("%s (placement %s/%s)", w.Name, p.Namespace, p.Name))
					break
				}
			}
		}
	}
	return b
}

// Refusal is the error that refuses the removal up front, nil when nothing blocks it.
func (b RemovalBlockers) Refusal(name string) error {
	switch {
	case len(b.HandMade) > 0:
		return exitcode.RefusedErrorf("spoke %s still has ManifestWorks that no placement or add-on owns, and the hub will not unjoin it while they exist: %s; nothing was changed: move or delete them (kubectl delete manifestwork -n %s %s), then run this again",
			name, strings.Join(b.HandMade, ", "), name, strings.Join(b.HandMade, " "))
	case len(b.Placed) > 0:
		return exitcode.RefusedErrorf("spoke %s still has ManifestWorks its placements put there (%s), and with cleanupConfig.forceClusterDrain off the hub will not unjoin it while they exist; nothing was changed: run `kubectl fleetdrain cluster %s` first (or `kubectl spoke set %s cleanupConfig.forceClusterDrain=true`), then run this again",
			name, strings.Join(b.Placed, ", "), name, name)
	case len(b.Kept) > 0:
		return exitcode.RefusedErrorf("spoke %s has ManifestWorks whose placements tolerate the %s taint or cannot be found, so nothing shows they leave and the hub will not unjoin it while they stay: %s; nothing was changed: delete them or change those placements, then run this again",
			name, TaintWorkloadCleanup, strings.Join(b.Kept, ", "))
	}
	return nil
}
