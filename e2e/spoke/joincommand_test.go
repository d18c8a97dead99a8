//go:build e2e

package spoke

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/spokekit/spokekit/e2e/fixture"
	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/internal/api/ocm"
)

// parseJoinLine reads a printed `clusteradm join` line as clusteradm would
// (every value a plain shell word here), checking it names cluster.
func parseJoinLine(t *testing.T, line, cluster string) harness.JoinValues {
	t.Helper()
	assert.Assert(t, !strings.ContainsAny(line, `'"\`), "nothing to unquote: %s", line)
	f := strings.Fields(line)
	assert.Assert(t, len(f) > 2 && f[0] == "clusteradm" && f[1] == "join" && len(f)%2 == 0, line)
	var v harness.JoinValues
	for i := 2; i < len(f); i += 2 {
		switch f[i] {
		case "--hub-token":
			v.Token = f[i+1]
		case "--hub-apiserver":
			v.HubAPIServer = f[i+1]
		case "--cluster-name":
			assert.Equal(t, f[i+1], cluster, line)
		case "--klusterlet-annotation":
			v.KlusterletAnnotations = append(v.KlusterletAnnotations, f[i+1])
		default:
			t.Fatalf("clusteradm join has no flag %s: %s", f[i], line)
		}
	}
	assert.Assert(t, v.Token != "" && v.HubAPIServer != "", line)
	return v
}

// joinOutOfBand runs `join-command NAME --show-token --accept` with flags as
// as's user, runs the printed line on the cluster on through the harness
// (the real agent, given the printed values and nothing else) while the
// command waits, and returns what the command printed once it ended.
func joinOutOfBand(t *testing.T, as harness.Command, name string, on *harness.Cluster, flags ...string) harness.Result {
	t.Helper()
	s, v := startJoinCommand(t, as, name, flags...)
	return finishJoin(t, s, v, name, on)
}

// startJoinCommand starts `join-command NAME --show-token --accept` with
// flags as as's user, and returns it waiting for the cluster, with the
// values of the line it printed.
func startJoinCommand(t *testing.T, as harness.Command, name string, flags ...string) (*harness.Background, harness.JoinValues) {
	t.Helper()
	s, err := as.StartKubectl(append([]string{"spoke", "-n", releaseNamespace, "join-command", name, "--show-token", "--accept", "--timeout", "3m"}, flags...)...)
	assert.NilError(t, err)
	// The line is printed before the wait starts.
	assert.NilError(t, s.WaitStderr(ctx(t), "ManagedCluster "+name+": not there yet"))
	line, _, _ := strings.Cut(s.Stdout(), "\n")
	return s, parseJoinLine(t, line, name)
}

// finishJoin runs the line's values on the cluster on (the real agent) and
// returns what the waiting join-command printed once it ended.
func finishJoin(t *testing.T, s *harness.Background, v harness.JoinValues, name string, on *harness.Cluster) harness.Result {
	t.Helper()
	kubeconfig, err := os.ReadFile(on.Kubeconfig)
	assert.NilError(t, err)
	assert.NilError(t, hub.StartJoinedAgent(ctx(t), name, kubeconfig, v))
	r, err := s.Wait(ctx(t))
	assert.NilError(t, err)
	return r
}

// unjoinByHand takes a cluster joined out of band off the hub, as
// UnjoinSteps says, so that the tests after see the hub as it was.
func unjoinByHand(t *testing.T, name string) {
	t.Helper()
	hub.StopAgent(name)
	clusters := hub.Dynamic.Resource(ocm.ManagedClusterResource)
	err := clusters.Delete(ctx(t), name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	assert.Check(t, err)
	err = wait.PollUntilContextTimeout(ctx(t), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := clusters.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	assert.Check(t, err, "ManagedCluster %s gone", name)
}

// joinerBindings give the ServiceAccount spokekit-ops/joiner the base roles
// of rbac.yaml only.
var joinerBindings = fixture.Docs(
	fixture.Binding("", "spokekit-spoke-joiner", "spokekit-spoke", "spokekit-ops/joiner"),
	fixture.Binding(releaseNamespace, "spokekit-spoke-joiner", "spokekit-spoke-release", "spokekit-ops/joiner"),
)

// optInBindings add the opt-in roles join-command and --accept need.
const optInBindings = `
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: spokekit-spoke-join-joiner, namespace: open-cluster-management}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: spokekit-spoke-join}
subjects: [{kind: ServiceAccount, name: joiner, namespace: spokekit-ops}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: spokekit-spoke-accept-joiner}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: spokekit-spoke-accept}
subjects: [{kind: ServiceAccount, name: joiner, namespace: spokekit-ops}]
`

// join-command run as a user of the base roles is refused before it mints
// anything, and that user cannot mint the token by hand either; with the
// opt-in roles it prints the line, the real agent joins with the printed
// values alone, and --accept sees the hub approve the agent's request
// (the roles approve none) and accepts the cluster until it is joined and
// available.
func TestJoinCommand(t *testing.T) {
	const name = "edge-join"
	t.Cleanup(func() { unjoinByHand(t, name) })
	roles, err := harness.PluginRBAC("spoke")
	assert.NilError(t, err)
	assert.NilError(t, hub.ApplyYAML(ctx(t), roles+"\n---\n"+joinerBindings))
	as, err := hub.ServiceAccountCommand(ctx(t), t.TempDir(), "spokekit-ops", "joiner")
	assert.NilError(t, err)
	assert.NilError(t, as.WaitCanI(ctx(t), true, "list", "spokes.fleetconfig.open-cluster-management.io", "-A"))

	for _, args := range [][]string{{"join-command", name}, {"join-command", name, "--accept"}} {
		r, err := as.Kubectl(ctx(t), append([]string{"spoke", "-n", releaseNamespace}, args...)...)
		assert.NilError(t, err)
		assert.Equal(t, r.ExitCode, 3, r)
		assert.Check(t, is.Contains(r.Stderr, "may not create serviceaccounts/token agent-registration-bootstrap in namespace open-cluster-management"), r)
		assert.Check(t, is.Contains(r.Stderr, "nothing was changed"), r)
		assert.Check(t, is.Contains(r.Stderr, "spokekit-spoke-join"), r)
		assert.Equal(t, r.Stdout, "", r)
	}
	r, err := as.Kubectl(ctx(t), "create", "token", "agent-registration-bootstrap", "-n", harness.BootstrapSANamespace)
	assert.NilError(t, err)
	assert.Check(t, r.ExitCode != 0 && strings.Contains(r.Stderr, "forbidden"), "the base roles mint the join token: %s", r)
	assert.Check(t, managedCluster(t, name) == nil)

	assert.NilError(t, hub.ApplyYAML(ctx(t), optInBindings))
	autoApproveJoins(t)
	assert.NilError(t, as.WaitCanI(ctx(t), true, "create", "serviceaccounts/agent-registration-bootstrap", "--subresource", "token", "-n", harness.BootstrapSANamespace))
	assert.NilError(t, as.WaitCanI(ctx(t), true, "patch", "managedclusters.cluster.open-cluster-management.io"))
	r = joinOutOfBand(t, as, name, spoke2, "--brush-ignore")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Contains(r.Stderr, "approved"), r)
	assert.Check(t, is.Contains(r.Stderr, "managedcluster/"+name+" accepted (hubAcceptsClient: true)"), r)
	assert.Check(t, is.Regexp(`ManagedCluster edge-join: JOINED True, AVAILABLE True`, r.Stderr), r)
	mc := managedCluster(t, name)
	assert.Assert(t, mc != nil)
	assert.Check(t, available(mc), "%v", mc.Object["status"])

	// What the agent set is what the plugin reads as brush-ignore.
	r = spoke(t, "get", name, "-o", "json")
	assert.Equal(t, r.ExitCode, 0, r)
	var got struct {
		Items []struct{ OutOfBand, BrushIgnore bool }
	}
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &got))
	assert.Check(t, len(got.Items) == 1 && got.Items[0].OutOfBand && got.Items[0].BrushIgnore, r.Stdout)

	// The name is taken now: refused, nothing minted or printed.
	r, err = as.Kubectl(ctx(t), "spoke", "-n", releaseNamespace, "join-command", name)
	assert.NilError(t, err)
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "a ManagedCluster edge-join already exists"), r)
	assert.Equal(t, r.Stdout, "", r)
}

// --wait gives up after --timeout with exit 4 when no cluster comes, and
// says how it may still join.
func TestJoinCommandWaitTimesOut(t *testing.T) {
	r := spoke(t, "join-command", "edge-never", "--wait", "--timeout", "2s")
	assert.Equal(t, r.ExitCode, 4, r)
	assert.Check(t, is.Contains(r.Stderr, "timed out after 2s waiting for ManagedCluster edge-never"), r)
	assert.Check(t, is.Contains(r.Stderr, "clusteradm accept --clusters edge-never"), r)
	assert.Check(t, is.Regexp(`^clusteradm join --hub-token REDACTED --hub-apiserver https://127\.0\.0\.1:\d+ --cluster-name edge-never\n$`, r.Stdout), r)
}

// --accept run by a user who may not approve certificate requests, on a hub
// whose registration controller does not approve joins by itself (no
// ManagedClusterAutoApproval, as the harness starts it): the command waits
// for the hub's approval of the agent's request, approves nothing, and when
// --timeout ends exits 4 naming what it waited for and how to configure the
// hub. The cluster is not accepted.
func TestJoinCommandAcceptWaitsForTheHub(t *testing.T) {
	const name = "edge-unapproved"
	csrs := hub.Kube.CertificatesV1().CertificateSigningRequests()
	byCluster := metav1.ListOptions{LabelSelector: "open-cluster-management.io/cluster-name=" + name}
	t.Cleanup(func() {
		unjoinByHand(t, name)
		assert.Check(t, csrs.DeleteCollection(context.Background(), metav1.DeleteOptions{}, byCluster))
	})
	roles, err := harness.PluginRBAC("spoke")
	assert.NilError(t, err)
	assert.NilError(t, hub.ApplyYAML(ctx(t), roles+"\n---\n"+joinerBindings+"\n---\n"+optInBindings))
	as, err := hub.ServiceAccountCommand(ctx(t), t.TempDir(), "spokekit-ops", "joiner")
	assert.NilError(t, err)
	assert.NilError(t, as.WaitCanI(ctx(t), true, "create", "serviceaccounts/agent-registration-bootstrap", "--subresource", "token", "-n", harness.BootstrapSANamespace))
	assert.NilError(t, as.WaitCanI(ctx(t), false, "update", "certificatesigningrequests/approval"))

	// Long enough for the agent to start and ask; the wait for the hub's
	// approval is seen in the progress before the time is up.
	s, v := startJoinCommand(t, as, name, "--timeout", "60s")
	kubeconfig, err := os.ReadFile(spoke2.Kubeconfig)
	assert.NilError(t, err)
	assert.NilError(t, hub.StartJoinedAgent(ctx(t), name, kubeconfig, v))
	assert.NilError(t, s.WaitStderr(ctx(t), "1 the agent's, waiting for the hub's registration controller to approve it"))
	r, err := s.Wait(ctx(t))
	assert.NilError(t, err)
	assert.Equal(t, r.ExitCode, 4, r)
	// The wait shows what --timeout left of its time after the first one.
	assert.Check(t, is.Regexp(`timed out after \S+ waiting for a certificate signing request of `+name+`; last state: 1 request\(s\), 1 the agent's, waiting for the hub's registration controller to approve it`, r.Stderr), r)
	assert.Check(t, is.Contains(r.Stderr, "the hub's registration controller approves the agent's: it does only with its feature gate ManagedClusterAutoApproval on"), r)
	assert.Check(t, !regexp.MustCompile(`certificatesigningrequest/\S+ approved`).MatchString(r.Stderr), r)

	l, err := csrs.List(ctx(t), byCluster)
	assert.NilError(t, err)
	assert.Check(t, len(l.Items) > 0, "the agent asked")
	for _, c := range l.Items {
		assert.Check(t, is.Len(c.Status.Conditions, 0), "certificatesigningrequest/%s: %v", c.Name, c.Status.Conditions)
	}
	mc := managedCluster(t, name)
	assert.Assert(t, mc != nil)
	accepts, _, _ := unstructured.NestedBool(mc.Object, "spec", "hubAcceptsClient")
	assert.Check(t, !accepts, "not accepted")
}
