package fleet

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestUpstreamBackoffDoublesToItsCap(t *testing.T) {
	p := UpstreamPace()
	assert.Equal(t, p.backoff(1), 5*time.Millisecond)
	assert.Equal(t, p.backoff(2), 10*time.Millisecond)
	assert.Equal(t, p.backoff(13), 5*time.Millisecond<<12) // 20 s, after 20 s of failures
	assert.Equal(t, p.backoff(60), 1000*time.Second)
	fast := p.Scaled(FastScale)
	assert.Equal(t, fast.Requeue, 300*time.Millisecond)
	assert.Equal(t, fast.backoff(60), 10*time.Second)
}

func TestPaceFromEnv(t *testing.T) {
	for v, want := range map[string]Pace{
		"":         UpstreamPace().Scaled(FastScale),
		"upstream": UpstreamPace(),
		"0.1":      UpstreamPace().Scaled(0.1),
	} {
		t.Setenv("SPOKEKIT_E2E_FLEET_PACE", v)
		got, err := PaceFromEnv()
		assert.NilError(t, err, v)
		assert.Equal(t, got, want, v)
	}
	for _, v := range []string{"fast", "0", "2", "-1"} {
		t.Setenv("SPOKEKIT_E2E_FLEET_PACE", v)
		_, err := PaceFromEnv()
		assert.ErrorContains(t, err, "SPOKEKIT_E2E_FLEET_PACE", v)
	}
}

// The schedule is the queue: a change is due at once, a failure backs off
// further each time in a row, a success resets the count, and a wait for a
// change is never due by time.
func TestScheduleIsUpstreamsQueue(t *testing.T) {
	p := UpstreamPace()
	u := &unstructured.Unstructured{}
	u.SetName("s")
	u.SetResourceVersion("1")
	sc := schedule{}
	now := time.Now()
	assert.Assert(t, sc.due(u, now), "never reconciled")

	for range 3 {
		sc.after(u, failed, p)
	}
	assert.Equal(t, sc["s"].failures, 3)
	assert.Assert(t, !sc.due(u, time.Now()))
	assert.Assert(t, sc.due(u, time.Now().Add(p.backoff(3))))

	sc.after(u, requeue, p)
	assert.Equal(t, sc["s"].failures, 0)
	assert.Assert(t, !sc.due(u, time.Now().Add(p.Requeue-time.Second)))
	assert.Assert(t, sc.due(u, time.Now().Add(p.Requeue+time.Second)))

	sc.after(u, waitChange, p)
	assert.Assert(t, !sc.due(u, time.Now().Add(time.Hour)), "a wait for a change")
	u.SetResourceVersion("2")
	assert.Assert(t, sc.due(u, time.Now()), "the Spoke changed")
}
