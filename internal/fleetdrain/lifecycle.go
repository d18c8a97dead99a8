package fleetdrain

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// The Node lifecycle conditions of KEP-5683 that a drain writes. Kubernetes
// 1.37 declares them behind the alpha gate NodeLifecycleConditions and
// leaves setting and clearing them to whoever drains: no component acts on
// them, and the API server takes any condition type in a Node's status, so
// only the gate says whether the cluster's administrator turned the
// signal on.
const (
	lifecycleGate = "NodeLifecycleConditions"

	reasonDraining    = "Draining"
	reasonDrained     = "Drained"
	reasonFailed      = "DrainFailed"
	reasonInterrupted = "DrainInterrupted"
	reasonTimedOut    = "DrainTimedOut"
	reasonUncordoned  = "Uncordoned"
)

// conditionMessages say, per reason, what the drain conditions report.
var conditionMessages = map[string]string{
	reasonDraining:    "cordoned; evicting its pods",
	reasonDrained:     "every pod the drain takes is gone; the node stays cordoned",
	reasonFailed:      "the drain failed; see its report",
	reasonInterrupted: "the drain was interrupted",
	reasonTimedOut:    "--timeout ran out; run the drain again to finish",
	reasonUncordoned:  "uncordoned; the drain is over",
}

// lifecycleGateEnabled reads the gate from the API server's metrics
// (kubernetes_feature_enabled, one line per gate): true only when the line
// is there and says 1.
func lifecycleGateEnabled(metrics string) bool {
	s := bufio.NewScanner(strings.NewReader(metrics))
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, "kubernetes_feature_enabled{") || !strings.Contains(line, `name="`+lifecycleGate+`"`) {
			continue
		}
		return strings.HasSuffix(line, " 1")
	}
	return false
}

// LifecycleConditionsServed tells whether the API server runs with the
// NodeLifecycleConditions gate on. Metrics it cannot read (a user without
// get on /metrics) count as off: the conditions are a signal on top of the
// cordon and its mark, which every drain writes anyway.
func LifecycleConditionsServed(ctx context.Context, client kubernetes.Interface) bool {
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	return err == nil && lifecycleGateEnabled(string(raw))
}

// drainConditions are the node's DrainInProgress and Drained conditions as
// they are to be: lastTransitionTime moves only with the status.
func drainConditions(existing []corev1.NodeCondition, inProgress, drained bool, reason, message string, now metav1.Time) []corev1.NodeCondition {
	var out []corev1.NodeCondition
	for _, c := range []struct {
		kind corev1.NodeConditionType
		on   bool
	}{{corev1.NodeDrainInProgress, inProgress}, {corev1.NodeDrained, drained}} {
		status := corev1.ConditionFalse
		if c.on {
			status = corev1.ConditionTrue
		}
		cond := corev1.NodeCondition{Type: c.kind, Status: status, Reason: reason, Message: message, LastHeartbeatTime: now, LastTransitionTime: now}
		for _, e := range existing {
			if e.Type == c.kind && e.Status == status {
				cond.LastTransitionTime = e.LastTransitionTime
			}
		}
		out = append(out, cond)
	}
	return out
}

// hasDrainConditions tells whether a node carries a DrainInProgress or
// Drained condition that is not False: something to clear on uncordon.
func hasDrainConditions(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if (c.Type == corev1.NodeDrainInProgress || c.Type == corev1.NodeDrained) && c.Status != corev1.ConditionFalse {
			return true
		}
	}
	return false
}

// setDrainConditions writes the node's two drain conditions in a strategic
// merge patch of its status (conditions merge by type, so the kubelet's are
// left alone), guarded by the resourceVersion read, reading again on
// conflict.
func setDrainConditions(ctx context.Context, client kubernetes.Interface, name string, inProgress, drained bool, reason, message string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		patch := map[string]any{
			"metadata": map[string]any{"resourceVersion": n.ResourceVersion},
			"status":   map[string]any{"conditions": drainConditions(n.Status.Conditions, inProgress, drained, reason, message, metav1.Now())},
		}
		data, err := json.Marshal(patch)
		if err != nil {
			return err
		}
		_, err = client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, data, metav1.PatchOptions{FieldManager: FieldManager}, "status")
		return err
	})
	if err != nil {
		return fmt.Errorf("setting the %s and %s conditions of node %s: %w", corev1.NodeDrainInProgress, corev1.NodeDrained, name, err)
	}
	return nil
}
