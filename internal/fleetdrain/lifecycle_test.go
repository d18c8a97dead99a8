package fleetdrain

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestLifecycleGateIsReadFromTheMetrics(t *testing.T) {
	const other = `kubernetes_feature_enabled{name="NodeLogQuery",stage="BETA"} 1` + "\n"
	cases := []struct {
		name, metrics string
		want          bool
	}{
		{"on", other + `kubernetes_feature_enabled{name="NodeLifecycleConditions",stage="ALPHA"} 1` + "\n", true},
		{"off", other + `kubernetes_feature_enabled{name="NodeLifecycleConditions",stage="ALPHA"} 0` + "\n", false},
		{"not listed (an older API server)", other, false},
		{"no metrics", "", false},
		{"a longer gate name", `kubernetes_feature_enabled{name="NodeLifecycleConditionsV2",stage="ALPHA"} 1`, false},
	}
	for _, c := range cases {
		assert.Check(t, is.Equal(lifecycleGateEnabled(c.metrics), c.want), c.name)
	}
}

func TestDrainConditionsMoveTheirTransitionTimeOnlyWithTheirStatus(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(then.Add(time.Hour))
	existing := []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: then},
		{Type: corev1.NodeDrainInProgress, Status: corev1.ConditionTrue, LastTransitionTime: then},
		{Type: corev1.NodeDrained, Status: corev1.ConditionFalse, LastTransitionTime: then},
	}
	got := drainConditions(existing, false, true, reasonDrained, "m", now)
	assert.Assert(t, is.Len(got, 2))
	assert.Check(t, is.Equal(got[0].Type, corev1.NodeDrainInProgress))
	assert.Check(t, is.Equal(got[0].Status, corev1.ConditionFalse))
	assert.Check(t, got[0].LastTransitionTime.Equal(&now), "DrainInProgress went from True to False")
	assert.Check(t, is.Equal(got[1].Status, corev1.ConditionTrue))
	assert.Check(t, got[1].LastTransitionTime.Equal(&now))

	again := drainConditions(got, false, true, reasonDrained, "m", metav1.NewTime(now.Add(time.Hour)))
	assert.Check(t, again[1].LastTransitionTime.Equal(&now), "Drained stayed True: its transition time stays")
	assert.Check(t, again[1].LastHeartbeatTime.After(now.Time), "the heartbeat moves")
}

// conditionStatus is the status of node a's condition kind.
func conditionStatus(t *testing.T, client *fake.Clientset, kind corev1.NodeConditionType) corev1.ConditionStatus {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), "a", metav1.GetOptions{})
	assert.NilError(t, err)
	for _, c := range n.Status.Conditions {
		if c.Type == kind {
			return c.Status
		}
	}
	return ""
}

// Where the API server serves the Node lifecycle conditions, a drained node
// says Drained, no longer DrainInProgress, and keeps the cordon mark; where
// it does not, nothing but the cordon and its mark is written.
func TestDrainSetsTheLifecycleConditionsWhereServed(t *testing.T) {
	for _, served := range []bool{true, false} {
		client, _ := fakeCluster(t, node("a", false, nil))
		o, _, _ := nodeOptions(client, "a")
		o.lifecycle = served
		assert.NilError(t, o.drainNodes(context.Background()))
		n, err := client.CoreV1().Nodes().Get(context.Background(), "a", metav1.GetOptions{})
		assert.NilError(t, err)
		assert.Check(t, CordonedByUs(n) || n.Annotations[CordonedByAnnotation] != "", "the ownership mark stays (served %v)", served)
		if !served {
			assert.Check(t, is.Len(n.Status.Conditions, 0), "no conditions where the gate is off")
			continue
		}
		assert.Check(t, is.Equal(conditionStatus(t, client, corev1.NodeDrainInProgress), corev1.ConditionFalse))
		assert.Check(t, is.Equal(conditionStatus(t, client, corev1.NodeDrained), corev1.ConditionTrue))
	}
}

func TestGiveBackClearsTheLifecycleConditions(t *testing.T) {
	client, _ := fakeCluster(t, node("a", false, nil))
	o, _, _ := nodeOptions(client, "a")
	o.lifecycle = true
	assert.NilError(t, o.drainNodes(context.Background()))
	assert.NilError(t, o.giveBack(context.Background(), "a"))
	assert.Check(t, is.Equal(conditionStatus(t, client, corev1.NodeDrainInProgress), corev1.ConditionFalse))
	assert.Check(t, is.Equal(conditionStatus(t, client, corev1.NodeDrained), corev1.ConditionFalse))
}
