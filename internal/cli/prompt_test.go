package cli

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/spokekit/spokekit/internal/exitcode"
)

func TestConfirmRefusesWithoutTerminal(t *testing.T) {
	streams, in, _, errOut := genericiooptions.NewTestIOStreams()
	in.WriteString("yes\n")
	err := Confirm(context.Background(), streams, "Force-remove spoke-1", false)
	assert.Equal(t, exitcode.Of(err), exitcode.Refused)
	assert.ErrorContains(t, err, "--yes")
	assert.Equal(t, errOut.String(), "", "nothing is asked when the answer cannot be read")
}

func TestConfirmYesSkipsTheQuestion(t *testing.T) {
	streams, _, _, errOut := genericiooptions.NewTestIOStreams()
	assert.NilError(t, Confirm(context.Background(), streams, "Force-remove spoke-1", true))
	assert.Equal(t, errOut.String(), "")
}

func TestConfirmFromReadsTheAnswer(t *testing.T) {
	for answer, ok := range map[string]bool{"y\n": true, "YES\n": true, "n\n": false, "\n": false, "": false, "maybe\n": false} {
		streams, in, _, errOut := genericiooptions.NewTestIOStreams()
		in.WriteString(answer)
		err := ConfirmFrom(context.Background(), streams, "Delete it")
		assert.Equal(t, err == nil, ok, "answer %q", answer)
		assert.Assert(t, strings.HasPrefix(errOut.String(), "Delete it [y/N]: "))
		if !ok {
			assert.Equal(t, exitcode.Of(err), exitcode.Refused)
		}
	}
}
