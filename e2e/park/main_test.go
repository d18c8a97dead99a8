//go:build e2e

// Package park tests `kubectl park` end to end: the built plugin through the
// built kubectl against a platform cluster (kwokctl) on which Cluster API
// v1.14.2's own managers run as local processes: core (topology,
// MachineDeployment, MachineSet, Machine with drain, MachineHealthCheck),
// kubeadm bootstrap, kubeadm control plane and the Docker provider's
// in-memory backend, which simulates each workload cluster's API server and
// etcd. A second kwokctl cluster serves as a workload cluster where the
// simulated one cannot serve a scenario (evictions, PVCs, CSRs: see
// drain_test.go). The only stand-in left is the Kamaji control-plane pods,
// labelled pods the tests create on the platform.
package park

import (
	"context"
	"os"
	"testing"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/e2e/harness"
)

// Most tests here wait on Cluster API's controllers (the package alone keeps
// a third of a core busy), so they run in parallel (t.Parallel), each on
// Cluster objects of its own names. The two that move a cluster's workload
// API server to the tenant do not: that restarts the shared core manager
// (ClusterAPI.MoveToTenant), and the tenant is one API server; go test runs
// them before it starts the parallel ones.

// The clusters live in two Environment namespaces, to show park list -A.
const (
	namespace = "dynamo-prod"
	otherNS   = "dynamo-dev"
)

var (
	env              *harness.Env
	platform, tenant *harness.Cluster
	clusterAPI       *harness.ClusterAPI
)

func TestMain(m *testing.M) {
	os.Exit(harness.Main(m, func(_, start context.Context, e *harness.Env) (func(), error) {
		env = e
		g, gctx := errgroup.WithContext(start)
		g.Go(func() (err error) {
			if platform, err = env.StartCluster(gctx, "platform", harness.AuditWrites()); err != nil {
				return err
			}
			if clusterAPI, err = platform.StartClusterAPI(gctx); err != nil {
				return err
			}
			for _, ns := range []string{namespace, otherNS} {
				if _, err := platform.Kube.CoreV1().Namespaces().Create(gctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
					return err
				}
				if err := platform.InstallInMemoryClass(gctx, ns, "in-memory", nil); err != nil {
					return err
				}
			}
			return nil
		})
		g.Go(func() (err error) {
			tenant, err = env.StartCluster(gctx, "tenant", harness.KwokManagesAnnotatedNodesOnly())
			return err
		})
		return nil, g.Wait()
	}))
}
