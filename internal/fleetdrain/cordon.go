package fleetdrain

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/cli"
)

// CordonedByAnnotation marks a cordon fleetdrain made. It is written in the
// same guarded patch as the cordon and removed with it, so that a run after
// an interrupted one knows the cordon as its own and still gives the node
// back, and a node someone else cordoned is never uncordoned. The mark alone
// proves nothing: a plain `kubectl uncordon` leaves it behind, and a later
// cordon by someone else would find it. See CordonedByUs.
const CordonedByAnnotation = "fleetdrain.spokekit.io/cordoned-by"

// FieldManager names kubectl fleetdrain in the managedFields of everything
// it writes (nodes and ManagedClusters), and is the value of
// CordonedByAnnotation: who made the cordon.
const FieldManager = "kubectl-fleetdrain"

// CordonedByUs tells whether the node's cordon is fleetdrain's: the node is
// cordoned, carries the mark, and the API server's own record of who set
// spec.unschedulable (managedFields) names fleetdrain. Unschedulable false
// is omitted from a Node, so an uncordon by anyone drops fleetdrain's
// ownership of the field, and a later cordon belongs to whoever made it.
// Missing managedFields prove nothing and count as someone else's cordon.
func CordonedByUs(n *corev1.Node) bool {
	_, marked := n.Annotations[CordonedByAnnotation]
	return marked && n.Spec.Unschedulable && ownsUnschedulable(n.ManagedFields)
}

// staleMark tells whether the node carries the mark without the cordon it
// marked: uncordoned since, or cordoned again by someone else.
func staleMark(n *corev1.Node) bool {
	_, marked := n.Annotations[CordonedByAnnotation]
	return marked && !CordonedByUs(n)
}

// ownsUnschedulable tells whether fleetdrain's field manager set
// spec.unschedulable, as the API server records it.
func ownsUnschedulable(entries []metav1.ManagedFieldsEntry) bool {
	for _, e := range entries {
		if e.Manager != FieldManager || e.FieldsV1 == nil || e.Subresource != "" {
			continue
		}
		var fields struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if json.Unmarshal(e.FieldsV1.GetRawBytes(), &fields) != nil {
			continue
		}
		if _, ok := fields.Spec["f:unschedulable"]; ok {
			return true
		}
	}
	return false
}

// removeMarkOps are the operations that remove a stale mark, behind a test
// of its value, so that a mark written since is never taken away unseen.
func removeMarkOps(n *corev1.Node) []api.PatchOp {
	path := api.AnnotationPath(CordonedByAnnotation)
	return []api.PatchOp{{Op: "test", Path: path, Value: n.Annotations[CordonedByAnnotation]}, {Op: "remove", Path: path}}
}

// cordonOps are the operations that cordon n and mark the cordon as
// fleetdrain's. A node already cordoned (by anyone) is not cordoned again;
// a stale mark on it is removed, so it is never taken for fleetdrain's.
func cordonOps(n *corev1.Node) []api.PatchOp {
	if n.Spec.Unschedulable {
		if staleMark(n) {
			return removeMarkOps(n)
		}
		return nil
	}
	ops := []api.PatchOp{{Op: "add", Path: "/spec/unschedulable", Value: true}}
	if n.Annotations == nil {
		return append(ops, api.PatchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{CordonedByAnnotation: FieldManager}})
	}
	// add replaces a stale mark, if there is one.
	return append(ops, api.PatchOp{Op: "add", Path: api.AnnotationPath(CordonedByAnnotation), Value: FieldManager})
}

// giveBackOps are the operations that uncordon n and remove fleetdrain's
// mark. When the cordon is not fleetdrain's (someone else's, or none) only
// a stale mark is removed and the node stays as it is.
func giveBackOps(n *corev1.Node) []api.PatchOp {
	if staleMark(n) {
		return removeMarkOps(n)
	}
	if !CordonedByUs(n) {
		return nil
	}
	return append(removeMarkOps(n), api.PatchOp{Op: "test", Path: "/spec/unschedulable", Value: true},
		api.PatchOp{Op: "replace", Path: "/spec/unschedulable", Value: false})
}

// Cordon makes the node unschedulable and marks the cordon as fleetdrain's,
// in one patch guarded by the node's resourceVersion. A node already
// cordoned is left cordoned (changed false); only a stale mark goes.
func Cordon(ctx context.Context, client kubernetes.Interface, name string, dryRun cli.DryRun) (changed bool, err error) {
	err = patchNode(ctx, client, name, dryRun, func(n *corev1.Node) []api.PatchOp {
		changed = !n.Spec.Unschedulable
		return cordonOps(n)
	})
	if err != nil {
		return false, fmt.Errorf("cordoning node %s: %w", name, err)
	}
	return changed, nil
}

// GiveBackResult is what GiveBack found and did.
type GiveBackResult string

// Give-back results.
const (
	GaveBack GiveBackResult = "uncordoned"
	// NotCordoned: the node was schedulable; nothing to give back.
	NotCordoned GiveBackResult = "already schedulable"
	// CordonedByOther: someone else cordoned the node; it stays cordoned.
	CordonedByOther GiveBackResult = "cordoned by someone else"
	// StaleMarkRemoved: the node was schedulable but still carried
	// fleetdrain's mark of an earlier cordon, which is removed.
	StaleMarkRemoved GiveBackResult = "already schedulable; stale cordon mark removed"
)

// GiveBack uncordons the node if, and only if, fleetdrain cordoned it.
func GiveBack(ctx context.Context, client kubernetes.Interface, name string, dryRun cli.DryRun) (GiveBackResult, error) {
	result := NotCordoned
	err := patchNode(ctx, client, name, dryRun, func(n *corev1.Node) []api.PatchOp {
		result = giveBackResult(n)
		return giveBackOps(n)
	})
	if err != nil {
		return result, fmt.Errorf("uncordoning node %s: %w", name, err)
	}
	return result, nil
}

func giveBackResult(n *corev1.Node) GiveBackResult {
	switch {
	case CordonedByUs(n):
		return GaveBack
	case n.Spec.Unschedulable:
		return CordonedByOther
	case staleMark(n):
		return StaleMarkRemoved
	}
	return NotCordoned
}

// patchNode sends the ops change returns for the node as read now, guarded
// by its resourceVersion, reading again and retrying on conflict.
func patchNode(ctx context.Context, client kubernetes.Interface, name string, dryRun cli.DryRun, change func(*corev1.Node) []api.PatchOp) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		data, err := guardedPatch(n.ResourceVersion, change(n))
		if err != nil || data == nil {
			return err
		}
		_, err = client.CoreV1().Nodes().Patch(ctx, name, types.JSONPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, DryRun: cli.DryRunOption(dryRun)})
		return err
	})
}

// guardedPatch encodes ops behind a replace of the resourceVersion that was
// read: the API server refuses the patch with a conflict when the object
// changed since. No ops, no patch (nil).
func guardedPatch(resourceVersion string, ops []api.PatchOp) ([]byte, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	ops = append([]api.PatchOp{{Op: "replace", Path: "/metadata/resourceVersion", Value: resourceVersion}}, ops...)
	data, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding the patch: %w", err)
	}
	return data, nil
}
