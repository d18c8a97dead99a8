package park

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// pool is a worker pool of the topology with its place in the list.
type pool struct {
	Kind  PoolKind
	Index int
	capi.WorkerPool
}

func (p pool) path() string { return poolPath(p.Kind, p.Index) }

// state is what the pool says now.
func (p pool) state() PoolState {
	return PoolState{Replicas: p.Replicas, Autoscaler: autoscalerAnnotations(p.Metadata.Annotations)}
}

// PoolState is a pool's count: replicas, or the autoscaler's bounds.
type PoolState struct {
	// Replicas nil means the count is left to the autoscaler.
	Replicas   *int32            `json:"replicas,omitempty"`
	Autoscaler map[string]string `json:"autoscaler,omitempty"`
}

func (s PoolState) equal(o PoolState) bool {
	sameReplicas := (s.Replicas == nil) == (o.Replicas == nil) && (s.Replicas == nil || *s.Replicas == *o.Replicas)
	return sameReplicas && maps.Equal(s.Autoscaler, o.Autoscaler)
}

// parked tells whether the pool is at zero machines and stays there.
func (s PoolState) parked() bool {
	return s.Replicas != nil && *s.Replicas == 0 && len(s.Autoscaler) == 0
}

// PoolChange is what a plan does to one pool.
type PoolChange struct {
	Kind PoolKind  `json:"kind"`
	Name string    `json:"name"`
	From PoolState `json:"from"`
	To   PoolState `json:"to"`
}

// workerPools lists every pool of the topology, machineDeployments first.
// A cluster without a topology or without worker pools has nothing to park.
func workerPools(c *capi.Cluster) ([]pool, error) {
	t := c.Spec.Topology
	if t == nil {
		return nil, exitcode.RefusedErrorf("cluster %s/%s has no spec.topology: its workers are not managed through a ClusterClass topology, so there are no topology worker pools to scale; nothing was changed", c.Namespace, c.Name)
	}
	var pools []pool
	if t.Workers != nil {
		for i, w := range t.Workers.MachineDeployments {
			pools = append(pools, pool{Kind: MachineDeployments, Index: i, WorkerPool: w})
		}
		for i, w := range t.Workers.MachinePools {
			pools = append(pools, pool{Kind: MachinePools, Index: i, WorkerPool: w})
		}
	}
	if len(pools) == 0 {
		return nil, exitcode.RefusedErrorf("cluster %s/%s has no worker pools in spec.topology.workers; nothing was changed", c.Namespace, c.Name)
	}
	return pools, nil
}

func autoscalerAnnotations(annotations map[string]string) map[string]string {
	var out map[string]string
	for _, k := range []string{capi.AutoscalerMinSizeAnnotation, capi.AutoscalerMaxSizeAnnotation} {
		if v, ok := annotations[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// existingRecord returns the cluster's park record and its raw value, or nil.
func existingRecord(c *capi.Cluster) (*ParkRecord, string, error) {
	raw, ok := c.Annotations[RecordAnnotation]
	if !ok {
		return nil, "", nil
	}
	r, err := ParseRecord(raw)
	return r, raw, err
}

func int32Ptr(n int32) *int32 { return &n }

// changesTable is the table of the pools a park or a resume changes.
func changesTable(changes []PoolChange) cli.Table {
	t := cli.Table{Columns: []cli.Column{{Name: "POOL"}, {Name: "KIND"}, {Name: "FROM"}, {Name: "TO"}}}
	for _, c := range changes {
		t.Rows = append(t.Rows, []string{c.Name, string(c.Kind), c.From.String(), c.To.String()})
	}
	return t
}

// String reads as "3 replicas" or "autoscaler 1..5".
func (s PoolState) String() string {
	var parts []string
	if s.Replicas != nil {
		parts = append(parts, fmt.Sprintf("%d replicas", *s.Replicas))
	}
	if len(s.Autoscaler) > 0 {
		parts = append(parts, fmt.Sprintf("autoscaler %s..%s", orDash(s.Autoscaler[capi.AutoscalerMinSizeAnnotation]), orDash(s.Autoscaler[capi.AutoscalerMaxSizeAnnotation])))
	}
	if len(parts) == 0 {
		return "replicas unset"
	}
	return strings.Join(parts, ", ")
}
