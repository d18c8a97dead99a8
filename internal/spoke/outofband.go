package spoke

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// A cluster joined out of band has a ManagedCluster and no Spoke: someone
// ran `clusteradm join` on it (the way in when only the spoke can reach the
// hub), usually with `--klusterlet-annotation brush-ignore=true`. list and
// status show it; remove and force-remove refuse it, because deleting a
// Spoke is what unjoins a cluster and there is none.

// PhaseOutOfBand is what the PHASE column shows for such a cluster.
const PhaseOutOfBand = "OutOfBand"

// brushIgnored tells whether the ManagedCluster carries brush-ignore=true.
func brushIgnored(mc *ocm.ManagedCluster) bool {
	return strings.EqualFold(mc.Annotations[ocm.BrushIgnoreAnnotation], "true")
}

// OutOfBandRows are the rows of the ManagedClusters that none of spokes
// registers, in name order (pure).
func OutOfBandRows(spokes []fleetconfig.Spoke, clusters []ocm.ManagedCluster) []SpokeRow {
	registered := make(map[string]bool, len(spokes))
	for i := range spokes {
		registered[spokes[i].Name] = true
	}
	var rows []SpokeRow
	for i := range clusters {
		mc := &clusters[i]
		if registered[mc.Name] {
			continue
		}
		r := SpokeRow{ReportMeta: api.NewReportMeta("SpokeRow", mc.Name), Created: mc.CreationTimestamp, OutOfBand: true}
		r.setCluster(mc)
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b SpokeRow) int { return cmp.Compare(a.Metadata.Name, b.Metadata.Name) })
	return rows
}

// BuildOutOfBandStatus is the status report of a ManagedCluster no Spoke
// registers (pure). note says what could not be checked ("" when nothing).
func BuildOutOfBandStatus(mc *ocm.ManagedCluster, works []ocm.ManifestWork, note string) SpokeStatus {
	r := SpokeStatus{
		ReportMeta: api.NewReportMeta("SpokeStatus", mc.Name), OutOfBand: true, Deleting: mc.DeletionTimestamp != nil,
		Finalizers: mc.Finalizers, ManagedCluster: clusterReport(mc), Note: note,
	}
	r.setWorks(works)
	return r
}

// UnjoinSteps is how a cluster joined out of band leaves the fleet by hand.
func UnjoinSteps(name string) string {
	return strings.Join([]string{
		"  1. on the hub, while the cluster's agent still runs, move or delete the ManifestWorks that target it (kubectl get manifestworks -n " + name + "): the agent then removes what they applied",
		"  2. on the cluster, with its own kubeconfig: clusteradm unjoin --cluster-name " + name + " (removes the klusterlet and its agents; what was installed there by hand stays)",
		"  3. on the hub: kubectl delete managedcluster " + name + " (the hub then deletes the namespace " + name + " and what is left in it)",
		"  If the cluster is gone for good, skip step 2.",
	}, "\n")
}

// outOfBandRefusal refuses to remove a cluster joined out of band (pure).
func outOfBandRefusal(mc *ocm.ManagedCluster, namespace, note string) error {
	mark := ""
	if brushIgnored(mc) {
		mark = ", with brush-ignore=true"
	}
	msg := fmt.Sprintf("%s was joined out of band (clusteradm join%s): it has a ManagedCluster but no Spoke in namespace %s, and kubectl spoke removes only spokes it registered; nothing was changed. To take it out of the fleet by hand:\n%s",
		mc.Name, mark, namespace, UnjoinSteps(mc.Name))
	if note != "" {
		msg += "\n" + note
	}
	return exitcode.RefusedError(fmt.Errorf("%s", msg))
}

// outOfBandCluster reads the ManagedCluster called name, for a name that no
// Spoke of the release namespace has: nil when there is none either. A
// Spoke of that name in another namespace is an error that points there;
// note says when other namespaces could not be searched.
func (h *HubClient) outOfBandCluster(ctx context.Context, name string) (mc *ocm.ManagedCluster, note string, err error) {
	mc, err = h.ManagedCluster(ctx, name)
	if err != nil || mc == nil {
		return nil, "", err
	}
	namespaces, err := h.SpokeNamespaces(ctx, name)
	if err != nil {
		return mc, fmt.Sprintf("Spokes outside namespace %s could not be searched (%v): if one of them is %s, run this again with -n set to its namespace.", h.Namespace, err, name), nil
	}
	for _, ns := range namespaces {
		if ns != h.Namespace {
			return nil, "", fmt.Errorf("no spoke %s in namespace %s: the Spoke %s is in namespace %s; run this again with -n %s", name, h.Namespace, name, ns, ns)
		}
	}
	return mc, "", nil
}

// RefuseOutOfBand is what remove and force-remove do when the release
// namespace has no Spoke called name: refuse, with the steps to take the
// cluster out by hand, when a ManagedCluster of that name exists; nil
// when there is none either (the spoke is gone), or when it is being
// deleted (a removed Spoke can go before its ManagedCluster, and running
// remove again must still finish).
func (h *HubClient) RefuseOutOfBand(ctx context.Context, name string) error {
	mc, note, err := h.outOfBandCluster(ctx, name)
	switch {
	case err != nil:
		return exitcode.RefusedErrorf("%w; nothing was changed", err)
	case mc != nil && mc.DeletionTimestamp == nil:
		return outOfBandRefusal(mc, h.Namespace, note)
	}
	return nil
}
