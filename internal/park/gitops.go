package park

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/capi"
)

// The marks Flux and Argo CD leave on what they apply; either one puts the
// replicas back as they are in Git, which un-parks a parked cluster (or
// parks a resumed one again) without a word.
var gitOpsMarks = []struct{ key, tool string }{
	{"kustomize.toolkit.fluxcd.io/name", "Flux Kustomization"},
	{"helm.toolkit.fluxcd.io/name", "Flux HelmRelease"},
	{"argocd.argoproj.io/tracking-id", "Argo CD Application"},
	{"argocd.argoproj.io/instance", "Argo CD Application"},
}

// ReplicasOwners names who, besides park, may set the worker pools'
// replicas again: a GitOps tool whose label or annotation is on the
// Cluster, and every other field manager that server-side applies a pool's
// replicas (a manager that applies keeps what it applied). Empty when none.
func ReplicasOwners(c *capi.Cluster) []string {
	var out []string
	for _, m := range gitOpsMarks {
		v, ok := c.Labels[m.key]
		if !ok {
			v, ok = c.Annotations[m.key]
		}
		if ok {
			out = append(out, fmt.Sprintf("%s %s (%s)", m.tool, v, m.key))
		}
	}
	for _, e := range c.ManagedFields {
		if e.Manager == FieldManager || e.Operation != metav1.ManagedFieldsOperationApply || e.FieldsV1 == nil {
			continue
		}
		if pools := appliedReplicas(e.FieldsV1.GetRawBytes()); len(pools) > 0 {
			out = append(out, fmt.Sprintf("field manager %s (applies the replicas of %s)", e.Manager, strings.Join(pools, ", ")))
		}
	}
	return out
}

// appliedReplicas lists the pools whose replicas a managedFields entry owns
// (the worker lists are keyed by name: k:{"name":"md-0"}).
func appliedReplicas(raw []byte) []string {
	var fields struct {
		Spec struct {
			Topology struct {
				Workers map[string]map[string]map[string]json.RawMessage `json:"f:workers"`
			} `json:"f:topology"`
		} `json:"f:spec"`
	}
	if json.Unmarshal(raw, &fields) != nil {
		return nil
	}
	var pools []string
	for _, list := range []string{"f:" + string(MachineDeployments), "f:" + string(MachinePools)} {
		for key, pool := range fields.Spec.Topology.Workers[list] {
			if _, ok := pool["f:replicas"]; !ok {
				continue
			}
			var name struct {
				Name string `json:"name"`
			}
			if json.Unmarshal([]byte(strings.TrimPrefix(key, "k:")), &name) != nil || name.Name == "" {
				name.Name = key
			}
			pools = append(pools, name.Name)
		}
	}
	slices.Sort(pools)
	return pools
}

// gitOpsWarning says what a GitOps owner of the replicas will do to a
// change park makes; "" when there is none.
func gitOpsWarning(owners []string, change string) string {
	if len(owners) == 0 {
		return ""
	}
	return fmt.Sprintf("Warning: the worker replicas of this cluster are also set by %s, which may set them back and %s; change them in its source (or suspend it) as well",
		strings.Join(owners, "; "), change)
}
