package spoke

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
)

func clusterAvailable(status metav1.ConditionStatus) *ocm.ManagedCluster {
	mc := &ocm.ManagedCluster{}
	if status != "" {
		mc.Status.Conditions = []metav1.Condition{{Type: ocm.ManagedClusterConditionAvailable, Status: status}}
	}
	return mc
}

func TestReachabilityVerdict(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "managedclusters"}, "spoke-1", errors.New("no"))
	unavailable := apierrors.NewServiceUnavailable("etcd is down")
	refused := fmt.Errorf("the API server https://10.0.0.1:6443 did not answer: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
	timeout := fmt.Errorf("the API server did not answer: %w", context.DeadlineExceeded)
	for name, tc := range map[string]struct {
		in          Reachability
		unreachable bool
		want        string // in the reason, or in the error when wantErr
		wantErr     bool
	}{
		"hub says not available":        {Reachability{ManagedCluster: clusterAvailable(metav1.ConditionFalse)}, true, "Available is False", false},
		"hub lost contact":              {Reachability{ManagedCluster: clusterAvailable(metav1.ConditionUnknown)}, true, "Available is Unknown", false},
		"managed cluster unreadable":    {Reachability{ManagedClusterErr: forbidden}, false, "forbidden", true},
		"managed cluster 503":           {Reachability{ManagedClusterErr: unavailable}, false, "etcd is down", true},
		"available, server answers":     {Reachability{ManagedCluster: clusterAvailable(metav1.ConditionTrue), APIServer: "https://s"}, false, "answers", false},
		"available, connection refused": {Reachability{ManagedCluster: clusterAvailable(metav1.ConditionTrue), APIServer: "https://s", APIServerErr: refused}, true, "connection refused", false},
		"available, timeout":            {Reachability{ManagedCluster: clusterAvailable(metav1.ConditionTrue), APIServer: "https://s", APIServerErr: timeout}, true, "does not answer", false},
		"available, server says 403":    {Reachability{ManagedCluster: clusterAvailable(metav1.ConditionTrue), APIServer: "https://s", APIServerErr: forbidden}, false, "answered with an error", true},
		"available, secret unreadable":  {Reachability{ManagedCluster: clusterAvailable(metav1.ConditionTrue), KubeconfigErr: forbidden}, false, "forbidden", true},
		"no managed cluster, refused":   {Reachability{APIServer: "https://s", APIServerErr: refused}, true, "connection refused", false},
		"no condition yet, answers":     {Reachability{ManagedCluster: clusterAvailable(""), APIServer: "https://s"}, false, "answers", false},
	} {
		t.Run(name, func(t *testing.T) {
			unreachable, reason, err := tc.in.Verdict()
			if tc.wantErr {
				assert.ErrorContains(t, err, tc.want)
				assert.Check(t, !unreachable)
				return
			}
			assert.NilError(t, err)
			assert.Check(t, is.Equal(unreachable, tc.unreachable))
			assert.Check(t, is.Contains(reason, tc.want))
		})
	}
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
		assert.Check(t, is.Equal(got, cli.ExitRefused), "stderr: %s", errOut)
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
	assert.Check(t, is.Equal(code, cli.ExitOK), errOut)
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
	assert.Check(t, is.Equal(code, cli.ExitOK), errOut)
	assert.Check(t, is.Len(writes(srv), 0))
	assert.Check(t, is.Contains(out, "already deleted"))
	assert.Check(t, is.Contains(out, "entry removed"))
	data, err := os.ReadFile(valuesFile)
	assert.NilError(t, err)
	assert.Check(t, !strings.Contains(string(data), "name: spoke-1"))
}
