// Requests to a workload cluster: bounded in time, their errors scrubbed.

package park

import (
	"context"
	"errors"
	"regexp"
	"time"
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
	return scrubbed(err).Error()
}

// userInfo is the user information of a URL in a message, where a
// kubeconfig may keep a token or a password (http://TOKEN@host,
// https://user:pass@host).
var userInfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s@"']+@`)

// scrubbed is err with the user information of every URL in its message
// replaced: errors from a workload cluster, or from reaching it, go through
// it before they are shown. (To be pointed at internal/cli's shared URL
// scrubber once it exists.) It keeps err's exit code: Unwrap gives err.
func scrubbed(err error) error {
	if err == nil {
		return nil
	}
	return scrubbedError{err}
}

type scrubbedError struct{ err error }

func (e scrubbedError) Error() string {
	return userInfo.ReplaceAllString(e.err.Error(), "${1}REDACTED@")
}

func (e scrubbedError) Unwrap() error { return e.err }
