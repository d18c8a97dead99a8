package main

import (
	"context"
	"fmt"

	"github.com/spokekit/spokekit/e2e/standin/placement"
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

const demoShop = `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {pool: demo}
      containers: [{name: web, image: nginx}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec:
  minAvailable: 5
  selector: {matchLabels: {app: web}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: log-agent, namespace: shop}
spec:
  selector: {matchLabels: {app: log-agent}}
  template:
    metadata: {labels: {app: log-agent}}
    spec:
      nodeSelector: {pool: demo}
      containers: [{name: agent, image: busybox}]
`

// demoFleet is a ManagedCluster with a placement that drops drained
// clusters, one that tolerates every taint, and a hand-made work.
const demoFleet = `
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: drain-demo}
spec: {hubAcceptsClient: true}
---
apiVersion: v1
kind: Namespace
metadata: {name: drain-demo}
---
apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: shop, namespace: apps}
spec: {}
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: monitoring, namespace: apps}
spec:
  tolerations: [{operator: Exists}]
---
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata:
  name: shop
  namespace: drain-demo
  labels: {work.open-cluster-management.io/placementname: shop, work.open-cluster-management.io/manifestworkreplicaset: apps.shop}
spec: {workload: {manifests: []}}
---
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata:
  name: monitoring
  namespace: drain-demo
  labels: {work.open-cluster-management.io/placementname: monitoring, work.open-cluster-management.io/manifestworkreplicaset: apps.monitoring}
spec: {workload: {manifests: []}}
---
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: debug-tools, namespace: drain-demo}
spec: {workload: {manifests: []}}
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

	fmt.Println("\n==> fleetdrain: take a cluster out of the fleet's placements (the placement stand-in plays OCM)")
	standin, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = placement.Run(standin, d.hub.Dynamic) }()
	if err := d.hub.ApplyYAML(ctx, demoFleet); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"fleetdrain", "cluster", "drain-demo", "--dry-run=client"},
		{"fleetdrain", "cluster", "drain-demo", "--timeout", "1m"},
		{"get", "manifestworks", "-n", "drain-demo"},
		{"fleetdrain", "uncordon", "cluster", "drain-demo"},
	} {
		if err := d.kubectl(ctx, d.hub, args...); err != nil {
			return err
		}
	}
	return nil
}
