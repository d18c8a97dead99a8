// The drain taint on a ManagedCluster: read, add and remove it with guarded
// JSON patches (fleetdrain cluster and uncordon cluster).

package fleetdrain

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

func getManagedCluster(ctx context.Context, d dynamic.Interface, name string) (*ocm.ManagedCluster, error) {
	u, err := d.Resource(ocm.ManagedClusterResource).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, exitcode.RefusedErrorf("ManagedCluster %q not found on this hub; nothing was changed (list them with `kubectl get managedclusters`)", name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading ManagedCluster %s: %w", name, err)
	}
	return api.FromUnstructured[ocm.ManagedCluster](u)
}

func drainTaintIndex(mc *ocm.ManagedCluster) int {
	for i, t := range mc.Spec.Taints {
		if t.Key == DrainTaintKey {
			return i
		}
	}
	return -1
}

// patchManagedCluster applies the ops that change returns for the current
// object, guarded by its resourceVersion, retrying on conflict. change
// returns no ops when there is nothing to do.
func patchManagedCluster(ctx context.Context, d dynamic.Interface, name string, dryRun cli.DryRun, change func(*ocm.ManagedCluster) []api.PatchOp) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc, err := getManagedCluster(ctx, d, name)
		if err != nil {
			return err
		}
		data, err := guardedPatch(mc.ResourceVersion, change(mc))
		if err != nil || data == nil {
			return err
		}
		_, err = d.Resource(ocm.ManagedClusterResource).Patch(ctx, name, types.JSONPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, DryRun: cli.DryRunOption(dryRun)})
		if err != nil {
			return fmt.Errorf("patching the taints of ManagedCluster %s: %w", name, err)
		}
		return nil
	})
}

// addDrainTaint appends the drain taint (timeAdded left to the hub), keeping
// every other taint as it is.
func addDrainTaint(ctx context.Context, d dynamic.Interface, name string, dryRun cli.DryRun) error {
	return patchManagedCluster(ctx, d, name, dryRun, func(mc *ocm.ManagedCluster) []api.PatchOp {
		if drainTaintIndex(mc) >= 0 {
			return nil
		}
		if len(mc.Spec.Taints) == 0 {
			return []api.PatchOp{{Op: "add", Path: "/spec/taints", Value: []ocm.Taint{DrainTaint()}}}
		}
		return []api.PatchOp{{Op: "add", Path: "/spec/taints/-", Value: DrainTaint()}}
	})
}

// removeDrainTaint removes the drain taint and nothing else; the test op
// makes sure the index still points at it.
func removeDrainTaint(ctx context.Context, d dynamic.Interface, name string, dryRun cli.DryRun) (removed bool, err error) {
	err = patchManagedCluster(ctx, d, name, dryRun, func(mc *ocm.ManagedCluster) []api.PatchOp {
		i := drainTaintIndex(mc)
		removed = i >= 0
		if !removed {
			return nil
		}
		path := fmt.Sprintf("/spec/taints/%d", i)
		return []api.PatchOp{{Op: "test", Path: path + "/key", Value: DrainTaintKey}, {Op: "remove", Path: path}}
	})
	return removed, err
}

// clusterTargets is what the two commands on ManagedClusters (cluster and
// uncordon cluster) take: the clusters, the dry run, the output and the
// hub's clients.
type clusterTargets struct {
	genericiooptions.IOStreams
	Output   *cli.Output
	Clusters []string
	DryRun   cli.DryRun
	f        *cli.Factory
	dynamic  dynamic.Interface
	access   authz.Client
}

func newClusterTargets(f *cli.Factory, streams genericiooptions.IOStreams) clusterTargets {
	return clusterTargets{IOStreams: streams, Output: cli.NewOutput(), f: f}
}

// Complete reads the dry-run strategy and the names.
func (o *clusterTargets) Complete(cmd *cobra.Command, args []string) error {
	var err error
	o.DryRun, err = cli.GetDryRun(cmd)
	o.Clusters = args
	return err
}

// connect builds the hub's clients, as Run starts.
func (o *clusterTargets) connect() error {
	var err error
	if o.dynamic, err = o.f.DynamicClient(); err != nil {
		return err
	}
	o.access, err = accessClient(o.f)
	return err
}

// Validate rejects bad input before any request.
func (o *clusterTargets) Validate() error {
	if err := cli.ValidateNames(cli.ClusterName, o.Clusters...); err != nil {
		return err
	}
	return o.Output.Validate()
}
