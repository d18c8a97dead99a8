package cli

import (
	"errors"
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
)

func TestExitCode(t *testing.T) {
	assert.Equal(t, ExitCode(nil), ExitOK)
	assert.Equal(t, ExitCode(errors.New("boom")), ExitFailed)
	assert.Equal(t, ExitCode(UsageErrorf("bad")), ExitUsage)
	assert.Equal(t, ExitCode(Refusedf("no")), ExitRefused)
	assert.Equal(t, ExitCode(TimedOut(errors.New("slow"))), ExitTimedOut)
	// The code survives wrapping with context.
	assert.Equal(t, ExitCode(fmt.Errorf("removing spoke-1: %w", Refusedf("blocked"))), ExitRefused)
}
