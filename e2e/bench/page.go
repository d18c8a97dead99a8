package bench

import (
	"errors"
	"fmt"
	"strings"
)

// The performance page holds the figures between these two lines. `make
// bench` rewrites only the rows of the benchmarks it ran, so a run of one
// benchmark leaves every other row as it was measured.
const (
	pageBegin = "<!-- make bench: begin (generated: each run replaces the rows of the benchmarks it ran) -->"
	pageEnd   = "<!-- make bench: end -->"
)

var (
	runsHeader    = []string{"bench", "date", "runs each side", "load at start", "load at end"}
	measureHeader = []string{"bench", "measure", "spokekit", "kubectl", "ratio", "goal"}
)

// pageTables is what the generated part of the page holds. The first cell of
// every row is the benchmark that measured it (its name without
// "Benchmark", as BENCH= selects it).
type pageTables struct {
	runs     [][]string
	measures [][]string
}

// updatePage returns the page with the rows of the benchmarks in fresh
// replaced by fresh's, in place, and fresh's other benchmarks appended.
func updatePage(page string, fresh pageTables) (string, error) {
	begin := strings.Index(page, pageBegin)
	end := strings.Index(page, pageEnd)
	if begin < 0 || end < begin {
		return "", errors.New("the page has no generated part: its begin and end lines are missing or out of order")
	}
	old, err := parseTables(page[begin+len(pageBegin) : end])
	if err != nil {
		return "", err
	}
	merged := pageTables{runs: mergeRows(old.runs, fresh.runs), measures: mergeRows(old.measures, fresh.measures)}
	return page[:begin+len(pageBegin)] + "\n\n" + renderTables(merged) + "\n" + page[end:], nil
}

// mergeRows keeps old's rows of benchmarks fresh does not have, puts fresh's
// rows of a benchmark where old had that benchmark's first row, and appends
// the benchmarks old did not have.
func mergeRows(old, fresh [][]string) [][]string {
	byBench := map[string][][]string{}
	var order []string
	for _, r := range fresh {
		if _, seen := byBench[r[0]]; !seen {
			order = append(order, r[0])
		}
		byBench[r[0]] = append(byBench[r[0]], r)
	}
	var out [][]string
	placed := map[string]bool{}
	for _, r := range old {
		rows, ran := byBench[r[0]]
		switch {
		case !ran:
			out = append(out, r)
		case !placed[r[0]]:
			out = append(out, rows...)
			placed[r[0]] = true
		}
	}
	for _, b := range order {
		if !placed[b] {
			out = append(out, byBench[b]...)
		}
	}
	return out
}

func parseTables(s string) (pageTables, error) {
	var tables [][][]string
	inTable := false
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		if !inTable {
			tables = append(tables, nil) // the header row starts a table and is not kept
			inTable = true
			continue
		}
		if strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "| "), " |"), " | ")
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, `\|`, "|")
		}
		tables[len(tables)-1] = append(tables[len(tables)-1], cells)
	}
	if len(tables) != 2 {
		return pageTables{}, fmt.Errorf("the generated part holds %d tables, want 2 (runs, then measures)", len(tables))
	}
	return pageTables{runs: tables[0], measures: tables[1]}, nil
}

func renderTables(t pageTables) string {
	var b strings.Builder
	renderTable(&b, runsHeader, t.runs)
	b.WriteString("\n")
	renderTable(&b, measureHeader, t.measures)
	return b.String()
}

func renderTable(b *strings.Builder, header []string, rows [][]string) {
	row := func(cells []string) {
		escaped := make([]string, len(cells))
		for i, c := range cells {
			escaped[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(escaped, " | ") + " |\n")
	}
	row(header)
	b.WriteString(strings.Repeat("|---", len(header)) + "|\n")
	for _, r := range rows {
		row(r)
	}
}
