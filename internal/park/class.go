package park

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// clusterClass reads the topology's ClusterClass, which refuseClassAutoscaled
// checks. One that cannot be read (not allowed, or not found) is a refusal
// (exit 3): the check would otherwise never run, and a half-parked cluster
// is what it prevents.
func (p *Platform) clusterClass(ctx context.Context, c *capi.Cluster) (*capi.ClusterClass, error) {
	if c.Spec.Topology == nil {
		return nil, nil
	}
	ns, name := c.Spec.Topology.ClassName(c.Namespace)
	u, err := p.resource(capi.ClusterClassResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsForbidden(err) {
		return nil, exitcode.RefusedErrorf("the current user may not get clusterclasses.%s %s in namespace %s, so park cannot check whether the class keeps a pool of cluster %s from going to zero; nothing was changed: bind spokekit-park of %s there too:\n  %s",
			capi.Group, name, ns, c.Name, RBACManifest, cli.NamespaceBinding("spokekit-park", ns, cli.UserName(ctx, p.Kube.AuthenticationV1())))
	}
	if apierrors.IsNotFound(err) {
		return nil, exitcode.RefusedErrorf("the ClusterClass %s/%s of cluster %s does not exist, so park cannot check whether it keeps a pool from going to zero; nothing was changed", ns, name, c.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading ClusterClass %s/%s of cluster %s: %w", ns, name, c.Name, err)
	}
	return capi.FromUnstructured[capi.ClusterClass](u)
}

// refuseClassAutoscaled refuses to park a cluster with a machineDeployment
// pool whose class in the ClusterClass carries the autoscaler annotations:
// Cluster API's webhook refuses any replicas for such a pool, so it cannot
// be set to zero through the topology, and parking the other pools alone
// would leave the cluster half parked.
func refuseClassAutoscaled(c *capi.Cluster, class *capi.ClusterClass) error {
	if class == nil || c.Spec.Topology == nil || c.Spec.Topology.Workers == nil {
		return nil
	}
	autoscaled := map[string]bool{}
	for _, w := range class.Spec.Workers.MachineDeployments {
		if len(autoscalerAnnotations(w.Annotations())) > 0 {
			autoscaled[w.Class] = true
		}
	}
	var pools []string
	for _, p := range c.Spec.Topology.Workers.MachineDeployments {
		if autoscaled[p.Class] {
			pools = append(pools, fmt.Sprintf("%s (class %s)", p.Name, p.Class))
		}
	}
	if len(pools) == 0 {
		return nil
	}
	sort.Strings(pools)
	return exitcode.RefusedErrorf("cluster %s/%s cannot be parked: the ClusterClass %s gives pool(s) %s the cluster autoscaler's min/max annotations, and Cluster API refuses replicas for a pool whose class carries them, so the pool cannot be set to 0 through the topology; nothing was changed. Move the autoscaler annotations from the ClusterClass to the cluster's topology (spec.topology.workers.machineDeployments[].metadata.annotations), where park lifts them while parked and resume puts them back",
		c.Namespace, c.Name, class.Name, strings.Join(pools, ", "))
}
