// Requests to a workload cluster: bounded in time, their errors scrubbed.

package park

import (
	"context"
	"errors"
	"time"

	"github.com/spokekit/spokekit/internal/scrub"
)

// WorkloadRequestTimeout bounds one request to a workload cluster: a
// stalled API server there must not hold park status, or a --wait, past
// what the user asked for.
const WorkloadRequestTimeout = 20 * time.Second

// clusterContext bounds one request to the workload cluster: by the
// per-request timeout and by left, what the command's --timeout leaves (0:
// no limit of its own).
func (p *Platform) clusterContext(ctx context.Context, left time.Duration) (context.Context, context.CancelFunc) {
	timeout := p.WorkloadTimeout
	if timeout <= 0 {
		timeout = WorkloadRequestTimeout
	}
	if left > 0 && left < timeout {
		timeout = left
	}
	return context.WithTimeout(ctx, timeout)
}

// notChecked says why a part of the workload cluster's view was not read:
// "not checked: timed out" when the request ran out of time (the run's own
// end, Ctrl-C, is not a timeout), otherwise the error, scrubbed.
func notChecked(ctx context.Context, err error) string {
	if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return "not checked: timed out"
	}
	return scrub.URLs(err.Error())
}
