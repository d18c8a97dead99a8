package main

import (
	"context"
	"fmt"

	"github.com/spokekit/spokekit/e2e/fixture"
)

// demoNode is a kwok node (kwok's controller plays its kubelet) backed by a
// Cluster API Machine.
const demoNode = `
apiVersion: v1
kind: Node
metadata:
  name: %[1]s
  labels: {pool: demo, kubernetes.io/hostname: %[1]s}
  annotations: {kwok.x-k8s.io/node: fake, cluster.x-k8s.io/machine: app-md-0-%[1]s}
`

// demoShop is a web Deployment under a budget that lets one pod go at a
// time, and a DaemonSet the drain leaves alone.
var demoShop = fixture.Docs(
	fixture.Namespace("shop"),
	fixture.Workload{Namespace: "shop", Name: "web", Replicas: 6, Pool: "demo"}.YAML(),
	fixture.Budget("shop", "web", "web", "minAvailable: 5"),
	fixture.Workload{Kind: "DaemonSet", Namespace: "shop", Name: "log-agent", Pool: "demo", Image: "busybox"}.YAML(),
)

// demoFleet binds the default cluster set (every joined cluster) to apps,
// where a placement drops drained clusters and one tolerates every taint,
// each with a ManifestWorkReplicaSet; and a work made by hand on spoke-1.
var demoFleet = `
apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: default, namespace: apps}
spec: {clusterSet: default}
---
` + fixture.Docs(
	fixture.Placement("apps", "shop", "{}"),
	fixture.Placement("apps", "monitoring", "{tolerations: [{operator: Exists}]}"),
	fixture.WorkReplicaSet("apps", "shop"),
	fixture.WorkReplicaSet("apps", "monitoring"),
) + `---
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: debug-tools, namespace: spoke-1}
spec:
  workload:
    manifests:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: debug-tools, namespace: default}}
`

// fleetdrain drains two nodes of spoke-1 (used as a tenant cluster with kwok
// nodes), then drains a cluster out of the fleet on the hub.
func (d *Demo) fleetdrain(ctx context.Context) error {
	fmt.Println("\n==> fleetdrain: two worker nodes with a Deployment under a PodDisruptionBudget, and a DaemonSet")
	for _, n := range []string{"worker-1", "worker-2"} {
		if err := d.spoke1.ApplyYAML(ctx, fmt.Sprintf(demoNode, n)); err != nil {
			return err
		}
	}
	if err := d.spoke1.ApplyYAML(ctx, demoShop); err != nil {
		return err
	}
	if err := d.kubectl(ctx, d.spoke1, "rollout", "status", "deployment/web", "-n", "shop", "--timeout", "2m"); err != nil {
		return err
	}
	if err := d.spoke1.ApplyYAML(ctx, fmt.Sprintf(demoNode, "worker-3")); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"fleetdrain", "node", "worker-1", "worker-2", "--ignore-daemonsets", "--dry-run=client"},
		{"fleetdrain", "node", "worker-1", "worker-2", "--ignore-daemonsets", "--max-concurrent", "2", "--pdb-timeout", "1m"},
		{"get", "pods", "-n", "shop", "-o", "wide"},
		{"fleetdrain", "uncordon", "node", "worker-1", "worker-2"},
	} {
		if err := d.kubectl(ctx, d.spoke1, args...); err != nil {
			return err
		}
	}

	fmt.Println("\n==> fleetdrain: take spoke-1 out of the fleet's placements (OCM's placement and ManifestWorkReplicaSet controllers move its works)")
	// spoke-2 left the fleet in the spoke steps: it joins again, so that
	// shop's works have a cluster to move to.
	if err := d.kubectl(ctx, d.hub.Cluster, "spoke", "add", "spoke-2", "--spoke-kubeconfig", "spoke-2.kubeconfig", "--release", "mural", "--values", "values.yaml", "--wait"); err != nil {
		return err
	}
	if err := d.hub.ApplyYAML(ctx, demoFleet); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"wait", "manifestwork/shop", "manifestwork/monitoring", "-n", "spoke-1", "--for=create", "--timeout", "2m"},
		{"wait", "manifestwork/shop", "-n", "spoke-2", "--for=create", "--timeout", "2m"},
	} {
		if err := d.kubectl(ctx, d.hub.Cluster, args...); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		// The placement guard refuses a drain that shrinks a Placement; shop
		// takes every cluster (two), so the demo accepts keeping one.
		{"fleetdrain", "cluster", "spoke-1", "--min-available", "1", "--dry-run=client"},
		{"fleetdrain", "cluster", "spoke-1", "--min-available", "1", "--timeout", "2m"},
		{"get", "manifestworks", "-n", "spoke-1"},
		{"fleetdrain", "uncordon", "cluster", "spoke-1"},
		{"wait", "manifestwork/shop", "-n", "spoke-1", "--for=create", "--timeout", "2m"},
	} {
		if err := d.kubectl(ctx, d.hub.Cluster, args...); err != nil {
			return err
		}
	}
	return nil
}
