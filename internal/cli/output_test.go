package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"

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
	print := func(format string, obj any) string {
		o := NewOutput()
		*o.PrintFlags.OutputFormat = format
		assert.NilError(t, o.Validate())
		var buf bytes.Buffer
		assert.NilError(t, o.Print(&buf, obj, nil))
		return buf.String()
	}
	assert.Equal(t, print("name", r), "node/a\nnode/b\n")
	assert.Equal(t, print("name", &r), "node/a\nnode/b\n")
	assert.Equal(t, print("name", sampleDrain{ReportMeta: r.ReportMeta}), "")
	assert.Equal(t, print("jsonpath={.kind}", r), "Drain")
	// A report about no object of the cluster names itself.
	assert.Equal(t, print("name", api.NewReportMeta("Version", "kubectl-spoke")), "version.spokekit.io/kubectl-spoke\n")
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
