package park

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/capi"
)

// resume --wait ends only when the health checks of the workers have
// checked them and count them healthy: what make demo's status showed right
// after the wait ("0 of 3 machines healthy") is the phase it now waits out.
func TestResumeWaitsForTheHealthChecksOfTheWorkers(t *testing.T) {
	pool := map[string]string{"cluster.x-k8s.io/deployment-name": "app-md-0-x7k"}
	worker := func(name string) capi.Machine {
		return capi.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: pool}}
	}
	workers := []capi.Machine{worker("app-md-0-x7k-a"), worker("app-md-0-x7k-b"), worker("app-md-0-x7k-c")}
	hc := func(name string, selector map[string]string, healthy, expected int32, targets ...string) capi.MachineHealthCheck {
		return capi.MachineHealthCheck{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       capi.MachineHealthCheckSpec{ClusterName: "app", Selector: metav1.LabelSelector{MatchLabels: selector}},
			Status:     capi.MachineHealthCheckStatus{CurrentHealthy: &healthy, ExpectedMachines: &expected, Targets: targets},
		}
	}
	// The control plane's health check is not waited for.
	controlPlane := hc("app-cp", map[string]string{capi.MachineControlPlaneLabel: ""}, 0, 1, "app-cp-0")

	// Not checked yet: the health check still counts the machines before
	// the park, or the new ones without their nodes.
	stale := healthCheckPhase([]capi.MachineHealthCheck{controlPlane, hc("app-md-0", pool, 3, 3, "old-a", "old-b", "old-c")}, workers)
	assert.Check(t, !stale.done)
	assert.Check(t, is.Equal(stale.String(), "waiting for the health checks to count the workers healthy (app-md-0: 3 of 3 healthy)"))
	unchecked := healthCheckPhase([]capi.MachineHealthCheck{hc("app-md-0", pool, 0, 3, "app-md-0-x7k-a", "app-md-0-x7k-b", "app-md-0-x7k-c")}, workers)
	assert.Check(t, !unchecked.done)
	assert.Check(t, is.Contains(unchecked.String(), "app-md-0: 0 of 3 healthy"))

	done := healthCheckPhase([]capi.MachineHealthCheck{controlPlane, hc("app-md-0", pool, 3, 3, "app-md-0-x7k-a", "app-md-0-x7k-b", "app-md-0-x7k-c")}, workers)
	assert.Check(t, done.done, done.String())
	// No health check of the workers: nothing to wait for.
	assert.Check(t, healthCheckPhase([]capi.MachineHealthCheck{controlPlane}, workers).done)
	assert.Check(t, healthCheckPhase(nil, workers).done)
}
