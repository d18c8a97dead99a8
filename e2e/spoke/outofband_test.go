//go:build e2e

package spoke

import (
	"encoding/json"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
)

// pluginWrites counts the plugin's writes (from the hub's audit log) to the
// ManagedCluster name, to its ManifestWork work, and to a Spoke of that
// name: OCM's own controllers change the ManagedCluster at their own pace
// (the registration controller adds its finalizers, taints follow the
// conditions), so a snapshot of the object could not tell their writes
// from the plugin's.
func pluginWrites(t *testing.T, name, work string) [3]int {
	t.Helper()
	var n [3]int
	for i, obj := range []struct{ resource, namespace, name string }{
		{"managedclusters", "", name}, {"manifestworks", name, work}, {"spokes", releaseNamespace, name},
	} {
		var err error
		n[i], err = hub.Writes(ctx(t), "kubectl-spoke/", obj.resource, obj.namespace, obj.name)
		assert.NilError(t, err)
	}
	return n
}

// standing checks the ManagedCluster and its work are not being deleted.
func standing(t *testing.T, name, work string) {
	t.Helper()
	mc := managedCluster(t, name)
	assert.Assert(t, mc != nil, "ManagedCluster %s exists", name)
	assert.Check(t, mc.GetDeletionTimestamp() == nil, "ManagedCluster %s is not being deleted", name)
	w, err := hub.Dynamic.Resource(ocm.ManifestWorkResource).Namespace(name).Get(ctx(t), work, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Check(t, w.GetDeletionTimestamp() == nil, "ManifestWork %s/%s is not being deleted", name, work)
}

// A cluster joined out of band: its agent joins the hub with the line
// `kubectl spoke join-command --brush-ignore` prints (the real agent sets
// the annotation the line asks for), and no Spoke registers it. list and
// status show it; remove and force-remove refuse it with the steps to
// unjoin by hand, and change nothing.
func TestOutOfBandCluster(t *testing.T) {
	const name, work = "edge-oob", "edge-oob-work"
	t.Cleanup(func() {
		// Unjoin by hand, in the order the refusal gives, so that the
		// tests after this one see the hub as it was.
		deleteWork(t, name, work)
		unjoinByHand(t, name)
	})
	r := joinOutOfBand(t, hub.For(t.TempDir()), name, spoke2, "--brush-ignore")
	assert.Equal(t, r.ExitCode, 0, r)
	createWork(t, name, work, nil)
	waitConfigMap(t, spoke2, work, true)
	before := pluginWrites(t, name, work)

	// Without -n: the namespace comes from the fleet's Hub, as users run it.
	r = harness.Kubectl(t, hub.For(t.TempDir()), "spoke", "list")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Regexp(`(?m)^edge-oob\s+OutOfBand\s+True\s+True\s+`, r.Stdout), r)

	r = spoke(t, "list", "-o", "json")
	assert.Equal(t, r.ExitCode, 0, r)
	var list struct {
		Items []struct {
			Metadata               struct{ Name, Namespace string }
			OutOfBand, BrushIgnore bool
			Joined, Available      string
		}
	}
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &list))
	// Other tests leave ManagedClusters whose Spokes live in other
	// namespaces: in this namespace's list those are out of band too. What
	// must hold is that no Spoke of this namespace is.
	own, err := hub.Dynamic.Resource(fleetconfig.SpokeResource).Namespace(releaseNamespace).List(ctx(t), metav1.ListOptions{})
	assert.NilError(t, err)
	hasSpoke := map[string]bool{}
	for _, s := range own.Items {
		hasSpoke[s.GetName()] = true
	}
	found := false
	for _, it := range list.Items {
		if it.Metadata.Name == name {
			found = true
			assert.Check(t, it.OutOfBand && it.BrushIgnore, "%+v", it)
			assert.Equal(t, it.Metadata.Namespace, "", "a ManagedCluster is in no namespace")
		} else {
			assert.Check(t, it.OutOfBand != hasSpoke[it.Metadata.Name], "%s: out of band %v, has a Spoke in %s %v", it.Metadata.Name, it.OutOfBand, releaseNamespace, hasSpoke[it.Metadata.Name])
		}
	}
	assert.Check(t, found, r.Stdout)

	r = spoke(t, "list", "-A")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Regexp(`(?m)^<none>\s+edge-oob\s+OutOfBand\s+`, r.Stdout), r)
	r = spoke(t, "list", "-l", "env=prod")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, !strings.Contains(r.Stdout, name), "-l selects Spokes: %s", r)

	r = spoke(t, "get", name, "-o", "yaml")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stdout, "outOfBand: true"), r)
	assert.Check(t, is.Contains(r.Stdout, "brushIgnore: true"), r)

	r = spoke(t, "status", name)
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Regexp(`spoke\s+none: joined out of band`, r.Stdout), r)
	assert.Check(t, is.Regexp(`managed cluster\s+joined True, available True`, r.Stdout), r)
	assert.Check(t, is.Regexp(`brush-ignore\s+true`, r.Stdout), r)
	assert.Check(t, is.Regexp(`blocking ManifestWorks\s+edge-oob-work`, r.Stdout), r)

	for _, args := range [][]string{
		{"remove", name, "--wait", "--timeout", "30s"},
		{"force-remove", name, "--yes", "--even-if-reachable", "--timeout", "30s"},
	} {
		r = spoke(t, args...)
		assert.Equal(t, r.ExitCode, 3, "%v: %s", args, r)
		assert.Check(t, is.Contains(r.Stderr, "edge-oob was joined out of band (clusteradm join, with brush-ignore=true)"), r)
		assert.Check(t, is.Contains(r.Stderr, "nothing was changed"), r)
		assert.Check(t, is.Contains(r.Stderr, "clusteradm unjoin --cluster-name edge-oob"), r)
		assert.Check(t, is.Contains(r.Stderr, "kubectl delete managedcluster edge-oob"), r)
		assert.Equal(t, r.Stdout, "", r)
	}
	assert.Equal(t, pluginWrites(t, name, work), before, "the plugin wrote nothing to the cluster, its work or a Spoke")
	standing(t, name, work)
	assert.Check(t, spokeObject(t, name) == nil, "no Spoke was made")
	waitConfigMap(t, spoke2, work, true)
}
