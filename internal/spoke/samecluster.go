package spoke

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
)

// proveSameCluster shows that the cluster the new kubeconfig kc reaches
// (identity id) is the one Spoke s registers, and says on what grounds.
// The stored kubeconfig decides when it can be read. When it cannot (in
// addon mode the secret is purged once the agent took over), the only other
// record on the hub is the id.k8s.io claim the spoke's agent reported into
// its ManagedCluster, compared with the new cluster's own ClusterClaim. With
// neither, or when anything cannot be read, it refuses (exit 3): a
// credential never goes under a Spoke it could not be tied to.
func (h *HubClient) proveSameCluster(ctx context.Context, s *fleetconfig.Spoke, kc *kubeconfig.Kubeconfig, id kubeconfig.Identity) (string, error) {
	old, _, err := h.StoredKubeconfig(ctx, s)
	var status apierrors.APIStatus
	switch {
	case err == nil:
		same, by := reachOrOffline(ctx, old).SameAs(id)
		if !same {
			return "", exitcode.RefusedErrorf("spoke %s already exists for another cluster (different %s); nothing was changed: pick another name", s.Name, by)
		}
		return by, nil
	case errors.As(err, &status):
		return "", exitcode.RefusedErrorf("cannot tell whether spoke %s is this cluster: %w; nothing was changed", s.Name, err)
	}
	// The stored kubeconfig is gone or unusable: it proves nothing.
	why := fmt.Sprintf("its stored kubeconfig cannot be compared (%v)", err)
	if errors.Is(err, errNoSecret) {
		why = fmt.Sprintf("its kubeconfig secret %s is gone (in addon mode cleanupConfig.purgeKubeconfigSecret deletes it once the agent took over)", s.Spec.Kubeconfig.SecretReference.Name)
	}
	mc, err := h.ManagedCluster(ctx, s.Name)
	if err != nil {
		return "", exitcode.RefusedErrorf("cannot tell whether spoke %s is this cluster: %s, and %w; nothing was changed", s.Name, why, err)
	}
	want := ""
	if mc != nil {
		want = mc.Claim(ocm.ClusterIDClaim)
	}
	if want == "" {
		return "", exitcode.RefusedErrorf("spoke %s already exists and nothing on the hub shows it is the cluster %s reaches: %s, and its ManagedCluster reports no %s cluster claim; nothing was changed: pick another name, or create the ClusterClaim %s on that spoke cluster (its agent reports it to the hub) and run this again",
			s.Name, kc.Server, why, ocm.ClusterIDClaim, ocm.ClusterIDClaim)
	}
	got, err := clusterIDClaim(ctx, kc)
	if err != nil {
		return "", exitcode.RefusedErrorf("cannot tell whether spoke %s is the cluster %s reaches: %s, and that cluster's %s ClusterClaim cannot be read: %w; nothing was changed", s.Name, kc.Server, why, ocm.ClusterIDClaim, err)
	}
	if got != want {
		return "", exitcode.RefusedErrorf("spoke %s already exists for another cluster (its ManagedCluster's %s claim differs from the one of the cluster %s reaches); nothing was changed: pick another name", s.Name, ocm.ClusterIDClaim, kc.Server)
	}
	return "cluster claim " + ocm.ClusterIDClaim, nil
}

// clusterIDClaim reads the value of the cluster's id.k8s.io ClusterClaim.
func clusterIDClaim(ctx context.Context, kc *kubeconfig.Kubeconfig) (string, error) {
	cfg, err := kc.RESTConfig()
	if err != nil {
		return "", err
	}
	cfg.Timeout = kubeconfig.ReachTimeout
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	u, err := dyn.Resource(ocm.ClusterClaimResource).Get(ctx, ocm.ClusterIDClaim, metav1.GetOptions{})
	var status apierrors.APIStatus
	switch {
	case apierrors.IsNotFound(err):
		return "", errors.New("there is none")
	case errors.As(err, &status):
		return "", err
	case err != nil:
		// Not the transport's own text: it may quote the server URL with
		// its credentials.
		return "", errors.New("its API server did not answer")
	}
	v, _, _ := unstructured.NestedString(u.Object, "spec", "value")
	if v == "" {
		return "", errors.New("it has no value")
	}
	return v, nil
}
