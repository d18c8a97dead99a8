package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spokekit/spokekit/internal/exitcode"
)

func TestCustomColumnsFromFileAndMissingFields(t *testing.T) {
	file := filepath.Join(t.TempDir(), "columns")
	assert.NilError(t, os.WriteFile(file, []byte("NAME  NS   MISSING\nmetadata.name {.metadata.namespace} .spec.nothing\n"), 0o600))
	for _, format := range []string{"custom-columns-file=" + file, "custom-columns=NAME:metadata.name,NS:{.metadata.namespace},MISSING:.spec.nothing"} {
		o := NewOutput()
		*o.PrintFlags.OutputFormat = format
		assert.NilError(t, o.Validate())
		var buf bytes.Buffer
		l, table := sample()
		assert.NilError(t, o.Print(&buf, l, table))
		assert.Equal(t, buf.String(), "NAME      NS      MISSING\nspoke-1   fleet   <none>\nspoke-2   fleet   <none>\n", format)
	}
}

func TestCustomColumnsRejectsBadSpecs(t *testing.T) {
	for format, want := range map[string]string{
		"custom-columns=":                   "no custom columns given",
		"custom-columns=NAME":               "expected <header>:<json-path-expr>",
		"custom-columns=NAME:{a}{b}":        "unexpected path string",
		"custom-columns-file=/no/such/file": "error reading template",
	} {
		o := NewOutput()
		*o.PrintFlags.OutputFormat = format
		err := o.Validate()
		assert.Equal(t, exitcode.Of(err), exitcode.Usage, format)
		assert.ErrorContains(t, err, want, format)
	}
}
