package main

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/e2e/harness"
	standin "github.com/spokekit/spokekit/e2e/standin/capi"
)

// park parks a Cluster API cluster with three worker pools and resumes it,
// with the Cluster API stand-in creating machines and registering their
// nodes in a tenant cluster.
func (d *Demo) park(ctx context.Context) error {
	fmt.Println("\n==> kubectl park: a Cluster API cluster with pools of 3, 2 and an autoscaled one")
	const ns = "dynamo-prod"
	tenant, err := d.env.StartCluster(ctx, "app", harness.KwokManagesAnnotatedNodesOnly())
	if err != nil {
		return err
	}
	if _, err := d.platform.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	capi := standin.New(d.platform, ns)
	capi.AddTenant("app", tenant)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go capi.Run(runCtx)
	if err := d.platform.ApplyYAML(ctx, standin.ThreePoolCluster(ns, "app")); err != nil {
		return err
	}
	fmt.Fprintln(os.Stdout, "\n(the stand-in brings up the workers; resume --wait on a running cluster waits for them)")
	steps := [][]string{
		{"park", "resume", "app", "-n", ns, "--wait", "--timeout", "2m"},
		{"park", "list", "-n", ns},
		{"park", "cluster", "app", "-n", ns, "--dry-run=client"},
		{"park", "cluster", "app", "-n", ns, "--wait", "--timeout", "2m"},
		{"park", "cluster", "app", "-n", ns},
		{"park", "list", "-n", ns, "-o", "wide"},
		{"park", "resume", "app", "-n", ns, "--wait", "--timeout", "2m"},
	}
	for _, args := range steps {
		if err := d.kubectl(ctx, d.platform, args...); err != nil {
			return err
		}
	}
	return d.expect(ctx, d.platform, 3, "park", "cluster", "app", "-n", ns, "--control-plane")
}
