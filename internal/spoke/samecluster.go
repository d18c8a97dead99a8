package spoke

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
)

// proveSameCluster shows that the cluster the new kubeconfig kc reaches
// (identity id) is the one Spoke s registers, and says on what grounds.
// The stored kubeconfig decides when it can be read. When it cannot (in
// addon mode the secret is purged once the agent took over), the only
// other record is the kube-system namespace UID kubectl spoke recorded on
// the Spoke when it stored a kubeconfig (see Record), compared with the
// new cluster's. With neither, or when anything cannot be read, it refuses
// (exit 3): a credential never goes under a Spoke it could not be tied to.
//
// What the recorded UID does not prove: whoever may patch Spokes may also
// rewrite the record, so it shows only that the new kubeconfig reaches the
// cluster recorded, not that the record is the one kubectl spoke wrote;
// and a cluster restored from a backup of another's etcd shares its UID.
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
	rec, err := readRecord(s)
	if err != nil {
		return "", exitcode.RefusedErrorf("cannot tell whether spoke %s is the cluster %s reaches: %s, and %w; nothing was changed", s.Name, kc.Server, why, err)
	}
	if rec.ClusterUID == "" {
		return "", exitcode.RefusedErrorf("spoke %s already exists and nothing on the hub shows it is the cluster %s reaches: %s, and kubectl spoke recorded no kube-system UID on it (annotation %s); nothing was changed: pick another name, or remove the spoke and add it again",
			s.Name, kc.Server, why, RecordClusterUIDAnnotation)
	}
	if rec.ClusterUID != id.UID {
		return "", exitcode.RefusedErrorf("spoke %s already exists for another cluster (the kube-system UID recorded on it differs from the one of the cluster %s reaches); nothing was changed: pick another name", s.Name, kc.Server)
	}
	return "kube-system namespace UID recorded on the Spoke", nil
}

// refuseKnownCluster refuses adding the cluster id under name when another
// Spoke of the hub records the same kube-system UID: a second join would
// register the one klusterlet again under the new name, and the first
// spoke would go dark. Only the records on the Spokes are read, never
// their Secrets.
func (h *HubClient) refuseKnownCluster(ctx context.Context, name string, id kubeconfig.Identity) error {
	spokes, err := h.listedSpokes(ctx, "", "")
	if err != nil {
		return exitcode.RefusedErrorf("cannot tell whether the hub has this cluster under another name: %w; nothing was changed", err)
	}
	for i := range spokes {
		s := &spokes[i]
		if s.Name == name && s.Namespace == h.Namespace {
			continue
		}
		if rec, err := readRecord(s); err == nil && rec.ClusterUID != "" && rec.ClusterUID == id.UID {
			return exitcode.RefusedErrorf("the hub already has this cluster as spoke %s/%s (the kube-system UID recorded on it is this cluster's); nothing was changed: a second join would register its one klusterlet again under the new name, and %s would go dark. Use %s, or remove it first (kubectl spoke remove %s -n %s)",
				s.Namespace, s.Name, s.Name, s.Name, s.Name, s.Namespace)
		}
	}
	return nil
}

// reachOrOffline is the identity of the cluster a kubeconfig reaches: asked
// of the cluster when it answers, else from its URL and CA.
func reachOrOffline(ctx context.Context, kc *kubeconfig.Kubeconfig) kubeconfig.Identity {
	id, err := kc.Reach(ctx)
	if err != nil {
		return kc.OfflineIdentity()
	}
	return id
}
