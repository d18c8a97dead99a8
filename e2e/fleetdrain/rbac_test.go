//go:build e2e

package fleetdrain

import (
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/internal/api/ocm"
)

// operator binds a ClusterRole of plugins/kubectl-fleetdrain/rbac.yaml
// (with the admission policies beside it) to the ServiceAccount
// spokekit-ops/operator, and returns a kubectl runner authenticated as it.
func operator(t *testing.T, c *harness.Cluster, role string, canI ...string) (harness.Command, string) {
	t.Helper()
	roles, err := harness.PluginRBAC("fleetdrain")
	assert.NilError(t, err)
	policy, err := harness.PluginManifest("fleetdrain", "admission-policy.yaml")
	assert.NilError(t, err)
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), policy+"\n---\n"+roles+`
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: `+role+`-operator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: `+role+`}
subjects: [{kind: ServiceAccount, name: operator, namespace: spokekit-ops}]
`))
	as, err := c.ServiceAccountCommand(ctx(t, time.Minute), t.TempDir(), "spokekit-ops", "operator")
	assert.NilError(t, err)
	assert.NilError(t, as.WaitCanI(ctx(t, time.Minute), true, canI...))
	t.Cleanup(func() { assert.Check(t, c.ApplyYAML(ctx(t, time.Minute), roles)) })
	return as, roles
}

func runAs(t *testing.T, as harness.Command, args ...string) harness.Result {
	t.Helper()
	r := harness.Kubectl(t, as, args...)
	return r
}

// deniedBy tries each write of the object name as the operator, sees the
// admission policy deny it, and the object's spec and metadata stay as
// they were.
func deniedBy(t *testing.T, as harness.Command, c *harness.Cluster, resource schema.GroupVersionResource, name, policy string, writes ...[]string) {
	t.Helper()
	before := writable(t, c, resource, name)
	assert.NilError(t, as.WaitDenied(ctx(t, time.Minute), policy, writes[0]...))
	for _, args := range writes {
		r := runAs(t, as, args...)
		assert.Check(t, r.ExitCode != 0 && strings.Contains(r.Stderr, "denied request") && strings.Contains(r.Stderr, policy), "%v: %s", args, r)
		t.Logf("%v: denied: %s", args, strings.TrimSpace(r.Stderr))
	}
	assert.DeepEqual(t, writable(t, c, resource, name), before)
}

// writable is what a patch of the object could change: its spec, and its
// metadata's labels, annotations, owners and finalizers (not its status,
// which the components keep writing).
func writable(t *testing.T, c *harness.Cluster, resource schema.GroupVersionResource, name string) map[string]any {
	t.Helper()
	u, err := c.Dynamic.Resource(resource).Get(ctx(t, time.Minute), name, metav1.GetOptions{})
	assert.NilError(t, err)
	return map[string]any{
		"spec": u.Object["spec"], "labels": u.GetLabels(), "annotations": u.GetAnnotations(),
		"ownerReferences": u.GetOwnerReferences(), "finalizers": u.GetFinalizers(),
	}
}

// TestLeastPrivilegeNode drains and uncordons as a ServiceAccount bound to
// only spokekit-fleetdrain-node; without patch on nodes the drain refuses
// before it cordons anything.
func TestLeastPrivilegeNode(t *testing.T) {
	c := tenant.get(t)
	addNodes(t, c, "least", "least-1", "least-2")
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), workload("least", "least", 2, 1)))
	waitPods(t, c, "least", "app in (web, db)", "web and db ready", func(r map[string]int) bool { return total(r) == 3 })
	addNodes(t, c, "least", "least-3")
	as, roles := operator(t, c, "spokekit-fleetdrain-node", "patch", "nodes")

	for _, args := range [][]string{
		{"fleetdrain", "node", "least-1", "least-2", "--ignore-daemonsets", "--dry-run=server"},
		{"fleetdrain", "node", "least-1", "least-2", "--ignore-daemonsets", "--max-concurrent", "2"},
		{"fleetdrain", "uncordon", "node", "least-1", "least-2"},
	} {
		r := runAs(t, as, args...)
		assert.Equal(t, r.ExitCode, 0, "%v: %s", args, r)
	}
	// patch nodes reaches no other field of a Node.
	deniedBy(t, as, c, corev1.SchemeGroupVersion.WithResource("nodes"), "least-3", "spokekit-fleetdrain-node-fields",
		[]string{"label", "node", "least-3", "tier=pci"},
		[]string{"annotate", "node", "least-3", "example.com/owner=mallory"},
		[]string{"taint", "node", "least-3", "example.com/gpu=true:NoSchedule"},
		[]string{"patch", "node", "least-3", "-p", `{"metadata":{"finalizers":["example.com/keep"]}}`},
	)

	fewer, err := harness.WithoutVerb(roles, "resources: [nodes]\n  verbs: [get, list, patch]", "patch")
	assert.NilError(t, err)
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), fewer))
	assert.NilError(t, as.WaitCanI(ctx(t, time.Minute), false, "patch", "nodes"))
	r := runAs(t, as, "fleetdrain", "node", "least-3", "--ignore-daemonsets")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "may not patch nodes; nothing was changed"), r)
	assert.Check(t, !unschedulable(t, c, "least-3"))

	// Budgets the user cannot read, or cannot follow while the drain waits:
	// refused at once, before the cordon, naming what is missing. (A denied
	// list was retried until the run's context ended, without --timeout
	// never; a denied watch left the drain a view of the budgets that never
	// changed.) A denied watch is met either by the budget view's first
	// watch ("cannot watch resource", the server's words) or by the
	// pre-check ("may not watch"), whichever comes first.
	for _, verb := range []string{"list", "watch"} {
		without, err := harness.WithoutVerb(roles, "resources: [poddisruptionbudgets]\n  verbs: [list, watch]", verb)
		assert.NilError(t, err)
		assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), without))
		assert.NilError(t, as.WaitCanI(ctx(t, time.Minute), false, verb, "poddisruptionbudgets.policy"))
		r := runAs(t, as, "fleetdrain", "node", "least-3", "--ignore-daemonsets")
		assert.Check(t, r.ExitCode == 3, "without %s: %s", verb, r)
		assert.Check(t, is.Regexp(`(cannot|may not) `+verb+` (resource ")?poddisruptionbudgets[^\n]*; nothing was changed`, r.Stderr), "without %s", verb)
		assert.Check(t, !strings.Contains(r.Stderr, "Failed to watch"), "the refusal says it once, without client-go's log: %s", r.Stderr)
		assert.Check(t, !unschedulable(t, c, "least-3"), "without %s: cordoned", verb)
	}
}

// TestLeastPrivilegeCluster drains and uncordons a spoke as a ServiceAccount
// bound to only spokekit-fleetdrain-cluster, and to spokekit-fleetdrain-works
// in the cluster's namespace alone once the refused drain names that
// binding; ManifestWorks anywhere else stay out of reach. Without patch on
// ManagedClusters the drain refuses before it taints anything.
func TestLeastPrivilegeCluster(t *testing.T) {
	c := drainBed(t, "least", "{}", "least-a").hub.Cluster
	as, roles := operator(t, c, "spokekit-fleetdrain-cluster", "patch", "managedclusters.cluster.open-cluster-management.io")

	before := taints(t, c, "least-a")
	r := runAs(t, as, "fleetdrain", "cluster", "least-a", "--min-available", "0", "--timeout", "1m")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "may not list manifestworks.work.open-cluster-management.io in namespace least-a"), r)
	assert.Check(t, is.Contains(r.Stderr, "kubectl create rolebinding spokekit-fleetdrain-works -n least-a --clusterrole spokekit-fleetdrain-works"), r)
	assert.DeepEqual(t, taints(t, c, "least-a"), before)
	assert.NilError(t, c.For(t.TempDir()).RunGrants(ctx(t, time.Minute), r.Stderr, as))

	for _, args := range [][]string{
		{"fleetdrain", "cluster", "least-a", "--min-available", "0", "--dry-run=server"},
		{"fleetdrain", "cluster", "least-a", "--min-available", "0", "--timeout", "1m"},
		{"fleetdrain", "uncordon", "cluster", "least-a"},
	} {
		r := runAs(t, as, args...)
		assert.Equal(t, r.ExitCode, 0, "%v: %s", args, r)
	}
	for _, args := range [][]string{
		{"get", "manifestworks.work.open-cluster-management.io", "-A"},
		{"get", "manifestworks.work.open-cluster-management.io", "-n", "spokekit-ops"},
		{"get", "secrets", "-A"},
	} {
		r := runAs(t, as, args...)
		assert.Check(t, r.ExitCode != 0 && strings.Contains(r.Stderr, "forbidden"), "%v: %s", args, r)
		t.Logf("%v: denied: %s", args, strings.TrimSpace(r.Stderr))
	}
	// patch managedclusters reaches no other field: not the labels
	// Placements select by, not another tool's taint (one set here).
	admin := c.For(t.TempDir())
	r = runAs(t, admin, "patch", "managedcluster", "least-a", "--type", "merge", "-p", `{"spec":{"taints":[{"key":"example.com/maintenance","effect":"NoSelect"}]}}`)
	assert.Equal(t, r.ExitCode, 0, r)
	before = taints(t, c, "least-a")
	assert.Check(t, is.Len(before, 1), "%v", before)
	deniedBy(t, as, c, ocm.ManagedClusterResource, "least-a", "spokekit-fleetdrain-cluster-fields",
		[]string{"label", "managedcluster", "least-a", "env=prod"},
		[]string{"annotate", "managedcluster", "least-a", "example.com/owner=mallory"},
		[]string{"patch", "managedcluster", "least-a", "--type", "json", "-p", `[{"op":"remove","path":"/spec/taints/0"}]`},
		[]string{"patch", "managedcluster", "least-a", "--type", "json", "-p", `[{"op":"add","path":"/spec/taints/-","value":{"key":"example.com/other","effect":"NoSelect"}}]`},
		[]string{"patch", "managedcluster", "least-a", "--type", "merge", "-p", `{"spec":{"hubAcceptsClient":false}}`},
	)

	fewer, err := harness.WithoutVerb(roles, "resources: [managedclusters]\n  verbs: [get, list, patch]", "patch")
	assert.NilError(t, err)
	assert.NilError(t, c.ApplyYAML(ctx(t, time.Minute), fewer))
	assert.NilError(t, as.WaitCanI(ctx(t, time.Minute), false, "patch", "managedclusters.cluster.open-cluster-management.io"))
	before = taints(t, c, "least-a")
	r = runAs(t, as, "fleetdrain", "cluster", "least-a", "--min-available", "0", "--timeout", "1m")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "may not patch managedclusters.cluster.open-cluster-management.io least-a; nothing was changed"), r)
	assert.DeepEqual(t, taints(t, c, "least-a"), before)
}
