package spoke

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// joinedOutOfBand is a ManagedCluster that `clusteradm join
// --klusterlet-annotation brush-ignore=true` made.
func joinedOutOfBand(name string) ocm.ManagedCluster {
	mc := newCluster(name, metav1.ConditionTrue)
	mc.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Hour))
	mc.Annotations = map[string]string{ocm.BrushIgnoreAnnotation: "true"}
	return mc
}

func TestOutOfBandRowsFollowTheSpokes(t *testing.T) {
	spokes := []fleetconfig.Spoke{newSpoke("spoke-1"), newSpoke("spoke-2")}
	clusters := []ocm.ManagedCluster{
		newCluster("spoke-1", metav1.ConditionTrue),
		joinedOutOfBand("edge-9"),
		newCluster("edge-2", metav1.ConditionUnknown, ocm.TaintUnreachable),
		newCluster("spoke-2", metav1.ConditionTrue),
	}
	oob := OutOfBandRows(spokes, clusters)
	assert.Equal(t, len(oob), 2, "every ManagedCluster without a Spoke, and only those")
	for all, file := range map[bool]string{false: "rows-out-of-band.golden", true: "rows-out-of-band-all-namespaces.golden"} {
		list := SpokeList{Items: append(BuildRows(spokes, clusters), oob...), allNamespaces: all}
		var buf bytes.Buffer
		assert.NilError(t, cli.WriteTable(&buf, list.Table(now), true))
		golden.Assert(t, buf.String(), file)
	}

	data, err := json.Marshal(oob[1])
	assert.NilError(t, err)
	var got map[string]any
	assert.NilError(t, json.Unmarshal(data, &got))
	assert.Equal(t, got["outOfBand"], true)
	assert.Equal(t, got["brushIgnore"], true)
	assert.Equal(t, got["joined"], "True")
	assert.DeepEqual(t, got["metadata"], map[string]any{"name": "edge-9"})
	data, err = json.Marshal(BuildRows(spokes, clusters)[0])
	assert.NilError(t, err)
	assert.Check(t, !strings.Contains(string(data), "outOfBand"), "a Spoke's row says nothing of it: %s", data)
}

func TestOutOfBandStatus(t *testing.T) {
	mc := joinedOutOfBand("edge-9")
	mc.Spec.Taints = []ocm.Taint{{Key: "fleetdrain.spokekit.io/drained", Effect: ocm.TaintEffectNoSelect}}
	works := []ocm.ManifestWork{
		{ObjectMeta: metav1.ObjectMeta{Name: "hand-made"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "placed", Labels: map[string]string{ocm.PlacementLabel: "spokes"}}},
	}
	r := BuildOutOfBandStatus(&mc, works, "")
	var buf bytes.Buffer
	assert.NilError(t, cli.WriteTable(&buf, r.Table(), false))
	golden.Assert(t, buf.String(), "status-out-of-band.golden")
	data, err := json.Marshal(r)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(string(data), `"outOfBand":true`))
	assert.Check(t, is.Contains(string(data), `"brushIgnore":true`))

	// Left behind by a removed Spoke: it is leaving, not joined by hand.
	mc.DeletionTimestamp = &metav1.Time{Time: now}
	mc.Finalizers = []string{"cluster.open-cluster-management.io/api-resource-cleanup"}
	buf.Reset()
	assert.NilError(t, cli.WriteTable(&buf, BuildOutOfBandStatus(&mc, nil, "").Table(), false))
	golden.Assert(t, buf.String(), "status-out-of-band-deleting.golden")
}

func TestOutOfBandRefusal(t *testing.T) {
	mc := joinedOutOfBand("edge-9")
	err := outOfBandRefusal(&mc, "mural-system", "")
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	golden.Assert(t, err.Error(), "refusal-out-of-band.golden")
}

const (
	spokesPath   = "/apis/fleetconfig.open-cluster-management.io/v1beta1/spokes"
	releasePath  = "/apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system"
	clustersPath = "/apis/cluster.open-cluster-management.io/v1/managedclusters"
)

// hubWithOutOfBandCluster answers as a hub with the Spoke spoke-1 in
// mural-system and the ManagedClusters spoke-1 and edge-9, which `clusteradm
// join` made; hub says whether mural-system holds the fleet's Hub.
func hubWithOutOfBandCluster(t *testing.T, hub bool) *clitest.APIServer {
	t.Helper()
	srv := clitest.NewAPIServer(t)
	hubs := ""
	if hub {
		hubs = `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Hub","metadata":{"name":"hub","namespace":"mural-system"}}`
	}
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/hubs", 200, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"HubList","metadata":{},"items":[`+hubs+`]}`)
	srv.Respond("GET "+releasePath+"/hubs", 200, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"HubList","metadata":{},"items":[`+hubs+`]}`)
	spoke1 := `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-1","namespace":"mural-system","creationTimestamp":"2026-11-30T10:00:00Z",
		"annotations":{"spoke.spokekit.io/kubeconfig-secret":"spoke-1-kubeconfig","spoke.spokekit.io/credential-kind":"client certificate","spoke.spokekit.io/credential-expires":"2127-06-01T00:00:00Z"}},
		"spec":{"hubRef":{"name":"hub","namespace":"mural-system"},"kubeconfig":{"secretReference":{"name":"spoke-1-kubeconfig"}}},"status":{"phase":"Running"}}`
	srv.Respond("GET "+releasePath+"/spokes", 200, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"SpokeList","metadata":{},"items":[`+spoke1+`]}`)
	srv.Respond("GET "+spokesPath, 200, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"SpokeList","metadata":{},"items":[`+spoke1+`]}`)
	srv.Respond("GET "+releasePath+"/spokes/edge-9", 404, notFound)
	joined := `"status":{"conditions":[{"type":"ManagedClusterJoined","status":"True","reason":"r","message":"m","lastTransitionTime":"2026-11-30T10:00:02Z"},
		{"type":"ManagedClusterConditionAvailable","status":"True","reason":"r","message":"m","lastTransitionTime":"2026-11-30T10:00:02Z"}]}`
	edge := `{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedCluster","metadata":{"name":"edge-9","creationTimestamp":"2026-11-30T10:00:01Z",
		"annotations":{"agent.open-cluster-management.io/brush-ignore":"true","other":"x"}},"spec":{"hubAcceptsClient":true},` + joined + `}`
	srv.Respond("GET "+clustersPath, 200, `{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedClusterList","metadata":{},"items":[
		{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedCluster","metadata":{"name":"spoke-1","creationTimestamp":"2026-11-30T10:00:01Z"},"spec":{},`+joined+`},`+edge+`]}`)
	srv.Respond("GET "+clustersPath+"/edge-9", 200, edge)
	srv.Respond("GET /apis/work.open-cluster-management.io/v1/namespaces/edge-9/manifestworks", 200,
		`{"apiVersion":"work.open-cluster-management.io/v1","kind":"ManifestWorkList","metadata":{},"items":[{"apiVersion":"work.open-cluster-management.io/v1","kind":"ManifestWork","metadata":{"name":"hand-made","namespace":"edge-9"}}]}`)
	return srv
}

func run(srv *clitest.APIServer, args ...string) (int, string, string) {
	return clitest.RunCommand(NewCmdSpoke, append(args, "--kubeconfig", srv.Kubeconfig)...)
}

// count counts the requests that start with prefix ("GET /apis/...").
func count(srv *clitest.APIServer, prefix string) int {
	n := 0
	for _, r := range srv.Requests() {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

func TestListShowsOutOfBandClustersInTheFleetNamespace(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		hub  bool
		want []string
	}{
		"the Hub's namespace":          {[]string{"-n", "mural-system"}, true, []string{"spoke-1", "edge-9"}},
		"a namespace without a Hub":    {[]string{"-n", "mural-system"}, false, []string{"spoke-1"}},
		"every namespace":              {[]string{"-A"}, false, []string{"spoke-1", "edge-9"}},
		"a selector picks Spokes only": {[]string{"-n", "mural-system", "-l", "env=prod"}, true, []string{"spoke-1"}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := hubWithOutOfBandCluster(t, tc.hub)
			code, out, errOut := run(srv, append([]string{"list", "-o", "json"}, tc.args...)...)
			assert.Equal(t, code, exitcode.OK, errOut)
			var list SpokeList
			assert.NilError(t, json.Unmarshal([]byte(out), &list))
			var names []string
			for _, r := range list.Items {
				names = append(names, r.Metadata.Name)
				assert.Equal(t, r.OutOfBand, r.Metadata.Name == "edge-9")
				assert.Equal(t, r.BrushIgnore, r.Metadata.Name == "edge-9", "read from the agent's annotation")
			}
			assert.DeepEqual(t, names, tc.want)
			assert.Equal(t, count(srv, "GET "+clustersPath), 1, "one LIST of ManagedClusters: %v", srv.Requests())
			assert.Equal(t, count(srv, "GET "+spokesPath)+count(srv, "GET "+releasePath+"/spokes"), 1, "one LIST of Spokes: %v", srv.Requests())
		})
	}
	// A Hub lookup that fails hides them, and says so; the Spokes still show.
	srv := hubWithOutOfBandCluster(t, true)
	srv.Respond("GET "+releasePath+"/hubs", 503, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"ServiceUnavailable","code":503}`)
	code, out, errOut := run(srv, "list", "-n", "mural-system")
	assert.Equal(t, code, exitcode.OK, errOut)
	assert.Check(t, is.Contains(errOut, "Warning: clusters joined out of band are not shown"))
	assert.Check(t, is.Contains(out, "spoke-1"))
	assert.Check(t, !strings.Contains(out, "edge-9"), out)

	srv = hubWithOutOfBandCluster(t, true)
	code, out, errOut = run(srv, "get", "edge-9", "-n", "mural-system")
	assert.Equal(t, code, exitcode.OK, errOut)
	assert.Check(t, is.Regexp(`(?m)^edge-9\s+OutOfBand\s+True\s+True\s+`, out))
}

func TestStatusReportsAnOutOfBandCluster(t *testing.T) {
	srv := hubWithOutOfBandCluster(t, true)
	code, out, errOut := run(srv, "status", "edge-9", "-n", "mural-system")
	assert.Equal(t, code, exitcode.OK, errOut)
	assert.Check(t, is.Regexp(`spoke\s+none: joined out of band`, out))
	assert.Check(t, is.Regexp(`managed cluster\s+joined True, available True`, out))
	assert.Check(t, is.Regexp(`brush-ignore\s+true`, out))
	assert.Check(t, is.Regexp(`blocking ManifestWorks\s+hand-made`, out))

	code, out, errOut = run(srv, "status", "edge-9", "-n", "mural-system", "-o", "yaml")
	assert.Equal(t, code, exitcode.OK, errOut)
	assert.Check(t, is.Contains(out, "outOfBand: true"))
	assert.Check(t, is.Contains(out, "brushIgnore: true"))
}

// remove and force-remove refuse an out-of-band cluster with the steps to
// take it out by hand, and send nothing but reads.
func TestRemoveRefusesAnOutOfBandCluster(t *testing.T) {
	for _, args := range [][]string{
		{"remove", "edge-9", "--wait"},
		{"force-remove", "edge-9", "--yes", "--even-if-reachable"},
	} {
		srv := hubWithOutOfBandCluster(t, true)
		code, out, errOut := run(srv, append(args, "-n", "mural-system")...)
		assert.Equal(t, code, exitcode.Refused, "%v: %s", args, errOut)
		assert.Equal(t, out, "")
		assert.Check(t, is.Contains(errOut, "edge-9 was joined out of band (clusteradm join, with brush-ignore=true)"))
		assert.Check(t, is.Contains(errOut, "nothing was changed"))
		assert.Check(t, is.Contains(errOut, "clusteradm unjoin --cluster-name edge-9"))
		assert.Check(t, is.Contains(errOut, "kubectl delete managedcluster edge-9"))
		for _, r := range srv.Requests() {
			assert.Check(t, strings.HasPrefix(r, "GET "), "%v sent %s", args, r)
		}
	}
}

// A Spoke of that name in another namespace is not out of band: the
// commands point there.
func TestOutOfBandLooksForTheSpokeElsewhere(t *testing.T) {
	srv := hubWithOutOfBandCluster(t, true)
	srv.Respond("GET "+spokesPath, 200, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"SpokeList","metadata":{},"items":[
		{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"edge-9","namespace":"fleet-b"}}]}`)
	code, _, errOut := run(srv, "remove", "edge-9", "-n", "mural-system")
	assert.Equal(t, code, exitcode.Refused, errOut)
	assert.Check(t, is.Contains(errOut, "the Spoke edge-9 is in namespace fleet-b; run this again with -n fleet-b"))
	code, _, errOut = run(srv, "status", "edge-9", "-n", "mural-system")
	assert.Equal(t, code, exitcode.Failed, errOut)
	assert.Check(t, is.Contains(errOut, "-n fleet-b"))
}

// Without a ManagedCluster either, the spoke is gone: remove has nothing
// to do and says so, status does not find it.
func TestRemoveWithoutSpokeOrClusterIsDone(t *testing.T) {
	srv := hubWithOutOfBandCluster(t, true)
	srv.Respond("GET "+releasePath+"/spokes/gone", 404, notFound)
	srv.Respond("GET "+clustersPath+"/gone", 404, notFound)
	code, out, errOut := run(srv, "remove", "gone", "-n", "mural-system")
	assert.Equal(t, code, exitcode.OK, errOut)
	assert.Check(t, is.Contains(out, "already deleted"))
	code, _, errOut = run(srv, "status", "gone", "-n", "mural-system")
	assert.Equal(t, code, exitcode.Failed)
	assert.Check(t, is.Contains(errOut, `spoke "gone" not found in namespace mural-system`))

	// A removed Spoke can go before its ManagedCluster: running remove
	// again is not refused.
	srv.Respond("GET "+clustersPath+"/gone", 200, `{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedCluster",
		"metadata":{"name":"gone","deletionTimestamp":"2026-11-30T11:00:00Z","finalizers":["cluster.open-cluster-management.io/api-resource-cleanup"]},"spec":{}}`)
	code, out, errOut = run(srv, "remove", "gone", "-n", "mural-system")
	assert.Equal(t, code, exitcode.OK, errOut)
	assert.Check(t, is.Contains(out, "already deleted"))
}
