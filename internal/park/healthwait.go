// The last phase of resume --wait: the platform's health checks have
// checked the workers that came back.

package park

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
)

// HealthCheckPhase is how far the MachineHealthChecks that watch the
// resumed workers are: a health check counts a machine healthy only once
// it has checked it with its node, so right after the nodes are Ready it
// may still count 0 of them (make demo showed "nodes Ready: 6 of 6" and
// then status "0 of 3 machines healthy").
type HealthCheckPhase struct {
	// Pending names, per health check not done yet, what it counts.
	Pending []string
	done    bool
}

// healthCheckPhase is done when every health check whose selector picks
// any of the workers targets all the workers it picks and counts all its
// targets healthy. A health check of other machines (the control plane's)
// is not waited for: resume did not bring those back.
func healthCheckPhase(hcs []capi.MachineHealthCheck, workers []capi.Machine) HealthCheckPhase {
	var ph HealthCheckPhase
	for _, h := range hcs {
		sel, err := metav1.LabelSelectorAsSelector(&h.Spec.Selector)
		if err != nil {
			continue
		}
		var picked []string
		for _, m := range workers {
			if m.DeletionTimestamp == nil && sel.Matches(labels.Set(m.Labels)) {
				picked = append(picked, m.Name)
			}
		}
		if len(picked) == 0 {
			continue
		}
		checked := 0
		for _, m := range picked {
			if slices.Contains(h.Status.Targets, m) {
				checked++
			}
		}
		healthy, expected := deref(h.Status.CurrentHealthy), deref(h.Status.ExpectedMachines)
		if checked < len(picked) || healthy < expected {
			ph.Pending = append(ph.Pending, fmt.Sprintf("%s: %d of %d healthy", h.Name, healthy, max(int(expected), len(picked))))
		}
	}
	ph.done = len(ph.Pending) == 0
	return ph
}

func (ph HealthCheckPhase) String() string {
	if ph.done {
		return "the health checks count every worker healthy"
	}
	return "waiting for the health checks to count the workers healthy (" + strings.Join(ph.Pending, ", ") + ")"
}

// waitHealthChecked follows the cluster's MachineHealthChecks until
// healthCheckPhase is done, so that what resume --wait reports and what
// park status then shows agree.
func (o *ResumeOptions) waitHealthChecked(ctx context.Context, p *Platform, workers []capi.Machine, timeout time.Duration) error {
	lw := cli.ListWatch(p.resource(capi.MachineHealthCheckResource).Namespace(p.Namespace), "", "")
	return waitObjects(ctx, "health checks of "+o.Name, lw, timeout, o.progress, func(all []capi.MachineHealthCheck) (bool, string) {
		var hcs []capi.MachineHealthCheck
		for _, h := range all {
			if h.Spec.ClusterName == o.Name {
				hcs = append(hcs, h)
			}
		}
		ph := healthCheckPhase(hcs, workers)
		o.view.health = checkedPart{seen: true, done: ph.done, detail: ph.String()}
		return ph.done, ph.String()
	})
}
