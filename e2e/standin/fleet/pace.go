package fleet

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// Pace is when the stand-in reconciles a Spoke again, as upstream's
// controller-runtime queue decides it. A change to the Spoke is always seen
// at once (a watch event). Otherwise:
//   - a reconcile that succeeded comes back after Requeue (upstream returns
//     RequeueAfter: 30s from every live Spoke's reconcile, errors included:
//     a failed join sets the Spoke Unhealthy and requeues);
//   - a deletion step that failed (a blocking ManifestWork, a failed unjoin)
//     comes back after the queue's exponential backoff, BackoffBase doubled
//     per failure in a row up to BackoffMax (controller-runtime's default
//     rate limiter: 5 ms to 1000 s), reset by a reconcile that succeeded;
//   - a deletion step that waits for the spoke's agent does not come back
//     until the Spoke changes;
//   - the hub's wait for the disabled add-ons' works polls every AddonPoll.
type Pace struct {
	Requeue     time.Duration
	BackoffBase time.Duration
	BackoffMax  time.Duration
	AddonPoll   time.Duration
}

// UpstreamPace is fleetconfig-controller's pace (requeue 30 s, add-on
// cleanup poll 2 s) on controller-runtime's default rate limiter.
func UpstreamPace() Pace {
	return Pace{Requeue: 30 * time.Second, BackoffBase: 5 * time.Millisecond, BackoffMax: 1000 * time.Second, AddonPoll: 2 * time.Second}
}

// FastScale is the suite's default: upstream's pace a hundred times faster
// (requeue 300 ms, backoff up to 10 s).
const FastScale = 0.01

// Scaled is the pace with every interval multiplied by f.
func (p Pace) Scaled(f float64) Pace {
	s := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	return Pace{Requeue: s(p.Requeue), BackoffBase: s(p.BackoffBase), BackoffMax: s(p.BackoffMax), AddonPoll: s(p.AddonPoll)}
}

// backoff is the wait after failures failed reconciles in a row.
func (p Pace) backoff(failures int) time.Duration {
	d := p.BackoffBase
	for i := 1; i < failures && d < p.BackoffMax; i++ {
		d *= 2
	}
	return min(d, p.BackoffMax)
}

// PaceFromEnv reads SPOKEKIT_E2E_FLEET_PACE: "upstream" (scale 1), a scale
// factor of upstream's pace ("0.1"), or unset for FastScale.
func PaceFromEnv() (Pace, error) {
	v := os.Getenv("SPOKEKIT_E2E_FLEET_PACE")
	switch v {
	case "":
		return UpstreamPace().Scaled(FastScale), nil
	case "upstream":
		return UpstreamPace(), nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 || f > 1 {
		return Pace{}, fmt.Errorf("SPOKEKIT_E2E_FLEET_PACE=%q: want \"upstream\" or a scale factor in (0, 1]", v)
	}
	return UpstreamPace().Scaled(f), nil
}
