package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// hostile is text a spoke agent or anyone with write access could put in a
// name, condition message or annotation: it clears the screen, moves the
// cursor, rings the bell, fakes a line, and reverses what follows.
const hostile = "ok\x1b[2J\x1b[1;1Hfake\rover\x07\u009b31m\u202eevil\nsecond\tcol"

func TestEscapeTerminal(t *testing.T) {
	assert.Equal(t, EscapeTerminal(hostile), "ok^[[2J^[[1;1Hfake\\rover\\x07\\u009b31m\\u202eevil\nsecond\tcol")
	assert.Equal(t, escapeLine(hostile), "ok^[[2J^[[1;1Hfake\\rover\\x07\\u009b31m\\u202eevil\\nsecond\\tcol")
	assert.Equal(t, EscapeTerminal("plain text, ünïcode ✓"), "plain text, ünïcode ✓")
	assert.Equal(t, EscapeTerminal("bad \xff byte"), `bad \xff byte`)
	assert.Equal(t, EscapeTerminal(EscapeTerminal(hostile)), EscapeTerminal(hostile), "escaping twice changes nothing")
}

// noControl checks that s has no control character but newlines and tabs.
func noControl(t *testing.T, s string) {
	t.Helper()
	for _, r := range s {
		assert.Check(t, r == '\n' || r == '\t' || r >= 0x20 && r != 0x7f && (r < 0x80 || r >= 0xa0) && r != '\u202e', "control character %q in %q", r, s)
	}
}

func TestTablesEscapeCells(t *testing.T) {
	var buf bytes.Buffer
	assert.NilError(t, WriteTable(&buf, Table{Columns: []Column{{Name: "NAME"}, {Name: "MESSAGE"}}, Rows: [][]string{{"spoke-1", hostile}}}, false))
	noControl(t, buf.String())
	assert.Check(t, !bytes.Contains(buf.Bytes(), []byte("\t")), "tabwriter pads with spaces; a tab came from the cell")
	assert.Check(t, is.Len(bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")), 2), "one header and one row:\n%s", buf.String())
}

func TestProgressEscapes(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf)
	p.now = func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }
	p.Update("spoke %s: %s", "spoke-1", hostile)
	noControl(t, buf.String())
	assert.Check(t, is.Equal(bytes.Count(buf.Bytes(), []byte("\n")), 1), "one line: %q", buf.String())
	buf.Reset()
	p.live = true
	p.Update("condition: %s", hostile)
	assert.Check(t, bytes.HasPrefix(buf.Bytes(), []byte("\r\x1b[K")), "the live line keeps its own control sequence")
	noControl(t, buf.String()[len("\r\x1b[K"):])
}

func TestErrorsAreEscaped(t *testing.T) {
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}
	root := &cobra.Command{Use: "sample", SilenceErrors: true, SilenceUsage: true, RunE: func(*cobra.Command, []string) error {
		return fmt.Errorf("condition of spoke-1 says: %w", errors.New(hostile))
	}}
	assert.Equal(t, Execute(root, nil, streams), exitcode.Failed)
	noControl(t, errOut.String())
	assert.Check(t, is.Contains(errOut.String(), "error: condition of spoke-1 says: ok^[[2J"))
}

func TestMainStreamsEscapeTextAndEveryFormat(t *testing.T) {
	var out, errOut bytes.Buffer
	streams := escapingStreams(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
	obj := struct {
		api.ReportMeta `json:",inline"`
		Message        string `json:"message"`
	}{api.NewNamespacedReportMeta("Sample", "fleet", "spoke-1"), hostile}
	table := func() Table { return Table{Columns: []Column{{Name: "MESSAGE"}}, Rows: [][]string{{obj.Message}}} }

	fmt.Fprintf(streams.Out, "free text: %s\n", hostile)
	noControl(t, out.String())

	// The formats write to the stream underneath (raw) and escape on their
	// own: the text formats as one line, json in its own notation.
	for format, want := range map[string]string{"": "", "wide": "", "jsonpath={.message}": escapeLine(hostile), "json": `"ok\u001b[2J\u001b[1;1Hfake\rover\u0007\u009b31m\u202eevil\nsecond\tcol"`} {
		out.Reset()
		o := NewOutput()
		*o.PrintFlags.OutputFormat = format
		assert.NilError(t, o.Print(streams.Out, obj, table))
		noControl(t, out.String())
		assert.Check(t, is.Contains(out.String(), want), format)
	}
}

// Lines of their own beside the progress carry server text (eviction
// errors from a webhook): each is one escaped line.
func TestProgressPrintfEscapes(t *testing.T) {
	for _, live := range []bool{false, true} {
		var buf bytes.Buffer
		p := NewProgress(&buf)
		p.live = live
		p.Printf("node/%s not drained: %v", "a", errors.New(hostile))
		got := strings.TrimPrefix(buf.String(), "\r\x1b[K")
		noControl(t, got)
		assert.Check(t, is.Equal(strings.Count(got, "\n"), 1), "one line: %q", got)
	}
}

func TestCustomColumnsEscapeCells(t *testing.T) {
	o := NewOutput()
	*o.PrintFlags.OutputFormat = "custom-columns=NAME:metadata.name,MESSAGE:status.message"
	assert.NilError(t, o.Validate())
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "spoke-1"}, "status": map[string]any{"message": hostile},
	}}
	var buf bytes.Buffer
	assert.NilError(t, o.Print(&buf, obj, nil))
	noControl(t, buf.String())
	assert.Check(t, is.Len(strings.Split(strings.TrimSpace(buf.String()), "\n"), 2), "one header and one row:\n%s", buf.String())
}
