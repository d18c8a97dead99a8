//go:build e2e

package spoke

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/e2e/standin/fleet"
)

// A spoke whose kubeconfig Secret the hub purged after the pivot (addon
// mode) through each command that reads that Secret or would write it:
// status says it is purged; rotate-kubeconfig has nothing to rotate and
// writes nothing; add stores a credential again only for the cluster whose
// kube-system UID add recorded on the Spoke, and refuses the other test
// cluster; force-remove removes it without the Secret.
func TestPurgedSpokeThroughTheCommands(t *testing.T) {
	if mode != fleet.ModeAddon {
		t.Skip("only addon mode purges the Secret")
	}
	const name = "purged-cmds"
	addAndJoin(t, name, spoke2, "--purge-kubeconfig-secret")
	waitSpoke(t, name, "PivotComplete", pivoted)
	waitPurged(t, name)

	r := spoke(t, "status", name)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Regexp(`credential\s+purged: the agent on the spoke manages it`, r.Stdout), r)

	r = spoke(t, "rotate-kubeconfig", name, "--spoke-kubeconfig", spoke2.Kubeconfig)
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "nothing to rotate"), r)
	assert.Check(t, !secretExists(t, name), "rotate-kubeconfig wrote no Secret")

	r = spoke(t, "add", name, "--spoke-kubeconfig", spoke1.Kubeconfig, "--overwrite")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "already exists for another cluster (the kube-system UID recorded on it differs"), r)
	assert.Check(t, !secretExists(t, name), "add of another cluster wrote no Secret")

	r = spoke(t, "add", name, "--spoke-kubeconfig", spoke2.Kubeconfig, "--overwrite")
	assert.Equal(t, r.ExitCode, 0, r)
	// The hub purges it again once it sees it; until then it is spoke2's.
	if kc := secretKubeconfig(t, name+"-kubeconfig"); kc != nil {
		assert.Check(t, is.DeepEqual(clientCert(t, kc), clientCert(t, []byte(readFile(t, spoke2.Kubeconfig)))))
	}
	waitPurged(t, name)

	r = spoke(t, "force-remove", name, "--yes", "--even-if-reachable", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, spokeObject(t, name) == nil)
}
