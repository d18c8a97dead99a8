package park

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/spokekit/spokekit/internal/api/capi"
)

// RecordAnnotation is the annotation on a parked Cluster that holds what its
// worker pools were before it was parked, so resume can bring back exactly
// that. It is written in the same patch that parks the pools.
const RecordAnnotation = "park.spokekit.io/record"

// PoolKind says which list of the topology a pool is in.
type PoolKind string

// The two kinds of worker pool of a topology.
const (
	MachineDeployments PoolKind = "machineDeployments"
	MachinePools       PoolKind = "machinePools"
)

// ParkRecord is the value of RecordAnnotation.
type ParkRecord struct {
	ParkedAt metav1.Time  `json:"parkedAt"`
	ParkedBy string       `json:"parkedBy"`
	Pools    []PoolRecord `json:"pools"`
}

// PoolRecord is one pool as it was before it was parked.
type PoolRecord struct {
	Kind PoolKind `json:"kind"`
	Name string   `json:"name"`
	// Replicas is nil when the pool left the count to the autoscaler.
	Replicas *int32 `json:"replicas,omitempty"`
	// Autoscaler holds the autoscaler min/max annotations lifted while parked.
	Autoscaler map[string]string `json:"autoscaler,omitempty"`
}

// Find returns the record of one pool.
func (r *ParkRecord) Find(kind PoolKind, name string) (PoolRecord, bool) {
	if r == nil {
		return PoolRecord{}, false
	}
	i := slices.IndexFunc(r.Pools, func(p PoolRecord) bool { return p.Kind == kind && p.Name == name })
	if i < 0 {
		return PoolRecord{}, false
	}
	return r.Pools[i], true
}

// Encode returns the annotation value.
func (r ParkRecord) Encode() (string, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encoding the park record: %w", err)
	}
	return string(data), nil
}

// ParseRecord reads the annotation value. Anyone who may edit the Cluster
// may edit it, so it is checked before resume trusts it.
func ParseRecord(s string) (*ParkRecord, error) {
	var r ParkRecord
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("annotation %s is not a park record: %w", RecordAnnotation, err)
	}
	if len(r.Pools) == 0 {
		return nil, fmt.Errorf("annotation %s records no pools", RecordAnnotation)
	}
	type poolKey struct {
		kind PoolKind
		name string
	}
	seen := map[poolKey]bool{}
	for _, p := range r.Pools {
		if err := p.validate(); err != nil {
			return nil, fmt.Errorf("annotation %s: %w", RecordAnnotation, err)
		}
		key := poolKey{p.Kind, p.Name}
		if seen[key] {
			return nil, fmt.Errorf("annotation %s records pool %s/%s twice", RecordAnnotation, p.Kind, p.Name)
		}
		seen[key] = true
	}
	return &r, nil
}

func (p PoolRecord) validate() error {
	if p.Kind != MachineDeployments && p.Kind != MachinePools {
		return fmt.Errorf("pool %q: unknown kind %q", p.Name, p.Kind)
	}
	if msgs := validation.IsDNS1123Subdomain(p.Name); p.Name == "" || len(msgs) > 0 {
		return fmt.Errorf("pool name %q is not valid", p.Name)
	}
	if p.Replicas != nil && (*p.Replicas < 0 || *p.Replicas > MaxPoolReplicas) {
		return fmt.Errorf("pool %q: replicas %d is not between 0 and %d", p.Name, *p.Replicas, MaxPoolReplicas)
	}
	bounds := map[string]int{}
	for k, v := range p.Autoscaler {
		if k != capi.AutoscalerMinSizeAnnotation && k != capi.AutoscalerMaxSizeAnnotation {
			return fmt.Errorf("pool %q: %q is not an autoscaler annotation", p.Name, k)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxPoolReplicas {
			return fmt.Errorf("pool %q: autoscaler %s %q is not a whole number between 0 and %d", p.Name, k, truncate(v), MaxPoolReplicas)
		}
		bounds[k] = n
	}
	minSize, hasMin := bounds[capi.AutoscalerMinSizeAnnotation]
	maxSize, hasMax := bounds[capi.AutoscalerMaxSizeAnnotation]
	if hasMin && hasMax && minSize > maxSize {
		return fmt.Errorf("pool %q: autoscaler min %d is above its max %d", p.Name, minSize, maxSize)
	}
	return nil
}

// MaxPoolReplicas bounds the count resume gives one pool, from a record or
// --replicas: the record is only as trustworthy as whoever last edited the
// Cluster, and a count above this is a typo or a forgery, not a parked pool.
const MaxPoolReplicas = 1000

func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}
