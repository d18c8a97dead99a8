package admissionpolicy

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

var clusters = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "clusters"}

// running is a Cluster API Cluster with two worker pools, one under the
// autoscaler.
const running = `
apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata:
  name: app
  namespace: dynamo-prod
  labels: {env: prod}
  annotations: {team: ml}
spec:
  paused: false
  controlPlaneRef: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: KubeadmControlPlane, name: app}
  topology:
    class: gpu
    version: v1.33.1
    controlPlane: {replicas: 3}
    variables: [{name: region, value: eu}]
    workers:
      machineDeployments:
      - class: default
        name: md-0
        replicas: 3
      - class: gpu
        name: md-gpu
        metadata:
          labels: {pool: gpu}
          annotations: {cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size: "1", cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size: "5", team: ml}
      machinePools:
      - class: default
        name: mp-0
        replicas: 2
`

// parked is running as park cluster leaves it.
const parked = `
apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata:
  name: app
  namespace: dynamo-prod
  labels: {env: prod}
  annotations: {team: ml, park.spokekit.io/record: '{"pools":[]}'}
spec:
  paused: false
  controlPlaneRef: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: KubeadmControlPlane, name: app}
  topology:
    class: gpu
    version: v1.33.1
    controlPlane: {replicas: 3}
    variables: [{name: region, value: eu}]
    workers:
      machineDeployments:
      - class: default
        name: md-0
        replicas: 0
      - class: gpu
        name: md-gpu
        metadata:
          labels: {pool: gpu}
          annotations: {team: ml}
        replicas: 0
      machinePools:
      - class: default
        name: mp-0
        replicas: 0
`

// updateCluster is an UPDATE of a Cluster by alice, bound to spokekit-park
// in its namespace.
func updateCluster(old, updated string) request {
	bound := []binding{{Role: "spokekit-park", Namespace: "dynamo-prod"}}
	return request{Operation: admission.Update, Resource: clusters, Namespace: "dynamo-prod", OldObject: old, Object: updated, User: "alice", Bound: bound}
}

func TestParkParksAndResumes(t *testing.T) {
	for name, r := range map[string]request{
		"park":   updateCluster(running, parked),
		"resume": updateCluster(parked, running),
	} {
		t.Run(name, func(t *testing.T) {
			v := admit(t, r)
			assert.DeepEqual(t, v.Matched, []string{"spokekit-park-cluster-fields"})
			assert.DeepEqual(t, v.Denied, []string(nil))
		})
	}
}

func TestParkChangesNothingElseOfACluster(t *testing.T) {
	for name, new := range map[string]string{
		"topology version":          strings.Replace(parked, "version: v1.33.1", "version: v1.34.0", 1),
		"topology class":            strings.Replace(parked, "class: gpu\n    version", "class: cheap\n    version", 1),
		"variables":                 strings.Replace(parked, "value: eu", "value: us", 1),
		"control-plane replicas":    strings.Replace(parked, "controlPlane: {replicas: 3}", "controlPlane: {replicas: 1}", 1),
		"paused":                    strings.Replace(parked, "paused: false", "paused: true", 1),
		"a pool's class":            strings.Replace(parked, "- class: default\n        name: md-0", "- class: gpu\n        name: md-0", 1),
		"a pool's labels":           strings.Replace(parked, "labels: {pool: gpu}", "labels: {pool: cpu}", 1),
		"a pool's other annotation": strings.Replace(parked, "annotations: {team: ml}\n        replicas", "annotations: {team: ops}\n        replicas", 1),
		"a pool added":              strings.Replace(parked, "      machinePools:\n", "      - {class: gpu, name: md-new, replicas: 9}\n      machinePools:\n", 1),
		"a pool removed":            strings.Replace(parked, "      - class: default\n        name: md-0\n        replicas: 0\n", "", 1),
		"a label":                   strings.Replace(parked, "labels: {env: prod}", "labels: {env: dev}", 1),
		"an annotation":             strings.Replace(parked, "annotations: {team: ml, park", "annotations: {team: ops, park", 1),
	} {
		t.Run(name, func(t *testing.T) {
			v := admit(t, updateCluster(running, new))
			assert.Assert(t, v.deniedBy("spokekit-park-cluster-fields"), "%+v", v)
		})
	}
	t.Run("but an administrator may", func(t *testing.T) {
		r := updateCluster(running, strings.Replace(running, "version: v1.33.1", "version: v1.34.0", 1))
		r.Bound, r.Rules = nil, append(r.Rules, admin)
		v := admit(t, r)
		assert.DeepEqual(t, v.Denied, []string(nil))
	})
}
