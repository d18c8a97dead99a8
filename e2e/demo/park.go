package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spokekit/spokekit/e2e/harness"
)

// park parks a Cluster API cluster with three worker pools and resumes it,
// on Cluster API's own managers (core, kubeadm bootstrap and control plane,
// the in-memory provider) running against the platform cluster.
func (d *Demo) park(ctx context.Context) error {
	fmt.Println("\n==> kubectl park: a Cluster API cluster with pools of 3, 2 and an autoscaled one, on Cluster API v1.14.2's own controllers")
	const ns = "dynamo-prod"
	capi, err := d.platform.StartClusterAPI(ctx)
	if err != nil {
		return err
	}
	if err := d.kubectl(ctx, d.platform, "create", "namespace", ns); err != nil {
		return err
	}
	if err := d.platform.InstallInMemoryClass(ctx, ns, "in-memory", nil); err != nil {
		return err
	}
	// The Cluster is made as its owner would make it, with kubectl: park
	// warns only about a manager that server-side applies the replicas (a
	// GitOps tool), and the demo's own would be one.
	cluster := harness.TopologyCluster(ns, "app", "in-memory",
		"{class: default-worker, name: md-0, replicas: 3}",
		"{class: default-worker, name: md-1, replicas: 2}",
		`{class: default-worker, name: auto, metadata: {annotations: {cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size: "1", cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size: "5"}}}`)
	if err := os.WriteFile(filepath.Join(d.home, "app.yaml"), []byte(cluster), 0o644); err != nil {
		return err
	}
	if err := d.kubectl(ctx, d.platform, "apply", "-f", "app.yaml"); err != nil {
		return err
	}
	if err := d.platform.KamajiStandIn(ctx, ns, "app"); err != nil {
		return err
	}
	fmt.Println("\n(Cluster API provisions the workers; resume --wait on a running cluster waits for them. The in-memory provider's")
	fmt.Println("simulated API server serves no CSRs or PersistentVolumeClaims: where the plugin reads them it says what the server")
	fmt.Println("answered and goes on, until the cluster's API moves to a kwok cluster that serves them, before park status)")
	steps := [][]string{
		{"park", "resume", "app", "-n", ns, "--wait", "--timeout", "5m"},
		{"park", "list", "-n", ns},
		{"park", "cluster", "app", "-n", ns, "--dry-run=client"},
		{"park", "cluster", "app", "-n", ns, "--wait", "--timeout", "5m"},
		{"park", "cluster", "app", "-n", ns},
		{"park", "list", "-n", ns, "-o", "wide"},
		{"park", "resume", "app", "-n", ns, "--wait", "--timeout", "5m"},
	}
	for _, args := range steps {
		if err := d.kubectl(ctx, d.platform, args...); err != nil {
			return err
		}
	}
	fmt.Println("\n(the in-memory provider's API server serves no pods or CSRs: the workload cluster's API moves to a kwok cluster, with its nodes, as in the e2e tests)")
	if err := capi.MoveToTenant(ctx, ns, "app", d.workload); err != nil {
		return err
	}
	if err := d.kubectl(ctx, d.platform, "park", "status", "app", "-n", ns); err != nil {
		return err
	}
	return d.expect(ctx, d.platform, 3, "park", "cluster", "app", "-n", ns, "--control-plane")
}
