package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"

	"github.com/spokekit/spokekit/internal/localfile"
)

// customColumns is kubectl's -o custom-columns=HEADER:PATH,... and
// -o custom-columns-file=FILE (a line of headers, a line of paths), with
// the same output. Written here because kubectl's printer lives in its `get`
// command package, whose start-up alone costs more than a plugin's.
type customColumns struct {
	headers   []string
	paths     []*jsonpath.JSONPath
	noHeaders bool
}

// fieldPath accepts a.b, .a.b, {a.b} and {.a.b}, as kubectl does.
var fieldPath = regexp.MustCompile(`^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`)

func newCustomColumns(format string, noHeaders bool) (*customColumns, error) {
	name, value, _ := strings.Cut(format, "=")
	if value == "" {
		return nil, errors.New("custom-columns format specified but no custom columns given")
	}
	var headers, specs []string
	switch name {
	case formatCustomColumns:
		for _, part := range strings.Split(value, ",") {
			header, spec, ok := strings.Cut(part, ":")
			if !ok {
				return nil, fmt.Errorf("unexpected custom-columns spec: %s, expected <header>:<json-path-expr>", part)
			}
			headers, specs = append(headers, header), append(specs, spec)
		}
	case formatCustomColumns + "-file":
		var err error
		if headers, specs, err = readColumnsFile(value); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown output format %q", format)
	}
	c := &customColumns{headers: headers, noHeaders: noHeaders}
	for i, spec := range specs {
		m := fieldPath.FindStringSubmatch(spec)
		if m == nil {
			return nil, errors.New("unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'")
		}
		p := jsonpath.New(fmt.Sprintf("column%d", i)).AllowMissingKeys(true)
		if err := p.Parse("{." + m[1] + m[2] + "}"); err != nil {
			return nil, err
		}
		c.paths = append(c.paths, p)
	}
	return c, nil
}

func readColumnsFile(path string) (headers, specs []string, err error) {
	data, _, err := localfile.Read(path, localfile.MaxSize)
	if err != nil {
		return nil, nil, fmt.Errorf("error reading template %s, %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	const format = "Expected format is one line of space separated headers, one line of space separated column specs."
	if !sc.Scan() {
		return nil, nil, fmt.Errorf("invalid template, missing header line. %s", format)
	}
	headers = strings.Fields(sc.Text())
	if !sc.Scan() {
		return nil, nil, fmt.Errorf("invalid template, missing spec line. %s", format)
	}
	specs = strings.Fields(sc.Text())
	if len(headers) != len(specs) {
		return nil, nil, fmt.Errorf("number of headers (%d) and field specifications (%d) don't match", len(headers), len(specs))
	}
	return headers, specs, nil
}

// PrintObj prints the headers and one row per item of a list (or the one
// object): every match of a path joined with ",", <none> for no match. The
// values come escaped (Output.Print).
func (c *customColumns) PrintObj(obj runtime.Object, out io.Writer) error {
	w := printers.GetNewTabWriter(out)
	if !c.noHeaders {
		fmt.Fprintln(w, strings.Join(c.headers, "\t"))
	}
	objs := []runtime.Object{obj}
	if meta.IsListType(obj) {
		var err error
		if objs, err = meta.ExtractList(obj); err != nil {
			return err
		}
	}
	for _, o := range objs {
		u, ok := o.(runtime.Unstructured)
		if !ok {
			return fmt.Errorf("custom-columns: unexpected object %T", o)
		}
		cells := make([]string, len(c.paths))
		for i, p := range c.paths {
			results, err := p.FindResults(u.UnstructuredContent())
			if err != nil {
				return err
			}
			var values []string
			if len(results) == 0 || len(results[0]) == 0 {
				values = append(values, "<none>")
			}
			for _, r := range results {
				for _, v := range r {
					values = append(values, fmt.Sprint(v.Interface()))
				}
			}
			cells[i] = strings.Join(values, ",")
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	return w.Flush()
}
