//go:build e2e

package spoke

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/e2e/standin/fleet"
	"github.com/spokekit/spokekit/internal/api/ocm"
)

// The tests here run each --wait of the plugin against the stand-in at
// upstream's own pace (requeue 30 s, exponential backoff after a failed
// deletion step) with the default --timeout: the rest of the suite runs a
// hundred times faster, which would hide a default too short for a real hub.

// upstreamPace runs the stand-in at upstream's pace for the rest of the test.
func upstreamPace(t *testing.T) {
	t.Helper()
	previous := standin.SetPace(fleet.UpstreamPace())
	t.Cleanup(func() { standin.SetPace(previous) })
}

func TestUpstreamPaceAddAndRemove(t *testing.T) {
	upstreamPace(t)
	r := spoke(t, "add", "paced", "--spoke-kubeconfig", spoke1.Kubeconfig, "--apply", "--wait")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "joined and available"), r)

	r = spoke(t, "remove", "paced", "--wait")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, spokeObject(t, "paced") == nil)
	assert.Check(t, managedCluster(t, "paced") == nil)
}

// A removal whose unjoin fails while the spoke's API server is down backs
// off; once the spoke is back, the next try (as far off as the failures
// lasted) finishes it, and the wait says meanwhile when it comes. The
// force-delete of another dark spoke needs no retry at all.
func TestUpstreamPaceRemovalAfterFailures(t *testing.T) {
	addAndJoin(t, "paced-retry", spoke2)
	forgetCluster(t, "paced-retry") // two spokes of one API server (see forgetting)
	addAndJoin(t, "paced-forced", spoke2)
	upstreamPace(t)
	start := stopUntilCleanup(t, spoke2)
	waitDark(t, "paced-retry", "False", ocm.TaintUnavailable)

	r := spoke(t, "remove", "paced-retry", "--wait", "--timeout", "45s")
	assert.Equal(t, r.ExitCode, 4, "the unjoin fails while the spoke is down: %s", r)
	assert.Check(t, is.Contains(r.Stderr, "failed to unjoin spoke cluster"), r)
	assert.Check(t, is.Contains(r.Stderr, "the controller retries within about"), r)

	r = spoke(t, "force-remove", "paced-forced", "--yes")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, spokeObject(t, "paced-forced") == nil)

	start()
	r = spoke(t, "remove", "paced-retry", "--wait")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, spokeObject(t, "paced-retry") == nil)
	assert.Check(t, managedCluster(t, "paced-retry") == nil)
}
