package cli

import (
	"testing"

	"gotest.tools/v3/assert"
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
		assert.Equal(t, ExitCode(err), ExitUsage, "%q", value)
	}
}
