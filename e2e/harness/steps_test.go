package harness

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// A command with a --timeout of its own runs past it before the harness
// stops it: a CI run's bulk resume with --timeout 3m was killed at the
// harness's 5 minutes while its third cluster still waited, and the test
// saw "context deadline exceeded" instead of exit 4.
func TestStepBoundOutlastsTheCommandsOwnTimeout(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{[]string{"park", "status", "app"}, StepTimeout},
		{[]string{"park", "resume", "--wait", "--timeout", "3m", "-l", "x=y"}, 3*time.Minute + StepTimeout},
		{[]string{"spoke", "add", "--timeout=10m"}, 10*time.Minute + StepTimeout},
		{[]string{"park", "cluster", "--timeout", "1ms"}, time.Millisecond + StepTimeout},
		// No limit, a bad value or a missing one: the default bound.
		{[]string{"park", "cluster", "--timeout", "0"}, StepTimeout},
		{[]string{"park", "cluster", "--timeout", "-1s"}, StepTimeout},
		{[]string{"park", "cluster", "--timeout"}, StepTimeout},
	} {
		assert.Equal(t, stepBound(tc.args), tc.want, "%v", tc.args)
	}
}
