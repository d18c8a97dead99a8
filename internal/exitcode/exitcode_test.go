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

// The numbers themselves are the contract scripts test for: a constant
// renumbered would pass every test that compares with the constant.
func TestCodesAreTheContractsNumbers(t *testing.T) {
	assert.DeepEqual(t, []int{OK, Failed, Usage, Refused, TimedOut, Interrupted}, []int{0, 1, 2, 3, 4, 130})
}
