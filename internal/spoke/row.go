package spoke

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
)

// SpokeRow is one spoke as list and get show it: the Spoke joined with its
// ManagedCluster.
type SpokeRow struct {
	api.ReportMeta `json:",inline"`
	Phase          string                    `json:"phase"`
	Joined         string                    `json:"joined"`
	Available      string                    `json:"available"`
	Created        metav1.Time               `json:"created"`
	Hub            string                    `json:"hub"`
	Secret         string                    `json:"kubeconfigSecret,omitempty"`
	Taints         []string                  `json:"taints,omitempty"`
	Cleanup        fleetconfig.CleanupConfig `json:"cleanupConfig"`
	// ManagedCluster says whether the hub has a ManagedCluster for the spoke.
	ManagedCluster bool `json:"managedCluster"`
	// OutOfBand marks a ManagedCluster that no Spoke registers: it was
	// joined by hand (clusteradm join), and kubectl spoke does not manage it.
	OutOfBand bool `json:"outOfBand,omitempty"`
	// BrushIgnore: the ManagedCluster says PaletteAI installs nothing there.
	BrushIgnore bool `json:"brushIgnore,omitempty"`
}

// SpokeList is what list and get print.
type SpokeList struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Items      []SpokeRow `json:"items"`
	// allNamespaces (-A) leads the table with each row's namespace.
	allNamespaces bool
}

// BuildRows joins Spokes and ManagedClusters by name, in name order.
func BuildRows(spokes []fleetconfig.Spoke, clusters []ocm.ManagedCluster) []SpokeRow {
	byName := make(map[string]*ocm.ManagedCluster, len(clusters))
	for i := range clusters {
		byName[clusters[i].Name] = &clusters[i]
	}
	rows := make([]SpokeRow, 0, len(spokes))
	for i := range spokes {
		s := &spokes[i]
		r := SpokeRow{
			ReportMeta: api.NewNamespacedReportMeta("SpokeRow", s.Namespace, s.Name),
			Phase:      s.Status.Phase,
			Joined:     "Unknown",
			Available:  "Unknown",
			Created:    s.CreationTimestamp,
			Hub:        s.Spec.HubRef.Namespace + "/" + s.Spec.HubRef.Name,
			Cleanup:    s.Spec.CleanupConfig,
		}
		if s.Spec.Kubeconfig.SecretReference != nil {
			r.Secret = s.Spec.Kubeconfig.SecretReference.Name
		}
		if mc := byName[s.Name]; mc != nil {
			r.setCluster(mc)
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b SpokeRow) int {
		return cmp.Or(strings.Compare(a.Metadata.Namespace, b.Metadata.Namespace), strings.Compare(a.Metadata.Name, b.Metadata.Name))
	})
	return rows
}

// setCluster fills in what the row shows of its ManagedCluster.
func (r *SpokeRow) setCluster(mc *ocm.ManagedCluster) {
	r.ManagedCluster = true
	r.Joined = conditionStatus(mc.Status.Conditions, ocm.ManagedClusterConditionJoined)
	r.Available = conditionStatus(mc.Status.Conditions, ocm.ManagedClusterConditionAvailable)
	r.Taints = taintStrings(mc.Spec.Taints)
	r.BrushIgnore = brushIgnored(mc)
}

func taintStrings(taints []ocm.Taint) []string {
	var out []string
	for _, t := range taints {
		out = append(out, t.Key+":"+t.Effect)
	}
	return out
}

func conditionStatus(conds []metav1.Condition, t string) string {
	for _, c := range conds {
		if c.Type == t {
			return string(c.Status)
		}
	}
	return "Unknown"
}

// Table is the human view of the rows at time now.
func (l SpokeList) Table(now time.Time) cli.Table {
	t := cli.Table{Columns: []cli.Column{
		{Name: "NAME"},
		{Name: "PHASE"},
		{Name: "JOINED"},
		{Name: "AVAILABLE"},
		{Name: "AGE"},
		{Name: "HUB", Wide: true},
		{Name: "KUBECONFIG SECRET", Wide: true},
		{Name: "TAINTS", Wide: true},
		{Name: "CLEANUP", Wide: true},
	}}
	if l.allNamespaces {
		t.Columns = append([]cli.Column{{Name: "NAMESPACE"}}, t.Columns...)
	}
	for _, r := range l.Items {
		phase, joined, avail := r.Phase, r.Joined, r.Available
		if !r.ManagedCluster {
			joined, avail = "-", "-"
		}
		if r.OutOfBand {
			phase = PhaseOutOfBand
		}
		row := []string{
			r.Metadata.Name, phase, joined, avail, age(r.Created, now),
			r.Hub, r.Secret, strings.Join(r.Taints, ","), cleanupWords(r.Cleanup),
		}
		if l.allNamespaces {
			row = append([]string{r.Metadata.Namespace}, row...)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// cleanupWords lists the cleanup settings that are on.
func cleanupWords(c fleetconfig.CleanupConfig) string {
	var on []string
	for _, s := range []struct {
		on   bool
		name string
	}{
		{c.PurgeKlusterletOperator, "purgeKlusterletOperator"},
		{c.PurgeAgentNamespace, "purgeAgentNamespace"},
		{c.PurgeKubeconfigSecret, "purgeKubeconfigSecret"},
		{c.ForceClusterDrain, "forceClusterDrain"},
	} {
		if s.on {
			on = append(on, s.name)
		}
	}
	return strings.Join(on, ",")
}

// selectRows keeps the rows named in names (all when names is empty) and
// names those it did not find.
func selectRows(rows []SpokeRow, names []string) ([]SpokeRow, error) {
	if len(names) == 0 {
		return rows, nil
	}
	var out []SpokeRow
	var missing []string
	for _, n := range names {
		i := slices.IndexFunc(rows, func(r SpokeRow) bool { return r.Metadata.Name == n })
		if i < 0 {
			missing = append(missing, n)
			continue
		}
		out = append(out, rows[i])
	}
	if len(missing) > 0 {
		return out, fmt.Errorf("spoke(s) not found: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// Subjects are the listed Spokes, and the ManagedClusters of those joined
// out of band, for -o name.
func (l SpokeList) Subjects() []string {
	names := make([]string, 0, len(l.Items))
	for _, r := range l.Items {
		names = append(names, subject(r.Metadata.Name, r.OutOfBand))
	}
	return names
}

// subject is the object a spoke report is about: its Spoke, or the
// ManagedCluster of a cluster joined out of band, which has none.
func subject(name string, outOfBand bool) string {
	if outOfBand {
		return api.ObjectName(ocm.ManagedClusterKind, name)
	}
	return api.ObjectName(fleetconfig.SpokeKind, name)
}
