package spoke

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
)

var namespaceResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// one returns the single watched object, nil when there is none.
func one(objs []any, into any) (bool, error) {
	if len(objs) == 0 {
		return false, nil
	}
	return true, api.DecodeUnstructured(objs[0].(*unstructured.Unstructured), into)
}

// WaitJoined follows the Spoke's PHASE, then the ManagedCluster's JOINED
// and AVAILABLE, until the spoke has joined and is available.
func (h *HubClient) WaitJoined(ctx context.Context, name string, d cli.Deadline, p *cli.Progress) error {
	err := cli.WaitFor(ctx, "spoke "+name, h.WatchNamed(fleetconfig.SpokeResource, h.Namespace, name), &unstructured.Unstructured{}, d.Left(), p,
		func(objs []any) (bool, string, error) {
			var s fleetconfig.Spoke
			found, err := one(objs, &s)
			if err != nil || !found {
				return false, "no Spoke yet", err
			}
			phase := s.Status.Phase
			if phase == "" {
				phase = "not reconciled yet"
			}
			state := "PHASE " + phase
			if c := findCondition(s.Status.Conditions, fleetconfig.SpokeConditionJoined); c != nil && c.Message != "" {
				state += " (" + c.Message + ")"
			}
			return s.Status.Phase == fleetconfig.SpokePhaseRunning, state, nil
		})
	if err != nil {
		return err
	}
	return h.waitClusterJoined(ctx, name, d, p)
}

// waitClusterJoined follows the ManagedCluster's JOINED and AVAILABLE until
// both are True.
func (h *HubClient) waitClusterJoined(ctx context.Context, name string, d cli.Deadline, p *cli.Progress) error {
	return cli.WaitFor(ctx, "ManagedCluster "+name, h.WatchNamed(ocm.ManagedClusterResource, "", name), &unstructured.Unstructured{}, d.Left(), p,
		func(objs []any) (bool, string, error) {
			var mc ocm.ManagedCluster
			found, err := one(objs, &mc)
			if err != nil || !found {
				return false, "no ManagedCluster yet", err
			}
			joined := conditionStatus(mc.Status.Conditions, ocm.ManagedClusterConditionJoined)
			avail := conditionStatus(mc.Status.Conditions, ocm.ManagedClusterConditionAvailable)
			return joined == "True" && avail == "True", fmt.Sprintf("JOINED %s, AVAILABLE %s", joined, avail), nil
		})
}

// WaitGone waits until the Spoke, the ManagedCluster and the cluster
// namespace are all gone, saying what holds each up. registered is the UID
// of the ManagedCluster before the delete: a ManagedCluster with another
// UID is a new registration by a klusterlet still running on the spoke
// (force-delete leaves it running), so the old one is gone; WaitGone says
// so with again.
func (h *HubClient) WaitGone(ctx context.Context, name string, registered types.UID, d cli.Deadline, p *cli.Progress) (again bool, err error) {
	err = cli.WaitFor(ctx, "spoke "+name+" to be deleted", h.WatchNamed(fleetconfig.SpokeResource, h.Namespace, name), &unstructured.Unstructured{}, d.Left(), p,
		func(objs []any) (bool, string, error) {
			var s fleetconfig.Spoke
			found, err := one(objs, &s)
			if err != nil || !found {
				return !found, "deleted", err
			}
			state := deletingState(&s)
			if hint := retryHint(&s, time.Now()); hint != "" {
				state += "; " + hint
			}
			return false, state, nil
		})
	if err != nil {
		return false, err
	}
	for _, step := range []struct {
		what string
		gvr  schema.GroupVersionResource
	}{{"ManagedCluster " + name, ocm.ManagedClusterResource}, {"namespace " + name, namespaceResource}} {
		err := cli.WaitFor(ctx, step.what+" to be deleted", h.WatchNamed(step.gvr, "", name), &unstructured.Unstructured{}, d.Left(), p,
			func(objs []any) (bool, string, error) {
				if step.gvr != ocm.ManagedClusterResource {
					return len(objs) == 0, goneState(len(objs) == 0), nil
				}
				var done bool
				done, again = managedClusterGone(objs, registered)
				return done, goneState(done) + map[bool]string{true: ", and registered again by the klusterlet still running on the spoke"}[again], nil
			})
		if err != nil {
			return again, err
		}
	}
	return again, nil
}

// managedClusterGone tells whether the ManagedCluster of UID registered has
// gone from what a watch of its name lists, and whether another one has
// taken its name since (a new registration).
func managedClusterGone(objs []any, registered types.UID) (gone, again bool) {
	if len(objs) == 0 {
		return true, false
	}
	u, ok := objs[0].(*unstructured.Unstructured)
	if !ok || u.GetUID() == registered {
		return false, false
	}
	return true, true
}

func goneState(gone bool) string {
	if gone {
		return "deleted"
	}
	return "still there"
}

// deletingState says in words where the deletion of a Spoke stands.
func deletingState(s *fleetconfig.Spoke) string {
	state := "PHASE " + s.Status.Phase
	if c := findCondition(s.Status.Conditions, fleetconfig.SpokeConditionCleanupFailed); c != nil && c.Status == metav1.ConditionTrue {
		state += ": " + c.Message
	}
	if len(s.Finalizers) > 0 {
		state += fmt.Sprintf(" (finalizers: %v)", s.Finalizers)
	}
	return state
}

// controllerBackoffMax is the longest wait of controller-runtime's default
// rate limiter, which upstream's Spoke controller retries a failed
// deletion step with.
const controllerBackoffMax = 1000 * time.Second

// retryHint says, while a deletion step fails (CleanupFailed True), when the
// FleetConfig controller tries again: its wait doubles after each failure,
// so the next one comes about as long after now as the failures have lasted
// (up to controllerBackoffMax). A removal unblocked after long failures
// takes that long more; --timeout may need to cover it.
func retryHint(s *fleetconfig.Spoke, now time.Time) string {
	c := findCondition(s.Status.Conditions, fleetconfig.SpokeConditionCleanupFailed)
	if c == nil || c.Status != metav1.ConditionTrue || c.LastTransitionTime.IsZero() {
		return ""
	}
	failing := max(now.Sub(c.LastTransitionTime.Time).Round(time.Second), 0)
	return fmt.Sprintf("failing for %s, the controller retries within about %s (its wait doubles after each failure, up to %s)",
		failing, min(failing, controllerBackoffMax), controllerBackoffMax)
}

func findCondition(conds []fleetconfig.Condition, t string) *fleetconfig.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
