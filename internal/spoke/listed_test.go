package spoke

import (
	"context"
	"encoding/json"
	"testing"

	"gotest.tools/v3/assert"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/spoke/hubclient"
)

// list reads only the fields a row shows; every one of them must still
// arrive, next to the fields it skips (managed fields, labels, values).
func TestListReadsEveryFieldARowShows(t *testing.T) {
	srv := clitest.NewAPIServer(t)
	managed := `"managedFields":[{"manager":"helm","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}],"labels":{"a":"b"}`
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes", 200,
		`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"SpokeList","metadata":{"continue":""},"items":[
		{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-1","namespace":"mural-system","creationTimestamp":"2026-11-30T10:00:00Z",`+managed+`},
		 "spec":{"hubRef":{"name":"hub","namespace":"mural-system"},"kubeconfig":{"secretReference":{"name":"spoke-1-kubeconfig","kubeconfigKey":"value"}},
		         "cleanupConfig":{"purgeKlusterletOperator":true,"purgeKubeconfigSecret":true},"klusterlet":{"values":{"big":"values"}}},
		 "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}]}`)
	srv.Respond("GET /apis/cluster.open-cluster-management.io/v1/managedclusters", 200,
		`{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedClusterList","metadata":{},"items":[
		{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedCluster","metadata":{"name":"spoke-1","creationTimestamp":"2026-11-30T10:00:01Z",`+managed+`},
		 "spec":{"hubAcceptsClient":true,"taints":[{"key":"fleetdrain.spokekit.io/drained","effect":"NoSelect","timeAdded":"2026-11-30T11:00:00Z"}]},
		 "status":{"conditions":[{"type":"ManagedClusterJoined","status":"True","reason":"r","message":"m","lastTransitionTime":"2026-11-30T10:00:02Z"},
		                         {"type":"ManagedClusterConditionAvailable","status":"False","reason":"r","message":"m","lastTransitionTime":"2026-11-30T10:00:02Z"}]}}]}`)
	list := listAsJSON(t, srv)
	assert.Equal(t, len(list.Items), 1)
	r := list.Items[0]
	assert.Equal(t, r.Metadata.Name, "spoke-1")
	assert.Equal(t, r.Metadata.Namespace, "mural-system")
	assert.Equal(t, r.Phase, "Running")
	assert.Equal(t, r.Joined, "True")
	assert.Equal(t, r.Available, "False")
	assert.Equal(t, r.Created.UTC().Format("15:04:05"), "10:00:00")
	assert.Equal(t, r.Hub, "mural-system/hub")
	assert.Equal(t, r.Secret, "spoke-1-kubeconfig")
	assert.DeepEqual(t, r.Taints, []string{"fleetdrain.spokekit.io/drained:NoSelect"})
	assert.Check(t, r.Cleanup.PurgeKlusterletOperator && r.Cleanup.PurgeKubeconfigSecret && !r.Cleanup.PurgeAgentNamespace)
	assert.Check(t, r.ManagedCluster)
}

// Keys are matched by their exact case, as the API machinery decodes them:
// a "Phase" next to "phase" (an unpruned field, say) is another field.
func TestListMatchesKeysByCase(t *testing.T) {
	srv := clitest.NewAPIServer(t)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes", 200,
		`{"metadata":{},"items":[{"metadata":{"name":"spoke-1","namespace":"mural-system"},"status":{"phase":"Running","Phase":"Deleting"}}]}`)
	srv.Respond("GET /apis/cluster.open-cluster-management.io/v1/managedclusters", 200, `{"metadata":{},"items":[]}`)
	list := listAsJSON(t, srv)
	assert.Equal(t, len(list.Items), 1)
	assert.Equal(t, list.Items[0].Phase, "Running")
}

// listAsJSON runs list -o json in mural-system against srv.
func listAsJSON(t *testing.T, srv *clitest.APIServer) SpokeList {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	got := cli.Execute(NewCmdSpoke(streams), []string{"list", "-n", "mural-system", "-o", "json", "--kubeconfig", srv.Kubeconfig}, streams)
	assert.Equal(t, got, exitcode.OK, errOut.String())
	var list SpokeList
	assert.NilError(t, json.Unmarshal(out.Bytes(), &list))
	return list
}

// A listed Spoke keeps what tells a purged secret from a missing one: the
// purge option, the pivot, and the agent add-on of addon mode (unified
// mode keeps the secret, so a Spoke without the add-on is not purged).
func TestListedSpokesTellAPurgedSecret(t *testing.T) {
	srv := clitest.NewAPIServer(t)
	spoke := func(name, addOns string) string {
		return `{"metadata":{"name":"` + name + `","namespace":"mural-system"},"spec":{"kubeconfig":{"secretReference":{"name":"` + name + `-kubeconfig"}},` + addOns +
			`"cleanupConfig":{"purgeKubeconfigSecret":true}},"status":{"conditions":[{"type":"PivotComplete","status":"True","wantStatus":"True"}]}}`
	}
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes", 200,
		`{"metadata":{},"items":[`+spoke("addon", `"addOns":[{"configName":"fleetconfig-controller-agent"}],`)+`,`+spoke("unified", "")+`]}`)
	cfg, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	assert.NilError(t, err)
	h := &HubClient{hubclient.NewForClients(nil, kubernetes.NewForConfigOrDie(cfg), "mural-system")}
	spokes, err := h.listedSpokes(context.Background(), "mural-system", "")
	assert.NilError(t, err)
	assert.Equal(t, len(spokes), 2)
	assert.Check(t, missingSecret(&spokes[0]).Purged, "addon mode, after the pivot: purged")
	assert.Check(t, !missingSecret(&spokes[1]).Purged, "unified mode: missing")
}
