//go:build e2e

package spoke

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/e2e/standin/fleet"
	"github.com/spokekit/spokekit/internal/api/ocm"
	spokehealth "github.com/spokekit/spokekit/internal/spoke/health"
)

// health runs `kubectl spoke health ARGS -o json` and decodes the rows by name.
func health(t *testing.T, args ...string) (harness.Result, map[string]spokehealth.Row) {
	t.Helper()
	r := spoke(t, append([]string{"health", "-o", "json"}, args...)...)
	var report struct{ Items []spokehealth.Row }
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &report), r)
	rows := map[string]spokehealth.Row{}
	for _, it := range report.Items {
		rows[it.Metadata.Name] = it
	}
	return r, rows
}

// waitAgentAddOn waits, in addon mode, until OCM reports the agent add-on
// of each cluster with the Available status want: its add-on manager from
// the add-on's applied work, its registration controller (Unknown) once the
// cluster's agent went silent.
func waitAgentAddOn(t *testing.T, want string, clusters ...string) {
	t.Helper()
	if mode != fleet.ModeAddon {
		return
	}
	for _, cluster := range clusters {
		addOns := hub.Dynamic.Resource(ocm.ManagedClusterAddOnResource).Namespace(cluster)
		err := wait.PollUntilContextTimeout(ctx(t), 300*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			a, err := addOns.Get(ctx, fleet.AgentAddOn, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(a.Object, "status", "conditions")
			for _, x := range conds {
				if m, _ := x.(map[string]any); m["type"] == "Available" {
					return m["status"] == want, nil
				}
			}
			return false, nil
		})
		assert.NilError(t, err, "OCM reports the add-on %s of %s Available %s", fleet.AgentAddOn, cluster, want)
	}
}

// Health of spokes in the states the test bed can make, through the real
// OCM agents: joined (its agent add-on made Available by OCM's add-on manager),
// out of band, credential purged, agent stopped (Available Unknown), a
// spoke whose API server stalls under --deep, and a stopped spoke API
// server (Available False). It stops spoke-2's control plane and starts it
// again before it returns.
func TestHealth(t *testing.T) {
	// The proxy lives until the test's end, after the spokes behind it left.
	proxy, err := spoke1.StartFaultProxy(ctx(t))
	assert.NilError(t, err)
	t.Cleanup(func() {
		proxy.Clear()
		for _, name := range []string{"health-ok", "health-silent", "health-stall", "health-purged"} {
			if spokeObject(t, name) != nil {
				r := spoke(t, "remove", name, "--wait", "--timeout", "2m")
				assert.Check(t, r.ExitCode == 0 || r.ExitCode == 4, r)
			}
		}
	})

	addAndJoin(t, "health-ok", spoke1)
	// Three spokes of one API server (see forgetting).
	forgetCluster(t, "health-ok")
	r := spoke(t, "add", "health-stall", "--spoke-kubeconfig", proxy.Kubeconfig, "--apply", "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	forgetCluster(t, "health-stall")
	purgedSpoke(t, "health-purged", spoke2)
	oob := hub.Dynamic.Resource(ocm.ManagedClusterResource)
	_, err = oob.Create(ctx(t), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
		"metadata": map[string]any{"name": "health-oob"}, "spec": map[string]any{"hubAcceptsClient": false},
	}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	t.Cleanup(func() {
		hub.StopAgent("health-oob")
		assert.Check(t, oob.Delete(ctx(t), "health-oob", metav1.DeleteOptions{}))
		waitManagedClusterGone(t, "health-oob")
	})
	assert.NilError(t, hub.Join(ctx(t), "health-oob", spoke2))
	waitAvailable(t, "health-ok", "health-oob")

	names := []string{"health-ok", "health-purged", "health-oob"}
	waitAgentAddOn(t, "True", "health-ok", "health-stall", "health-purged")
	// The lease as the agent last renewed it before health ran: health
	// reports that renewal or a later one (a condition, not a bound on the
	// clock: a loaded machine may run health long after).
	lease, err := hub.Kube.CoordinationV1().Leases("health-ok").Get(ctx(t), "managed-cluster-lease", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Assert(t, lease.Spec.RenewTime != nil, "%+v", lease.Spec)
	r, rows := health(t, names...)
	assert.Equal(t, r.ExitCode, 0, r)
	ok := rows["health-ok"]
	assert.Check(t, ok.Healthy, "%+v", ok)
	assert.Check(t, is.Equal(ok.KubernetesVersion, "v1.37.2"))
	assert.Check(t, ok.LeaseRenewed != nil && !ok.LeaseRenewed.Before(&metav1.Time{Time: lease.Spec.RenewTime.Truncate(time.Second)}),
		"health reports the agent's last renewal (%s) or a later one: %+v", lease.Spec.RenewTime, ok.LeaseRenewed)
	assert.Check(t, is.Equal(ok.Credential.State, spokehealth.CredentialValid))
	assert.Check(t, ok.Credential.Kind != "", "%+v", ok.Credential)
	wantPurged := spokehealth.CredentialPurged
	if mode != fleet.ModeAddon {
		// Unified mode keeps the Secret; the test made it as a chart would,
		// so kubectl spoke recorded no credential, and health reads none.
		wantPurged = spokehealth.CredentialUnknown
	}
	assert.Check(t, is.Equal(rows["health-purged"].Credential.State, wantPurged))
	assert.Check(t, rows["health-purged"].Healthy, "%+v", rows["health-purged"])
	assert.Check(t, rows["health-oob"].OutOfBand && rows["health-oob"].Healthy, "%+v", rows["health-oob"])
	assert.Check(t, is.Equal(rows["health-oob"].Credential.State, spokehealth.CredentialNone))
	table := spoke(t, append([]string{"health"}, names...)...)
	t.Logf("kubectl spoke health %s\n%s", strings.Join(names, " "), table.Stdout)

	// --deep: the spoke behind the proxy stalls every request of the
	// plugin; it gets --spoke-timeout, and the other spoke is reached anyway.
	stalls := proxy.Inject(&harness.Fault{UserAgent: "kubectl-spoke/", Times: -1, Action: harness.Stall})
	// That the stalled spoke got --spoke-timeout shows in its error below,
	// not in a wall-clock bound a loaded machine could break.
	r, rows = health(t, "health-ok", "health-stall", "health-purged", "--deep", "--spoke-timeout", "3s", "--max-concurrent", "1")
	assert.Equal(t, r.ExitCode, 1, r)
	assert.Check(t, proxy.Fired(stalls) > 0, "the spoke behind the proxy was asked")
	assert.Check(t, is.Contains(r.Stderr, "1 of 3 spokes unhealthy: health-stall"), r)
	stall := rows["health-stall"].Deep
	assert.Assert(t, stall != nil)
	assert.Check(t, is.Equal(stall.Error, "no answer within --spoke-timeout 3s"))
	deep := rows["health-ok"].Deep
	assert.Assert(t, deep != nil)
	assert.Check(t, is.Equal(deep.Error, ""))
	assert.Check(t, deep.APIServerCert != nil && deep.APIServerCert.After(time.Now()), "%+v", deep)
	assert.Check(t, is.Len(deep.Unchecked, 0))
	if mode == fleet.ModeAddon {
		assert.Check(t, rows["health-purged"].Deep != nil && rows["health-purged"].Deep.Skipped != "", "%+v", rows["health-purged"].Deep)
	}
	table = spoke(t, "health", "health-ok", "health-stall", "--deep", "--spoke-timeout", "3s", "-o", "wide")
	t.Logf("kubectl spoke health health-ok health-stall --deep --spoke-timeout 3s -o wide\n%s", table.Stdout)
	proxy.Clear()

	// What --deep could not check is never a pass: with nothing unhealthy,
	// a purged Secret (addon mode) leaves health-purged unchecked, exit 3.
	r, rows = health(t, "health-ok", "health-purged", "--deep")
	if mode == fleet.ModeAddon {
		assert.Equal(t, r.ExitCode, 3, r)
		assert.Check(t, is.Contains(r.Stderr, "--deep could not check 1 of 2 spokes: health-purged"), r)
		assert.Check(t, is.DeepEqual(rows["health-purged"].NotChecked, []string{"not checked: " + rows["health-purged"].Deep.Skipped}), "%+v", rows["health-purged"])
	} else {
		assert.Equal(t, r.ExitCode, 0, r)
	}
	assert.Check(t, is.Len(rows["health-ok"].NotChecked, 0), "%+v", rows["health-ok"])

	// The agent stops: the hub marks the cluster Unknown once its lease ran out.
	addAndJoin(t, "health-silent", spoke1)
	waitAgentAddOn(t, "True", "health-silent")
	assert.Check(t, hub.StopAgent("health-silent"))
	waitDark(t, "health-silent", "Unknown", ocm.TaintUnreachable)
	waitAgentAddOn(t, "Unknown", "health-silent")
	r, rows = health(t, "health-silent", "health-ok")
	assert.Equal(t, r.ExitCode, 1, r)
	silent := rows["health-silent"]
	assert.Check(t, is.Equal(silent.Available, "Unknown"))
	if mode == fleet.ModeAddon {
		assert.Check(t, is.DeepEqual(silent.AddOnsNotAvailable, []string{fleet.AgentAddOn}))
	}
	assert.Check(t, is.Contains(strings.Join(silent.Problems, "; "), "Registration agent stopped updating its lease"), "%+v", silent)
	assert.Check(t, rows["health-ok"].Healthy)

	// The spoke's API server stops: its agent reports Available False.
	stopUntilCleanup(t, spoke2)
	waitDark(t, "health-purged", "False", ocm.TaintUnavailable)
	r, rows = health(t, "health-purged")
	assert.Equal(t, r.ExitCode, 1, r)
	down := rows["health-purged"]
	assert.Check(t, is.Equal(down.Available, "False"))
	assert.Check(t, is.Contains(strings.Join(down.Problems, "; "), "The kube-apiserver is not ok"), "%+v", down)
	table = spoke(t, "health", "health-ok", "health-silent", "health-purged", "health-oob", "-o", "wide")
	t.Logf("kubectl spoke health -o wide (agent stopped, API server stopped)\n%s", table.Stdout)
}
