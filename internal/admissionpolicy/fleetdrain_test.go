package admissionpolicy

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

var (
	nodes           = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	managedClusters = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1", Resource: "managedclusters"}
)

// admin may do anything, as cluster-admin may.
var admin = rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}

// update is an UPDATE (a patch, as admission sees it) of a cluster-scoped
// object from old to updated, by alice bound cluster-wide to role (none: rules).
func update(resource schema.GroupVersionResource, role, old, updated string, rules ...rbacv1.PolicyRule) request {
	r := request{Operation: admission.Update, Resource: resource, OldObject: old, Object: updated, User: "alice", Rules: rules}
	if role != "" {
		r.Bound = []binding{{Role: role}}
	}
	return r
}

const node = `
apiVersion: v1
kind: Node
metadata:
  name: worker-1
  labels: {kubernetes.io/hostname: worker-1, node-role.kubernetes.io/worker: ""}
  annotations: {node.alpha.kubernetes.io/ttl: "0"}
spec:
  podCIDR: 10.0.1.0/24
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
`

// cordoned is node as fleetdrain node leaves it.
const cordoned = `
apiVersion: v1
kind: Node
metadata:
  name: worker-1
  labels: {kubernetes.io/hostname: worker-1, node-role.kubernetes.io/worker: ""}
  annotations: {node.alpha.kubernetes.io/ttl: "0", fleetdrain.spokekit.io/cordoned-by: kubectl-fleetdrain}
spec:
  podCIDR: 10.0.1.0/24
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
  unschedulable: true
`

func TestFleetdrainNodeCordonsAndUncordons(t *testing.T) {
	for name, r := range map[string]request{
		"cordon":   update(nodes, "spokekit-fleetdrain-node", node, cordoned),
		"uncordon": update(nodes, "spokekit-fleetdrain-node", cordoned, strings.Replace(node, "podCIDR", "unschedulable: false\n  podCIDR", 1)),
	} {
		t.Run(name, func(t *testing.T) {
			v := admit(t, r)
			assert.DeepEqual(t, v.Matched, []string{"spokekit-fleetdrain-node-fields"})
			assert.DeepEqual(t, v.Denied, []string(nil))
		})
	}
}

func TestFleetdrainNodeChangesNothingElse(t *testing.T) {
	for name, new := range map[string]string{
		"a label":             strings.Replace(cordoned, `node-role.kubernetes.io/worker: ""`, `node-role.kubernetes.io/worker: "", tier: pci`, 1),
		"a label removed":     strings.Replace(cordoned, `, node-role.kubernetes.io/worker: ""`, "", 1),
		"a taint removed":     strings.Replace(cordoned, "taints: [{key: dedicated, value: gpu, effect: NoSchedule}]", "taints: []", 1),
		"another annotation":  strings.Replace(cordoned, `node.alpha.kubernetes.io/ttl: "0"`, `node.alpha.kubernetes.io/ttl: "5"`, 1),
		"the pod CIDR":        strings.Replace(cordoned, "10.0.1.0/24", "10.0.9.0/24", 1),
		"a finalizer":         strings.Replace(cordoned, "name: worker-1", "name: worker-1\n  finalizers: [example.com/keep]", 1),
		"an annotation added": strings.Replace(cordoned, "node.alpha.kubernetes.io/ttl", "example.com/owner: mallory, node.alpha.kubernetes.io/ttl", 1),
	} {
		t.Run(name, func(t *testing.T) {
			v := admit(t, update(nodes, "spokekit-fleetdrain-node", node, new))
			assert.Assert(t, v.deniedBy("spokekit-fleetdrain-node-fields"), "%+v", v)
		})
	}
	t.Run("but an administrator may", func(t *testing.T) {
		v := admit(t, update(nodes, "", node, strings.Replace(node, "taints: [{key: dedicated, value: gpu, effect: NoSchedule}]", "taints: []", 1), admin))
		assert.DeepEqual(t, v.Denied, []string(nil))
	})
}

const managedCluster = `
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata:
  name: spoke-1
  labels: {cluster.open-cluster-management.io/clusterset: default, env: dev}
spec:
  hubAcceptsClient: true
  leaseDurationSeconds: 60
  taints:
  - {key: example.com/maintenance, effect: NoSelect, timeAdded: "2026-01-01T00:00:00Z"}
`

// drained is managedCluster as fleetdrain cluster leaves it (the hub set
// timeAdded).
const drained = `
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata:
  name: spoke-1
  labels: {cluster.open-cluster-management.io/clusterset: default, env: dev}
spec:
  hubAcceptsClient: true
  leaseDurationSeconds: 60
  taints:
  - {key: example.com/maintenance, effect: NoSelect, timeAdded: "2026-01-01T00:00:00Z"}
  - {key: fleetdrain.spokekit.io/drained, effect: NoSelect, timeAdded: "2026-12-03T00:00:00Z"}
`

func TestFleetdrainClusterTaintsAndUntaints(t *testing.T) {
	for name, r := range map[string]request{
		"taint":                update(managedClusters, "spokekit-fleetdrain-cluster", managedCluster, drained),
		"untaint":              update(managedClusters, "spokekit-fleetdrain-cluster", drained, managedCluster),
		"taint the untainted":  update(managedClusters, "spokekit-fleetdrain-cluster", untaintedCluster(), untaintedCluster()+"  taints: [{key: fleetdrain.spokekit.io/drained, effect: NoSelect}]\n"),
		"untaint to no taints": update(managedClusters, "spokekit-fleetdrain-cluster", untaintedCluster()+"  taints: [{key: fleetdrain.spokekit.io/drained, effect: NoSelect}]\n", untaintedCluster()),
	} {
		t.Run(name, func(t *testing.T) {
			v := admit(t, r)
			assert.DeepEqual(t, v.Matched, []string{"spokekit-fleetdrain-cluster-fields"})
			assert.DeepEqual(t, v.Denied, []string(nil))
		})
	}
}

// untaintedCluster is managedCluster with its taints cut off its end.
func untaintedCluster() string {
	before, _, found := strings.Cut(managedCluster, "  taints:")
	if !found {
		panic("untaintedCluster: managedCluster has no taints")
	}
	return before
}

func TestFleetdrainClusterChangesNothingElse(t *testing.T) {
	for name, new := range map[string]string{
		"a label (placements select it)":   strings.Replace(drained, "env: dev", "env: prod", 1),
		"another tool's taint removed":     strings.Replace(drained, "  - {key: example.com/maintenance, effect: NoSelect, timeAdded: \"2026-01-01T00:00:00Z\"}\n", "", 1),
		"another taint added":              drained + "  - {key: example.com/other, effect: NoSelect}\n",
		"fleetdrain's key, another effect": strings.Replace(drained, "fleetdrain.spokekit.io/drained, effect: NoSelect", "fleetdrain.spokekit.io/drained, effect: PreferNoSelect", 1),
		"fleetdrain's key with a value":    strings.Replace(drained, "fleetdrain.spokekit.io/drained,", "fleetdrain.spokekit.io/drained, value: x,", 1),
		"the rest of the spec":             strings.Replace(drained, "hubAcceptsClient: true", "hubAcceptsClient: false", 1),
		"an annotation":                    strings.Replace(drained, "name: spoke-1", "name: spoke-1\n  annotations: {example.com/x: y}", 1),
	} {
		t.Run(name, func(t *testing.T) {
			v := admit(t, update(managedClusters, "spokekit-fleetdrain-cluster", managedCluster, new))
			assert.Assert(t, v.deniedBy("spokekit-fleetdrain-cluster-fields"), "%+v", v)
		})
	}
	t.Run("but an administrator may", func(t *testing.T) {
		v := admit(t, update(managedClusters, "", managedCluster, strings.Replace(managedCluster, "env: dev", "env: prod", 1), admin))
		assert.DeepEqual(t, v.Denied, []string(nil))
	})
}
