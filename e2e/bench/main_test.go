//go:build e2e

// Package bench measures the plugins against what they replace, on real
// local clusters: `make bench` runs every benchmark once (-benchtime 1x);
// each one repeats its own runs (at least 5, kubectl and spokekit taking
// turns), and the package prints one table of medians at the end, writes
// it as JSON (SPOKEKIT_BENCH_OUT, default _output/bench.json) and puts its
// rows into the performance page (docs/performance.md). The figures
// are reported, never asserted: a benchmark fails only when a command fails
// or a correctness check made while it runs (a PodDisruptionBudget kept)
// does not hold.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/spokekit/spokekit/e2e/harness"
)

var env *harness.Env

// minPairs is the fewest runs of each side a ratio is worth reporting from:
// fewer, and one slow run decides the median.
const minPairs = 5

// pairs is how many times each side of a comparison runs (SPOKEKIT_BENCH_PAIRS).
var pairs = minPairs

// pairsFrom reads a count of pairs from the environment variable name: at
// least minPairs, def when unset.
func pairsFrom(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < minPairs {
		return 0, fmt.Errorf("%s=%q: want a whole number of at least %d pairs", name, v, minPairs)
	}
	return n, nil
}

func TestMain(m *testing.M) {
	var err error
	if pairs, err = pairsFrom("SPOKEKIT_BENCH_PAIRS", minPairs); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	code := harness.Main(m, func(_, _ context.Context, e *harness.Env) (func(), error) {
		env = e
		return nil, nil
	})
	if len(report.Rows) > 0 {
		if err := report.write(os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			code = 1
		}
		// A failed run's figures may not mean what the page says they do.
		if code == 0 {
			if err := report.writePage(os.Stdout); err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				code = 1
			}
		} else {
			fmt.Fprintln(os.Stderr, "bench: a benchmark failed: docs/performance.md is left as it was")
		}
	}
	os.Exit(code)
}

// Stat is the summary of one side's samples.
type Stat struct {
	Median  float64   `json:"median"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	Samples []float64 `json:"samples"`
}

func stat(samples []float64) *Stat {
	s := slices.Clone(samples)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return &Stat{Median: m, Min: s[0], Max: s[len(s)-1], Samples: samples}
}

// Row is one line of the table: spokekit's figure, kubectl's for the same
// job on the same cluster, their ratio and the goal.
type Row struct {
	// Bench is the benchmark that measured it, as BENCH= selects it.
	Bench    string  `json:"bench"`
	Measure  string  `json:"measure"`
	Unit     string  `json:"unit"`
	Spokekit *Stat   `json:"spokekit"`
	Kubectl  *Stat   `json:"kubectl,omitempty"`
	Ratio    float64 `json:"ratio,omitempty"`
	Goal     string  `json:"goal"`
}

// Report is what `make bench` prints and writes.
type Report struct {
	Date      string `json:"date"`
	Pairs     int    `json:"pairs"`
	LoadStart string `json:"loadStart"`
	LoadEnd   string `json:"loadEnd"`
	Rows      []Row  `json:"rows"`
	mu        sync.Mutex
}

var report = Report{Date: time.Now().UTC().Format(time.RFC3339), LoadStart: loadavg()}

// add records a row of the benchmark b; kubectl may be nil where kubectl has
// no counterpart.
func add(b testing.TB, measure, unit string, ours, theirs []float64, goal string) {
	b.Helper()
	r := Row{Bench: strings.TrimPrefix(b.Name(), "Benchmark"), Measure: measure, Unit: unit, Spokekit: stat(ours), Goal: goal}
	if len(theirs) > 0 {
		r.Kubectl = stat(theirs)
		if r.Kubectl.Median != 0 {
			r.Ratio = r.Spokekit.Median / r.Kubectl.Median
		}
	}
	report.mu.Lock()
	defer report.mu.Unlock()
	report.Rows = append(report.Rows, r)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func (s *Stat) cell() string {
	if s == nil {
		return "-"
	}
	if s.Min == s.Max {
		return num(s.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", num(s.Median), num(s.Min), num(s.Max))
}

func num(v float64) string {
	switch {
	case v == float64(int64(v)):
		return strconv.FormatInt(int64(v), 10)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// write prints the table and writes the JSON file.
func (r *Report) write(out *os.File) error {
	r.LoadEnd = loadavg()
	r.Pairs = pairs
	tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', 0)
	fmt.Fprintf(out, "\nspokekit against kubectl: medians (min–max) of %d runs each, taking turns; load %s at the start, %s at the end\n\n", pairs, r.LoadStart, r.LoadEnd)
	fmt.Fprintln(tw, "| measure\t| spokekit\t| kubectl\t| ratio\t| goal\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|---\t|---\t|")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "| %s\t| %s\t| %s\t| %s\t| %s\t|\n", row.measure(), row.Spokekit.cell(), row.Kubectl.cell(), row.ratio(), row.Goal)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	path := os.Getenv("SPOKEKIT_BENCH_OUT")
	if path == "" {
		root, err := harness.RepoRoot()
		if err != nil {
			return err
		}
		path = filepath.Join(root, "_output", "bench.json")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nwritten to %s\n", path)
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func (row Row) measure() string { return fmt.Sprintf("%s (%s)", row.Measure, row.Unit) }

func (row Row) ratio() string {
	if row.Ratio == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", row.Ratio)
}

// writePage puts the rows of the benchmarks this run measured into the
// performance page (SPOKEKIT_BENCH_PAGE, default docs/performance.md), with
// the run's date, runs and load beside them; the other rows stay as they
// were measured.
func (r *Report) writePage(out *os.File) error {
	path := os.Getenv("SPOKEKIT_BENCH_PAGE")
	if path == "" {
		root, err := harness.RepoRoot()
		if err != nil {
			return err
		}
		path = filepath.Join(root, "docs", "performance.md")
	}
	page, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the performance page: %w", err)
	}
	date := r.Date
	if t, err := time.Parse(time.RFC3339, r.Date); err == nil {
		date = t.Format(time.DateOnly)
	}
	var fresh pageTables
	runs := map[string]int{}
	var order []string
	for _, row := range r.Rows {
		if _, seen := runs[row.Bench]; !seen {
			order = append(order, row.Bench)
		}
		runs[row.Bench] = max(runs[row.Bench], len(row.Spokekit.Samples))
		if row.Kubectl != nil {
			runs[row.Bench] = max(runs[row.Bench], len(row.Kubectl.Samples))
		}
		fresh.measures = append(fresh.measures, []string{row.Bench, row.measure(), row.Spokekit.cell(), row.Kubectl.cell(), row.ratio(), row.Goal})
	}
	for _, b := range order {
		fresh.runs = append(fresh.runs, []string{b, date, strconv.Itoa(runs[b]), r.LoadStart, r.LoadEnd})
	}
	updated, err := updatePage(string(page), fresh)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.WriteFile(path, []byte(updated), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(out, "rows of %s written into %s\n", strings.Join(order, ", "), path)
	return nil
}
