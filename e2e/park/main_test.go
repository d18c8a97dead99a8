//go:build e2e

// Package park tests `kubectl park` end to end: the built plugin through the
// built kubectl against a real platform cluster serving the Cluster API CRDs,
// with a Cluster API stand-in creating machines and registering their nodes
// in a real tenant cluster.
package park

import (
	"context"
	"os"
	"testing"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/e2e/harness"
	standin "github.com/spokekit/spokekit/e2e/standin/capi"
)

const namespace = "dynamo-prod"

var (
	env              *harness.Env
	platform, tenant *harness.Cluster
	capi             *standin.StandIn
)

func TestMain(m *testing.M) {
	os.Exit(harness.Main(m, func(run, start context.Context, e *harness.Env) (func(), error) {
		env = e
		g, gctx := errgroup.WithContext(start)
		g.Go(func() (err error) {
			if platform, err = env.StartCluster(gctx, "platform"); err != nil {
				return err
			}
			if err := harness.InstallPlatformCRDs(gctx, platform); err != nil {
				return err
			}
			_, err = platform.Kube.CoreV1().Namespaces().Create(gctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
			return err
		})
		g.Go(func() (err error) {
			tenant, err = env.StartCluster(gctx, "tenant", harness.KwokManagesAnnotatedNodesOnly())
			return err
		})
		if err := g.Wait(); err != nil {
			return nil, err
		}
		capi = standin.New(platform, namespace)
		go capi.Run(run)
		return nil, nil
	}))
}
