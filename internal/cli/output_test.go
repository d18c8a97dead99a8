package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	"sigs.k8s.io/yaml"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/exitcode"
)

type sampleItem struct {
	api.ReportMeta `json:",inline"`
	Phase          string `json:"phase"`
	Hub            string `json:"hub"`
}

type sampleList struct {
	api.ReportMeta `json:",inline"`
	Items          []sampleItem `json:"items"`
}

func sample() (sampleList, func() Table) {
	l := sampleList{ReportMeta: api.NewReportMeta("SampleList", "")}
	for _, n := range []struct{ name, phase string }{{"spoke-1", "Running"}, {"spoke-2", ""}} {
		l.Items = append(l.Items, sampleItem{ReportMeta: api.NewNamespacedReportMeta("Sample", "fleet", n.name), Phase: n.phase, Hub: "hub"})
	}
	return l, func() Table {
		t := Table{Columns: []Column{{Name: "NAME"}, {Name: "PHASE"}, {Name: "HUB", Wide: true}}}
		for _, i := range l.Items {
			t.Rows = append(t.Rows, []string{i.Metadata.Name, i.Phase, i.Hub})
		}
		return t
	}
}

func TestOutputFormats(t *testing.T) {
	cases := map[string]string{
		"":                                   "table",
		"wide":                               "wide",
		"json":                               "json",
		"yaml":                               "yaml",
		"name":                               "name",
		"jsonpath={.items[*].metadata.name}": "jsonpath",
		"custom-columns=NAME:.metadata.name,PHASE:.phase": "custom-columns",
	}
	for format, name := range cases {
		t.Run(name, func(t *testing.T) {
			o := NewOutput()
			*o.PrintFlags.OutputFormat = format
			assert.NilError(t, o.Validate())
			var buf bytes.Buffer
			l, table := sample()
			assert.NilError(t, o.Print(&buf, l, table))
			golden.Assert(t, buf.String(), "output-"+name+".golden")
		})
	}
}

func TestOutputRejectsUnknownFormat(t *testing.T) {
	o := NewOutput()
	*o.PrintFlags.OutputFormat = "xml"
	err := o.Validate()
	assert.Equal(t, exitcode.Of(err), exitcode.Usage)
	assert.ErrorContains(t, err, `"xml"`)

	for _, format := range []string{"go-template={{.kind}}", "go-template-file=t.tmpl", "template={{.kind}}"} {
		o = NewOutput()
		*o.PrintFlags.OutputFormat = format
		err = o.Validate()
		assert.Equal(t, exitcode.Of(err), exitcode.Usage, format)
		assert.ErrorContains(t, err, "use -o jsonpath=")
	}

	// --template only means something to the jsonpath formats; alone it
	// would be kubectl's go-template, which the plugins do not offer.
	for _, format := range []string{"", "wide", "json", "custom-columns=NAME:.metadata.name"} {
		o = NewOutput()
		*o.PrintFlags.OutputFormat = format
		*o.PrintFlags.TemplatePrinterFlags.TemplateArgument = "{.kind}"
		err = o.Validate()
		assert.Equal(t, exitcode.Of(err), exitcode.Usage, format)
		assert.ErrorContains(t, err, "--template goes with -o jsonpath")
	}
	o = NewOutput()
	*o.PrintFlags.OutputFormat = "jsonpath"
	*o.PrintFlags.TemplatePrinterFlags.TemplateArgument = "{.kind}"
	assert.NilError(t, o.Validate())

	o = NewOutput("json", "yaml")
	*o.PrintFlags.OutputFormat = "name"
	err = o.Validate()
	assert.Equal(t, exitcode.Of(err), exitcode.Usage)
	assert.ErrorContains(t, err, "use one of json, yaml")
}

func TestWriteTableShowsNoneForEmptyCells(t *testing.T) {
	var buf bytes.Buffer
	assert.NilError(t, WriteTable(&buf, Table{Columns: []Column{{Name: "A"}, {Name: "B"}}, Rows: [][]string{{"x"}}}, false))
	assert.Equal(t, buf.String(), "A     B\nx     <none>\n")
}

// countingWriter counts the calls to Write (it has no WriteString, so
// io.WriteString goes through Write too).
type countingWriter struct {
	buf    bytes.Buffer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	return c.buf.Write(p)
}

func TestWriteTableWritesTheStreamInBlocks(t *testing.T) {
	var rows [][]string
	for i := range 2000 {
		rows = append(rows, []string{fmt.Sprintf("spoke-%05d", i), "Running", "True"})
	}
	var out countingWriter
	assert.NilError(t, WriteTable(terminalWriter{&out}, Table{Columns: []Column{{Name: "NAME"}, {Name: "PHASE"}, {Name: "JOINED"}}, Rows: rows}, false))
	assert.Equal(t, strings.Count(out.buf.String(), "\n"), 2001)
	assert.Assert(t, out.writes <= 2, "%d writes for %d bytes", out.writes, out.buf.Len())
}

func TestWriteTableEscapesHeadingsAndCells(t *testing.T) {
	var out bytes.Buffer
	assert.NilError(t, WriteTable(terminalWriter{&out}, Table{Columns: []Column{{Name: "A\x1b[2J"}}, Rows: [][]string{{"x\x1b]0;y\a"}}}, false))
	assert.Equal(t, out.String(), "A^[[2J\nx^[]0;y\\x07\n")
}

// sampleDrain is a report about Nodes.
type sampleDrain struct {
	api.ReportMeta `json:",inline"`
	Nodes          []string `json:"nodes"`
}

func (r sampleDrain) Subjects() []string {
	var names []string
	for _, n := range r.Nodes {
		names = append(names, api.ObjectName(api.NodeKind, n))
	}
	return names
}

// -o name prints the objects a report is about, as kubectl names them; the
// other formats still print the report itself.
func TestNamePrintsTheObjectsAReportIsAbout(t *testing.T) {
	r := sampleDrain{ReportMeta: api.NewReportMeta("Drain", "nodes"), Nodes: []string{"a", "b"}}
	printed := func(format string, obj any) string {
		o := NewOutput()
		*o.PrintFlags.OutputFormat = format
		assert.NilError(t, o.Validate())
		var buf bytes.Buffer
		assert.NilError(t, o.Print(&buf, obj, nil))
		return buf.String()
	}
	assert.Equal(t, printed("name", r), "node/a\nnode/b\n")
	assert.Equal(t, printed("name", &r), "node/a\nnode/b\n")
	assert.Equal(t, printed("name", sampleDrain{ReportMeta: r.ReportMeta}), "")
	assert.Equal(t, printed("jsonpath={.kind}", r), "Drain")
	// A report about no object of the cluster names itself.
	assert.Equal(t, printed("name", api.NewReportMeta("Version", "kubectl-spoke")), "version.spokekit.io/kubectl-spoke\n")
}

// --no-headers leaves out the heading line of the table, wide or not, and of
// -o custom-columns, as kubectl get's does; other formats are as they were.
func TestNoHeaders(t *testing.T) {
	for format, want := range map[string]string{
		"":                                   "spoke-1   Running\nspoke-2   <none>\n",
		"wide":                               "spoke-1   Running   hub\nspoke-2   <none>    hub\n",
		"custom-columns=N:.metadata.name":    "spoke-1\nspoke-2\n",
		"jsonpath={.items[0].metadata.name}": "spoke-1",
	} {
		o := NewOutput()
		o.NoHeaders = true
		*o.PrintFlags.OutputFormat = format
		assert.NilError(t, o.Validate())
		var buf bytes.Buffer
		l, table := sample()
		assert.NilError(t, o.Print(&buf, l, table))
		assert.Equal(t, buf.String(), want, format)
	}
}

// evilReport is a report whose every string a tenant could have written:
// a kind (an owner's), a name, a message, a label key.
type evilReport struct {
	api.ReportMeta `json:",inline"`
	Items          []evilItem `json:"items"`
}

type evilItem struct {
	api.ReportMeta `json:",inline"`
	Object         string            `json:"object"`
	Message        string            `json:"message"`
	Labels         map[string]string `json:"labels"`
}

const evil = "Evil\x1b]0;pwned\x07\u009b31m\u202e\x7f\nfake-line\tcol"

func (r evilReport) Subjects() []string {
	var out []string
	for _, item := range r.Items {
		out = append(out, item.Object)
	}
	return out
}

func evilSample() (evilReport, func() Table) {
	r := evilReport{ReportMeta: api.NewReportMeta("EvilList", "")}
	item := evilItem{ReportMeta: api.NewNamespacedReportMeta(evil, "fleet", "spoke-1"), Object: evil + "/spoke-1", Message: evil, Labels: map[string]string{evil: evil}}
	r.Items = append(r.Items, item)
	return r, func() Table {
		return Table{Columns: []Column{{Name: "OBJECT"}, {Name: "MESSAGE", Wide: true}}, Rows: [][]string{{item.Object, item.Message}}}
	}
}

// Every -o format escapes what a cluster wrote: the text formats (table,
// wide, name, jsonpath, custom-columns) write each value as one escaped
// line, so it can neither send the terminal a control sequence nor fake a
// line; json and yaml write it in their own escaped notation, which reads
// back as the value it was (bidirectional overrides aside in yaml, which
// keeps them as they are: its plain scalars have no escapes).
func TestEveryFormatEscapesClusterText(t *testing.T) {
	columns := filepath.Join(t.TempDir(), "columns")
	assert.NilError(t, os.WriteFile(columns, []byte("KIND MESSAGE\n.kind .message\n"), 0o600))
	template := filepath.Join(t.TempDir(), "template")
	assert.NilError(t, os.WriteFile(template, []byte("{range .items[*]}{.object}{\"\\n\"}{end}"), 0o600))
	text := map[string]int{ // the format and the lines it prints
		"":     2,
		"wide": 2,
		"name": 1,
		"jsonpath={range .items[*]}{.kind} {.message} {.labels}{\"\\n\"}{end}": 1,
		"jsonpath-file=" + template:                             1,
		"custom-columns=KIND:.kind,MSG:.message,LABELS:.labels": 2,
		"custom-columns-file=" + columns:                        2,
	}
	for format, lines := range text {
		t.Run(format, func(t *testing.T) {
			out := printed(t, format, evilSample)
			noControl(t, out)
			assert.Check(t, is.Equal(strings.Count(out, "\n"), lines), "%q", out)
			assert.Check(t, is.Contains(out, `Evil^[]0;pwned\x07\u009b31m\u202e\x7f\nfake-line\tcol`))
		})
	}
	// -o name of a report about no object of the cluster: its own kind/name.
	out := printed(t, "name", func() (any, func() Table) { return api.NewReportMeta(evil, "x"), nil })
	noControl(t, out)
	assert.Check(t, is.Equal(strings.Count(out, "\n"), 1), "%q", out)

	want, _ := evilSample()
	for _, format := range []string{"json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			out := printed(t, format, evilSample)
			for _, r := range out {
				assert.Check(t, r == '\n' || r == '\u202e' && format == "yaml" || r >= 0x20 && r != 0x7f && (r < 0x80 || r >= 0xa0) && r != '\u202e',
					"control character %q in %q", r, out)
			}
			var got evilReport
			assert.NilError(t, yaml.Unmarshal([]byte(out), &got), out)
			assert.Check(t, is.DeepEqual(got, want), "the value reads back as it was")
		})
	}
}

// printed is what sample gives, printed in format.
func printed[R any](t *testing.T, format string, sample func() (R, func() Table)) string {
	t.Helper()
	o := NewOutput()
	*o.PrintFlags.OutputFormat = format
	assert.NilError(t, o.Validate())
	var buf bytes.Buffer
	r, table := sample()
	assert.NilError(t, o.Print(&buf, r, table))
	return buf.String()
}
