package spoke

import (
	"encoding/base64"
	"os"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// While a deletion step fails, the wait says when the controller retries:
// as long again as the failures have lasted, up to its backoff's cap.
func TestRetryHintFollowsTheControllersBackoff(t *testing.T) {
	now := time.Date(2026, 12, 3, 21, 0, 0, 0, time.UTC)
	failingSince := func(d time.Duration, status metav1.ConditionStatus) *fleetconfig.Spoke {
		s := &fleetconfig.Spoke{}
		s.Status.Conditions = []fleetconfig.Condition{{Condition: metav1.Condition{
			Type: fleetconfig.SpokeConditionCleanupFailed, Status: status, LastTransitionTime: metav1.NewTime(now.Add(-d)),
		}}}
		return s
	}
	assert.Equal(t, retryHint(failingSince(2*time.Minute, metav1.ConditionTrue), now),
		"failing for 2m0s, the controller retries within about 2m0s (its wait doubles after each failure, up to 16m40s)")
	assert.Equal(t, retryHint(failingSince(time.Hour, metav1.ConditionTrue), now),
		"failing for 1h0m0s, the controller retries within about 16m40s (its wait doubles after each failure, up to 16m40s)")
	assert.Equal(t, retryHint(failingSince(time.Hour, metav1.ConditionFalse), now), "", "not failing")
	assert.Equal(t, retryHint(&fleetconfig.Spoke{}, now), "", "no condition yet")
}

const deletingSpoke = `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-1","namespace":"mural-system","uid":"u1","resourceVersion":"5","deletionTimestamp":"2026-11-30T12:00:00Z","finalizers":["fleetconfig.open-cluster-management.io/hub-cleanup"]},"spec":{"kubeconfig":{"secretReference":{"name":"spoke-1-kubeconfig"}}},"status":{"phase":"Deleting","conditions":[{"type":"CleanupFailed","status":"True","reason":"ReconcileSuccess","message":"failed to unjoin spoke cluster: connection refused","lastTransitionTime":"2026-11-30T12:00:00Z","wantStatus":"False"}]}}`

// A removal whose wait runs out exits 4, saying what it last saw and, the
// step failing for days, that the controller's next try is up to its
// backoff's cap away.
func TestRemoveWaitTimesOutWithExitFour(t *testing.T) {
	srv := clitest.NewAPIServer(t)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, deletingSpoke)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes", 200,
		`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"SpokeList","metadata":{"resourceVersion":"5"},"items":[`+deletingSpoke+`]}`)
	srv.Respond("GET /apis/work.open-cluster-management.io/v1/namespaces/spoke-1/manifestworks", 200,
		`{"apiVersion":"work.open-cluster-management.io/v1","kind":"ManifestWorkList","metadata":{},"items":[]}`)
	srv.Respond("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 201, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}`)
	srv.Respond("GET /apis/cluster.open-cluster-management.io/v1/managedclusters/spoke-1", 200, managedClusterJSON("False"))
	// The pivot never completed: the hub unjoins, with the stored kubeconfig.
	kc, err := os.ReadFile(srv.Kubeconfig)
	assert.NilError(t, err)
	srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 200,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"spoke-1-kubeconfig","namespace":"mural-system"},"data":{"kubeconfig":"`+base64.StdEncoding.EncodeToString(kc)+`"}}`)
	code, out, errOut := runSpoke(srv, "remove", "spoke-1", "--wait", "--timeout", "1s")
	assert.Check(t, is.Equal(code, exitcode.TimedOut), "%s%s", out, errOut)
	assert.Check(t, is.Contains(errOut, "failed to unjoin spoke cluster"), errOut)
	assert.Check(t, is.Contains(errOut, "the controller retries within about 16m40s"), errOut)
}
