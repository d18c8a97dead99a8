package exitcode

import (
	"errors"
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
)

func TestOf(t *testing.T) {
	assert.Equal(t, Of(nil), OK)
	assert.Equal(t, Of(errors.New("boom")), Failed)
	assert.Equal(t, Of(UsageErrorf("bad")), Usage)
	assert.Equal(t, Of(RefusedErrorf("no")), Refused)
	assert.Equal(t, Of(TimedOutError(errors.New("slow"))), TimedOut)
	assert.Equal(t, Of(fmt.Errorf("%w by SIGINT", ErrInterrupted)), Interrupted)
	// The code survives wrapping with context.
	assert.Equal(t, Of(fmt.Errorf("removing spoke-1: %w", RefusedErrorf("blocked"))), Refused)
	assert.Check(t, IsRefused(fmt.Errorf("removing spoke-1: %w", RefusedErrorf("blocked"))))
}
