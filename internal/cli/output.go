package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// Table is the human view of a report: what is printed without -o, and with
// -o wide including the columns marked Wide.
type Table struct {
	Columns []Column
	Rows    [][]string
	// NoHeaders leaves out the line of column names.
	NoHeaders bool
}

// Column is a table heading. Wide columns only show with -o wide.
type Column struct {
	Name string
	Wide bool
}

// Output is the -o flag of a command: the table (default and wide) plus every
// cli-runtime printer but the Go templates (json, yaml, name, jsonpath), and
// kubectl's custom-columns.
type Output struct {
	PrintFlags *genericclioptions.PrintFlags
	// only, when set, restricts -o to these formats (plus the table).
	only []string
	// NoHeaders (--no-headers, on the commands that list) leaves out the
	// heading line of the table and of -o custom-columns, as kubectl get does.
	NoHeaders bool
}

const (
	formatWide          = "wide"
	formatName          = "name"
	formatCustomColumns = "custom-columns"
)

// NewOutput returns the -o flag. With no arguments every format is offered;
// otherwise only the named ones (and the default table).
func NewOutput(only ...string) *Output {
	return &Output{PrintFlags: genericclioptions.NewPrintFlags(""), only: only}
}

// AddFlags registers -o/--output (and the template flags) with completion.
func (o *Output) AddFlags(cmd *cobra.Command) {
	if len(o.only) == 0 {
		o.PrintFlags.AddFlags(cmd)
	} else {
		cmd.Flags().StringVarP(o.PrintFlags.OutputFormat, "output", "o", "", "")
	}
	f := cmd.Flags().Lookup("output")
	f.Usage = "Output format. One of: (" + strings.Join(o.formats(), ", ") + ")."
	// cli-runtime's help for these speaks of Go templates, which the
	// plugins do not offer.
	if t := cmd.Flags().Lookup("template"); t != nil {
		t.Usage = "JSONPath template for -o jsonpath, or the path of a file holding one for -o jsonpath-file."
	}
	if k := cmd.Flags().Lookup("allow-missing-template-keys"); k != nil {
		k.Usage = "If true, a field or map key the jsonpath template names but the output lacks is not an error."
	}
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(o.formats(), cobra.ShellCompDirectiveNoFileComp))
}

// AddNoHeadersFlag registers kubectl get's --no-headers, for the commands
// that list.
func (o *Output) AddNoHeadersFlag(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.NoHeaders, "no-headers", o.NoHeaders, "Leave out the heading line of the table (default, wide or custom-columns output).")
}

func (o *Output) formats() []string {
	if len(o.only) > 0 {
		return o.only
	}
	f := []string{formatWide, formatCustomColumns, formatCustomColumns + "-file"}
	for _, format := range o.PrintFlags.AllowedFormats() {
		if !goTemplate(format) {
			f = append(f, format)
		}
	}
	slices.Sort(f)
	return f
}

// Format is the chosen -o value ("" for the default table).
func (o *Output) Format() string { return *o.PrintFlags.OutputFormat }

// IsTable tells whether the output is the human table (default or wide).
func (o *Output) IsTable() bool { return o.Format() == "" || o.Format() == formatWide }

// Validate rejects an unknown -o before any request is made.
func (o *Output) Validate() error {
	format := o.Format()
	name, _, _ := strings.Cut(format, "=")
	if t := o.PrintFlags.TemplatePrinterFlags; t != nil && t.TemplateArgument != nil && *t.TemplateArgument != "" && !strings.HasPrefix(name, "jsonpath") {
		// kubectl reads a lone --template as a Go template, which the
		// plugins do not offer: ignoring it would print something else.
		return exitcode.UsageErrorf("--template goes with -o jsonpath or -o jsonpath-file (Go templates are not supported), got -o %q", format)
	}
	if o.IsTable() {
		return nil
	}
	if len(o.only) > 0 {
		if !slices.Contains(o.only, name) {
			return exitcode.UsageErrorf("unknown output format %q: use one of %s", format, strings.Join(o.only, ", "))
		}
		return nil
	}
	_, err := o.printer()
	if err != nil {
		return exitcode.UsageErrorf("%v", err)
	}
	return nil
}

// goTemplate tells the Go template formats apart. The plugins do not offer
// them: the template interpreter calls methods by name, so the linker then
// keeps every method of every type, which made each binary ~20 MB larger.
// jsonpath and custom-columns cover what they are used for.
func goTemplate(format string) bool {
	name, _, _ := strings.Cut(format, "=")
	return name == "go-template" || name == "go-template-file" || name == "template" || name == "templatefile"
}

// printer is cli-runtime's printer for the format, as PrintFlags.ToPrinter
// chooses it, without the Go template printers.
func (o *Output) printer() (printers.ResourcePrinter, error) {
	format := o.Format()
	if goTemplate(format) {
		return nil, fmt.Errorf("-o %s is not supported: use -o jsonpath=..., -o custom-columns=... or -o json", strings.SplitN(format, "=", 2)[0])
	}
	if strings.HasPrefix(format, formatCustomColumns) {
		return newCustomColumns(format, o.NoHeaders)
	}
	pf := o.PrintFlags
	if p, err := pf.JSONYamlPrintFlags.ToPrinter(format); !genericclioptions.IsNoCompatiblePrinterError(err) {
		return p, err
	}
	if p, err := pf.NamePrintFlags.ToPrinter(format); !genericclioptions.IsNoCompatiblePrinterError(err) {
		return p, err
	}
	if p, err := pf.TemplatePrinterFlags.JSONPathPrintFlags.ToPrinter(format); !genericclioptions.IsNoCompatiblePrinterError(err) {
		return p, err
	}
	return nil, genericclioptions.NoCompatiblePrinterError{OutputFormat: &format, AllowedFormats: o.formats()}
}

// Subjects is a report about objects of the cluster. -o name prints those
// objects (api.ObjectName), as kubectl's commands print the objects they
// acted on, so the lines feed other kubectl commands; a report without
// subjects prints its own kind and name.
type Subjects interface {
	Subjects() []string
}

// Print writes obj in the chosen format. obj is a report struct with
// apiVersion, kind and metadata (api.ReportMeta); table renders its human view.
//
// What a cluster wrote (names, owner kinds, messages) is escaped in every
// format: the text formats (table, wide, name, jsonpath, custom-columns)
// print each value escaped to one line (escapeLine), so that it can send the
// terminal no control sequence and fake no line; json and yaml print it in
// their own escaped notation, which reads back as the same value.
func (o *Output) Print(w io.Writer, obj any, table func() Table) error {
	if o.IsTable() {
		t := table()
		t.NoHeaders = o.NoHeaders
		return WriteTable(w, t, o.Format() == formatWide)
	}
	if s, ok := obj.(Subjects); ok && o.Format() == formatName {
		var b strings.Builder
		for _, name := range s.Subjects() {
			b.WriteString(escapeLine(name) + "\n")
		}
		_, err := io.WriteString(raw(w), b.String())
		return err
	}
	p, err := o.printer()
	if err != nil {
		return exitcode.UsageErrorf("%v", err)
	}
	content, err := toContent(obj)
	if err != nil {
		return err
	}
	if o.machineFormat() {
		data, err := json.Marshal(content)
		if err != nil {
			return fmt.Errorf("encoding output: %w", err)
		}
		// The printers indent JSON as it is and turn it into YAML.
		return p.PrintObj(&runtime.Unknown{Raw: escapeJSON(data)}, raw(w))
	}
	u, err := toObject(escapeValues(content).(map[string]any))
	if err != nil {
		return err
	}
	return p.PrintObj(u, raw(w))
}

// machineFormat tells -o json and -o yaml apart from the text formats.
func (o *Output) machineFormat() bool { return o.Format() == "json" || o.Format() == "yaml" }

// toContent is obj as JSON reads it: maps, slices and scalars.
func toContent(obj any) (map[string]any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding output: %w", err)
	}
	var content map[string]any
	if err := json.Unmarshal(data, &content); err != nil {
		return nil, fmt.Errorf("encoding output: %w", err)
	}
	return content, nil
}

// toObject is the object the printers take: a list when it has items, so
// that -o name and custom-columns print one line each.
func toObject(content map[string]any) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: content}
	if !u.IsList() {
		return u, nil
	}
	return u.ToList()
}

// WriteTable prints a table with kubectl's column layout; wide keeps the
// columns marked Wide. Each cell is escaped to one line.
func WriteTable(w io.Writer, t Table, wide bool) error {
	// The tab writer writes every cell and every run of padding separately:
	// unbuffered, a 2,000-row table was some 20,000 write calls (a tenth of
	// spoke list's CPU time), each of them waking the reader of the pipe. The
	// buffer sits under the terminal escaping, as headings and cells are
	// escaped here: escaping whole buffers could cut a character in two at a
	// buffer's end.
	bw := bufio.NewWriterSize(raw(w), 64<<10)
	tw := printers.GetNewTabWriter(bw)
	var keep []int
	var head []string
	for i, c := range t.Columns {
		if c.Wide && !wide {
			continue
		}
		keep = append(keep, i)
		head = append(head, escapeLine(c.Name))
	}
	if !t.NoHeaders {
		fmt.Fprintln(tw, strings.Join(head, "\t"))
	}
	for _, row := range t.Rows {
		cells := make([]string, 0, len(keep))
		for _, i := range keep {
			cell := ""
			if i < len(row) {
				cell = row[i]
			}
			if cell == "" {
				cell = "<none>"
			}
			cells = append(cells, escapeLine(cell))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}
