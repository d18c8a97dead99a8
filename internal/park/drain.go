package park

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/spokekit/spokekit/internal/api/capi"
)

// Cluster API drains a Machine's Node before it deletes the Machine, and
// reports on the Machine's Deleting condition which pods it could not evict
// and why; for a PodDisruptionBudget the reason carries the API server's own
// words, naming the budget.
var (
	pdbLine   = regexp.MustCompile(`(?m)^\s*\* Pods? (.+?): cannot evict pod as it would violate the pod's disruption budget\.(.*)$`)
	pdbBudget = regexp.MustCompile(`The disruption budget (\S+) needs`)
)

// DrainBlock is a Machine whose Node drain waits on PodDisruptionBudgets.
type DrainBlock struct {
	Machine string `json:"machine"`
	// Budgets are namespace/name of the budgets that refused an eviction.
	Budgets []string `json:"budgets"`
	// Pods are the pods that could not be evicted (Cluster API names at
	// most three and says how many more).
	Pods []string `json:"pods"`
}

// String reads as "machine m waits on PodDisruptionBudget ns/b (pod ns/p)".
func (b DrainBlock) String() string {
	budgets := "a PodDisruptionBudget"
	if len(b.Budgets) > 0 {
		budgets = "PodDisruptionBudget " + strings.Join(b.Budgets, ", ")
	}
	return fmt.Sprintf("machine %s waits on %s (pod %s)", b.Machine, budgets, strings.Join(b.Pods, ", "))
}

// drainBlocks lists the deleting Machines whose drain a PodDisruptionBudget
// holds up, sorted by machine.
func drainBlocks(ms []capi.Machine) []DrainBlock {
	var out []DrainBlock
	for _, m := range ms {
		c := m.Status.Condition(capi.MachineDeletingCondition)
		if m.DeletionTimestamp == nil || c == nil || c.Reason != capi.MachineDrainingNodeReason {
			continue
		}
		b := DrainBlock{Machine: m.Name}
		for _, line := range pdbLine.FindAllStringSubmatch(c.Message, -1) {
			pods := strings.Split(line[1], ", ")
			b.Pods = append(b.Pods, pods...)
			// A budget selects pods of its own namespace.
			ns := ""
			if i := strings.Index(pods[0], "/"); i > 0 {
				ns = pods[0][:i+1]
			}
			for _, budget := range pdbBudget.FindAllStringSubmatch(line[2], -1) {
				b.Budgets = appendNew(b.Budgets, ns+budget[1])
			}
		}
		if len(b.Pods) > 0 {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Machine < out[j].Machine })
	return out
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
