//go:build e2e

// Package park tests `kubectl park` end to end: the built plugin through the
// built kubectl against a real platform cluster serving the Cluster API CRDs,
// with a Cluster API stand-in creating machines and registering their nodes
// in a real tenant cluster.
package park

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

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
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	setup, done := context.WithTimeout(ctx, 5*time.Minute)
	defer done()
	var err error
	if env, err = harness.NewEnv(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Close()
	g, gctx := errgroup.WithContext(setup)
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
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	capi = standin.New(platform, namespace)
	go capi.Run(ctx)
	code := m.Run()
	cancel() // the stand-in stops before the clusters go
	return code
}
