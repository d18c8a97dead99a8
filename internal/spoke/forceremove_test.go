package spoke

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
)

func clusterAvailable(status metav1.ConditionStatus) *ocm.ManagedCluster {
	mc := &ocm.ManagedCluster{}
	if status != "" {
		mc.Status.Conditions = []metav1.Condition{{
			Type: ocm.ManagedClusterConditionAvailable, Status: status, Reason: "ManagedClusterLeaseUpdateStopped",
			Message: "Registration agent stopped updating its lease.", LastTransitionTime: metav1.NewTime(now),
		}}
	}
	return mc
}

// Only the hub's view decides; what it cannot show is an error, never a
// verdict.
func TestReachabilityVerdict(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "managedclusters"}, "spoke-1", errors.New("no"))
	unavailable := apierrors.NewServiceUnavailable("etcd is down")
	for name, tc := range map[string]struct {
		in          Reachability
		unreachable bool
		want        string // in the evidence, or in the error when wantErr
		wantErr     bool
	}{
		"hub says not available":     {Reachability{ManagedCluster: clusterAvailable(metav1.ConditionFalse)}, true, "Available condition False since 2026-11-30T12:00:00Z (ManagedClusterLeaseUpdateStopped: Registration agent stopped updating its lease.)", false},
		"hub lost contact":           {Reachability{ManagedCluster: clusterAvailable(metav1.ConditionUnknown)}, true, "Available condition Unknown", false},
		"hub says available":         {Reachability{ManagedCluster: clusterAvailable(metav1.ConditionTrue)}, false, "Available condition True", false},
		"managed cluster unreadable": {Reachability{Err: forbidden}, false, "forbidden", true},
		"managed cluster 503":        {Reachability{Err: unavailable}, false, "etcd is down", true},
		"no managed cluster":         {Reachability{}, false, "no ManagedCluster", true},
		"no condition yet":           {Reachability{ManagedCluster: clusterAvailable("")}, false, "has not judged", true},
	} {
		t.Run(name, func(t *testing.T) {
			unreachable, evidence, err := tc.in.Verdict()
			if tc.wantErr {
				assert.ErrorContains(t, err, tc.want)
				assert.Check(t, !unreachable)
				return
			}
			assert.NilError(t, err)
			assert.Check(t, is.Equal(unreachable, tc.unreachable))
			assert.Check(t, is.Contains(evidence, tc.want))
		})
	}
}

const forceRemoveSpoke = `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-1","namespace":"mural-system","uid":"u1","resourceVersion":"5"},"spec":{"kubeconfig":{"secretReference":{"name":"spoke-1-kubeconfig"}}}}`

func managedClusterJSON(available string) string {
	return `{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedCluster","metadata":{"name":"spoke-1"},"status":{"conditions":[{"type":"ManagedClusterConditionAvailable","status":"` + available + `","reason":"x","message":"","lastTransitionTime":"2026-11-30T12:00:00Z"}]}}`
}

// A spoke the hub reports available is not force-removed because its API
// server does not answer from here: the secret's kubeconfig points at a
// closed port, and the real error chain of a failed dial reaches nothing.
func TestForceRemoveRefusesASpokeTheHubReachesEvenIfThisMachineCannot(t *testing.T) {
	srv := clitest.NewAPIServer(t)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, forceRemoveSpoke)
	srv.Respond("GET /apis/cluster.open-cluster-management.io/v1/managedclusters/spoke-1", 200, managedClusterJSON("True"))
	dead, err := os.ReadFile(clitest.UnreachableKubeconfig(t))
	assert.NilError(t, err)
	srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 200,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"spoke-1-kubeconfig","namespace":"mural-system"},"data":{"kubeconfig":"`+base64.StdEncoding.EncodeToString(dead)+`"}}`)
	code, _, errOut := runSpoke(srv, "force-remove", "spoke-1", "--yes")
	assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
	assert.Check(t, is.Contains(errOut, "spoke spoke-1 is reachable: the hub reports its ManagedCluster's Available condition True"))
	assert.Check(t, is.Len(writes(srv), 0))
}

// The answer to the confirmation may come long after the check: the check
// runs again, and a spoke that came back meanwhile is left alone.
func TestForceRemoveChecksAgainAfterTheConfirmation(t *testing.T) {
	srv := clitest.NewAPIServer(t)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, forceRemoveSpoke)
	srv.Respond("GET /apis/cluster.open-cluster-management.io/v1/managedclusters/spoke-1", 200, managedClusterJSON("Unknown"))
	srv.Respond("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 201, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}`)
	streams, _, _, errOut := genericiooptions.NewTestIOStreams()
	root, f := cli.NewRoot(cli.Plugin{Name: "spoke"}, streams)
	assert.NilError(t, root.PersistentFlags().Set("kubeconfig", srv.Kubeconfig))
	assert.NilError(t, root.PersistentFlags().Set("namespace", "mural-system"))
	o := &ForceRemoveOptions{removalOptions: newRemovalOptions(f, streams)}
	o.Name = "spoke-1"
	var asked []string
	err := o.run(context.Background(), removal{
		Kind: "SpokeForceRemove", Check: o.refuseReachable, Force: true,
		Confirm: func(_ context.Context, evidence []string) error {
			asked = evidence
			srv.Respond("GET /apis/cluster.open-cluster-management.io/v1/managedclusters/spoke-1", 200, managedClusterJSON("True"))
			return nil
		},
	})
	assert.Check(t, is.Equal(exitcode.Of(err), exitcode.Refused), errOut)
	assert.Check(t, is.ErrorContains(err, "checked again after the confirmation: spoke spoke-1 is reachable"))
	assert.Check(t, is.Len(writes(srv), 0))
	assert.Assert(t, is.Len(asked, 2))
	assert.Check(t, is.Contains(asked[0], "Available condition Unknown since 2026-11-30T12:00:00Z"))
	assert.Check(t, is.Contains(asked[1], "recovers by itself"), "an Unknown spoke gets the hint")
}

// Through the command: a ManagedCluster the hub does not let us read is no
// proof the spoke is gone; nothing is written.
func TestForceRemoveRefusesWhenItCannotCheck(t *testing.T) {
	for _, code := range []int{403, 503} {
		srv := clitest.NewAPIServer(t)
		srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200,
			`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-1","namespace":"mural-system","uid":"u1","resourceVersion":"5"},"spec":{"kubeconfig":{"secretReference":{"name":"spoke-1-kubeconfig"}}}}`)
		srv.Respond("GET /apis/cluster.open-cluster-management.io/v1/managedclusters/spoke-1", code,
			fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"answer %d","code":%d}`, code, code))
		streams, _, out, errOut := genericiooptions.NewTestIOStreams()
		got := cli.Execute(NewCmdSpoke(streams), []string{"force-remove", "spoke-1", "-n", "mural-system", "--yes", "--kubeconfig", srv.Kubeconfig}, streams)
		assert.Check(t, is.Equal(got, exitcode.Refused), "stderr: %s", errOut)
		assert.Check(t, is.Contains(errOut.String(), fmt.Sprintf("answer %d", code)))
		assert.Check(t, is.Contains(errOut.String(), "nothing was changed"))
		assert.Check(t, is.Equal(out.String(), ""))
		for _, r := range srv.Requests() {
			assert.Check(t, strings.HasPrefix(r, "GET "), "a write was sent: %s", r)
		}
	}
}

// Under a server dry run the writes go out as they would for real: the
// guarded annotation patch, then the delete; the values file is left alone.
func TestForceRemoveServerDryRunSendsThePatchThenTheDelete(t *testing.T) {
	srv := clitest.NewAPIServer(t)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200,
		`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-1","namespace":"mural-system","uid":"u1","resourceVersion":"5"},"spec":{"kubeconfig":{"secretReference":{"name":"spoke-1-kubeconfig"}}}}`)
	srv.Respond("GET /apis/cluster.open-cluster-management.io/v1/managedclusters/spoke-1", 200,
		`{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedCluster","metadata":{"name":"spoke-1"},"status":{"conditions":[{"type":"ManagedClusterConditionAvailable","status":"False","reason":"x","message":"","lastTransitionTime":"2026-11-30T12:00:00Z"}]}}`)
	srv.Respond("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 201, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}`)
	srv.Respond("PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-1"}}`)
	srv.Respond("DELETE /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	assert.NilError(t, os.WriteFile(valuesFile, []byte(planValues), 0o600))
	code, out, errOut := runSpoke(srv, "force-remove", "spoke-1", "--dry-run=server", "--values", valuesFile)
	assert.Check(t, is.Equal(code, exitcode.OK), errOut)
	assert.Check(t, is.DeepEqual(writes(srv), []string{
		"PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1?dryRun=All&fieldManager=kubectl-spoke",
		"DELETE /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1",
	}))
	assert.Check(t, is.Contains(out, "would be set"))
	assert.Check(t, is.Contains(out, "entry would be removed"))
	data, err := os.ReadFile(valuesFile)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(string(data), planValues))
}

// A Spoke already gone: nothing to check, confirm or wait for, and the
// values entry still leaves the file.
func TestForceRemoveOfAGoneSpokeStillEditsTheFile(t *testing.T) {
	srv := clitest.NewAPIServer(t)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 404, notFound)
	// Nor a ManagedCluster: not a cluster joined out of band.
	srv.Respond("GET /apis/cluster.open-cluster-management.io/v1/managedclusters/spoke-1", 404, notFound)
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	assert.NilError(t, os.WriteFile(valuesFile, []byte(planValues), 0o600))
	code, out, errOut := runSpoke(srv, "force-remove", "spoke-1", "--values", valuesFile)
	assert.Check(t, is.Equal(code, exitcode.OK), errOut)
	assert.Check(t, is.Len(writes(srv), 0))
	assert.Check(t, is.Contains(out, "already deleted"))
	assert.Check(t, is.Contains(out, "entry removed"))
	data, err := os.ReadFile(valuesFile)
	assert.NilError(t, err)
	assert.Check(t, !strings.Contains(string(data), "name: spoke-1"))
}

// What a force-removed spoke may leave on its cluster, with the commands to
// run there, is said by a dry run, and by a run whose wait ran out, not only
// after a wait that saw the cleanup through.
func TestForceRemoveListsTheLeftoversInADryRunAndOnATimeout(t *testing.T) {
	srv := clitest.NewAPIServer(t)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, forceRemoveSpoke)
	srv.Respond("GET /apis/cluster.open-cluster-management.io/v1/managedclusters/spoke-1", 200, managedClusterJSON("False"))
	srv.Respond("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 201, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}`)
	leftover := "kubectl --kubeconfig SPOKE.kubeconfig delete klusterlet klusterlet"

	code, out, errOut := runSpoke(srv, "force-remove", "spoke-1", "--dry-run=client")
	assert.Check(t, is.Equal(code, exitcode.OK), errOut)
	assert.Check(t, is.Len(writes(srv), 0))
	assert.Check(t, is.Contains(out, leftover))

	// The Spoke never goes: the wait runs out.
	srv.Respond("PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, forceRemoveSpoke)
	srv.Respond("DELETE /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, forceRemoveSpoke)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes", 200,
		`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"SpokeList","metadata":{"resourceVersion":"5"},"items":[`+forceRemoveSpoke+`]}`)
	code, out, errOut = runSpoke(srv, "force-remove", "spoke-1", "--yes", "--timeout", "1s")
	assert.Check(t, is.Equal(code, exitcode.TimedOut), errOut)
	assert.Check(t, is.Contains(out, leftover))
}
