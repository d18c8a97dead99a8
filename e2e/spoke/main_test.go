//go:build e2e

// Package spoke tests `kubectl spoke` end to end: a hub and two spokes
// (real kwokctl control planes), the fleet stand-in playing the FleetConfig
// controller and OCM registration on the hub, and the built plugin run
// through the built kubectl.
package spoke

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/e2e/standin/fleet"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
)

// releaseNamespace is where the fleet's Hub, Spokes and secrets live.
const releaseNamespace = "mural-system"

var (
	env            *harness.Env
	hub            *harness.Cluster
	spoke1, spoke2 *harness.Cluster
	standin        *fleet.Fleet
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
		if hub, err = env.StartCluster(gctx, "hub"); err != nil {
			return err
		}
		if err := harness.InstallHubCRDs(gctx, hub); err != nil {
			return err
		}
		return createFleet(gctx)
	})
	g.Go(func() (err error) { spoke1, err = env.StartCluster(gctx, "spoke-1"); return err })
	g.Go(func() (err error) { spoke2, err = env.StartCluster(gctx, "spoke-2"); return err })
	if err := g.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if standin, err = fleet.Start(ctx, hub.Config, releaseNamespace, 300*time.Millisecond); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	for _, err := range standin.Errors() {
		fmt.Fprintln(os.Stderr, "fleet stand-in:", err)
	}
	return code
}

// createFleet creates the fleet as the chart installs it: the release
// namespace and a Hub owned by the Helm release "mural".
func createFleet(ctx context.Context) error {
	if _, err := hub.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	h := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": fleetconfig.GroupVersion.String(), "kind": "Hub",
		"metadata": map[string]any{
			"name": "hub", "namespace": releaseNamespace,
			"labels":      map[string]any{fleetconfig.ManagedByLabel: "Helm"},
			"annotations": map[string]any{fleetconfig.HelmReleaseNameAnnotation: "mural", fleetconfig.HelmReleaseNamespaceAnnotation: releaseNamespace},
		},
		"spec": map[string]any{"kubeconfig": map[string]any{"inCluster": true}},
	}}
	// An Established CRD can take a moment more to be served.
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := hub.Dynamic.Resource(fleetconfig.HubResource).Namespace(releaseNamespace).Create(ctx, h, metav1.CreateOptions{})
		return err == nil, ignoreNotFound(err)
	})
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
