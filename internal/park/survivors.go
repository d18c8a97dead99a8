package park

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/scrub"
)

// Survivors is what parking kept and what it removed.
type Survivors struct {
	// ControlPlanePods keep running on the platform.
	ControlPlanePods []string `json:"controlPlanePods"`
	// Workloads counts the Deployments and StatefulSets still in the cluster.
	Workloads int `json:"workloads"`
	// WorkloadsUncounted says why Workloads is not the whole count.
	WorkloadsUncounted string `json:"workloadsUncounted,omitempty"`
	// PersistentVolumeClaims keep their volumes, and the storage quota they use.
	PersistentVolumeClaims []ClaimSummary `json:"persistentVolumeClaims"`
	Storage                string         `json:"storage"`
	// Unread says why the cluster's own objects could not be read.
	Unread string `json:"clusterView,omitempty"`
	// RemovedMachines are the worker machines that went.
	RemovedMachines []string `json:"removedMachines"`
}

// ClaimSummary is one PersistentVolumeClaim of the cluster.
type ClaimSummary struct {
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	Phase        string `json:"phase"`
	Storage      string `json:"storage"`
	StorageClass string `json:"storageClass,omitempty"`
}

// summarizeClaims lists the claims and adds up the storage they hold: the
// bound capacity, or the request while not bound.
func summarizeClaims(pvcs []corev1.PersistentVolumeClaim) ([]ClaimSummary, string) {
	total := resource.Quantity{}
	out := []ClaimSummary{}
	for _, c := range pvcs {
		q, ok := c.Status.Capacity[corev1.ResourceStorage]
		if !ok {
			q = c.Spec.Resources.Requests[corev1.ResourceStorage]
		}
		total.Add(q)
		s := ClaimSummary{Namespace: c.Namespace, Name: c.Name, Phase: string(c.Status.Phase), Storage: q.String()}
		if c.Spec.StorageClassName != nil {
			s.StorageClass = *c.Spec.StorageClassName
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name
	})
	return out, total.String()
}

// survivors reads what parking kept; its reads of the workload cluster
// share what is left of --timeout (left; 0: no limit), each also bounded
// on its own (clusterContext).
func (o *ParkOptions) survivors(ctx context.Context, p *Platform, before []capi.Machine, left time.Duration) *Survivors {
	s := &Survivors{ControlPlanePods: []string{}, PersistentVolumeClaims: []ClaimSummary{}, Storage: "0", RemovedMachines: []string{}}
	for _, m := range before {
		if isWorker(m.OwnerReferences) {
			s.RemovedMachines = append(s.RemovedMachines, m.Name)
		}
	}
	sort.Strings(s.RemovedMachines)
	c, err := p.Cluster(ctx, o.Name)
	var pods []corev1.Pod
	if err == nil {
		pods, err = p.ControlPlanePods(ctx, c)
	}
	if err == nil {
		for _, pod := range pods {
			s.ControlPlanePods = append(s.ControlPlanePods, pod.Name+" ("+string(pod.Status.Phase)+")")
		}
	}
	kube, source, err := p.ClusterClient(ctx, o.Name, o.ClusterKubeconfig)
	if err != nil {
		s.Unread = scrub.Error(err).Error()
		return s
	}
	rctx, cancel := p.clusterContext(ctx, left)
	defer cancel()
	pvcs, err := kube.CoreV1().PersistentVolumeClaims("").List(rctx, metav1.ListOptions{})
	if err != nil {
		s.Unread = fmt.Sprintf("listing PersistentVolumeClaims with the kubeconfig from %s: %s", source, notChecked(ctx, err))
		return s
	}
	s.PersistentVolumeClaims, s.Storage = summarizeClaims(pvcs.Items)
	var uncounted []string
	if d, err := kube.AppsV1().Deployments("").List(rctx, metav1.ListOptions{}); err == nil {
		s.Workloads += len(d.Items)
	} else {
		uncounted = append(uncounted, "Deployments: "+notChecked(ctx, err))
	}
	if st, err := kube.AppsV1().StatefulSets("").List(rctx, metav1.ListOptions{}); err == nil {
		s.Workloads += len(st.Items)
	} else {
		uncounted = append(uncounted, "StatefulSets: "+notChecked(ctx, err))
	}
	// A list that failed is said, never counted as none.
	s.WorkloadsUncounted = strings.Join(uncounted, "; ")
	return s
}

func (s *Survivors) write(w io.Writer) {
	fmt.Fprintln(w, "\nSurvives:")
	fmt.Fprintf(w, "  control plane: %d pod(s) on the platform %s\n", len(s.ControlPlanePods), list0(s.ControlPlanePods))
	if s.Unread != "" {
		fmt.Fprintf(w, "  the cluster's own objects could not be read: %s\n", s.Unread)
	} else {
		fmt.Fprintf(w, "  every API object: %d Deployment(s)/StatefulSet(s) kept, at zero available replicas until resume\n", s.Workloads)
		if s.WorkloadsUncounted != "" {
			fmt.Fprintf(w, "    (not counted: %s)\n", s.WorkloadsUncounted)
		}
		fmt.Fprintf(w, "  %d PersistentVolumeClaim(s) and their volumes, %s of storage still held and counted against quota\n", len(s.PersistentVolumeClaims), s.Storage)
		for _, c := range s.PersistentVolumeClaims {
			fmt.Fprintf(w, "    %s/%s %s %s\n", c.Namespace, c.Name, c.Storage, c.Phase)
		}
	}
	fmt.Fprintln(w, "Goes:")
	fmt.Fprintf(w, "  %d worker machine(s) %s and the capacity they used\n", len(s.RemovedMachines), list0(s.RemovedMachines))
}

func list0(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "(" + strings.Join(names, ", ") + ")"
}

// machinePhases reads as "2 Running, 1 Deleting".
func machinePhases(ms []capi.Machine) string {
	counts := map[string]int{}
	for _, m := range ms {
		phase := m.Status.Phase
		if m.DeletionTimestamp != nil {
			phase = capi.MachinePhaseDeleting
		}
		if phase == "" {
			phase = capi.MachinePhasePending
		}
		counts[phase]++
	}
	var parts []string
	for _, ph := range sortedPhases(counts) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[ph], ph))
	}
	return strings.Join(parts, ", ")
}

func sortedPhases(counts map[string]int) []string {
	var out []string
	for k := range counts {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
