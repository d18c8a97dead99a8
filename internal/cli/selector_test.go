package cli

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spokekit/spokekit/internal/exitcode"
)

func TestValidateSelector(t *testing.T) {
	for value, want := range map[string]string{
		"":             "",
		"env=prod":     "",
		"env in (prod": "invalid --selector",
		" ":            "is blank and selects everything",
		"\t":           "is blank and selects everything",
	} {
		err := ValidateSelector("--selector", value)
		if want == "" {
			assert.NilError(t, err, "%q", value)
			continue
		}
		assert.ErrorContains(t, err, want, "%q", value)
		assert.Equal(t, exitcode.Of(err), exitcode.Usage, "%q", value)
	}
}
