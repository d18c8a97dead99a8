//go:build e2e

package spoke

import (
	"testing"

	"gotest.tools/v3/assert"
)

// A spoke removed from the fleet joins again under the same name, as an
// operator who removed it by mistake adds it back: the removal unjoined
// its agent (its hub credential is gone from the spoke), and the join
// installs one anew that registers and is accepted again.
func TestRemovedSpokeJoinsAgain(t *testing.T) {
	addAndJoin(t, "rejoin", spoke2)
	r := spoke(t, "remove", "rejoin", "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, managedCluster(t, "rejoin") == nil, "the removal deleted the ManagedCluster")

	addAndJoin(t, "rejoin", spoke2)
	waitAvailable(t, "rejoin")
	r = spoke(t, "remove", "rejoin", "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
}
