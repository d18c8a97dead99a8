package bench

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

const pageBefore = `# Performance

Prose a person wrote stays.

` + pageBegin + `

| bench | date | runs each side | load at start | load at end |
|---|---|---|---|---|
| SpokeList | 2026-12-01 | 5 | 2.55 2.61 2.48 | 1.78 2.29 2.38 |
| Drain/4nodes | 2026-12-01 | 5 | 1.72 2.27 2.37 | 2.25 1.65 1.97 |

| bench | measure | spokekit | kubectl | ratio | goal |
|---|---|---|---|---|---|
| Drain/4nodes | fleetdrain node, 4 nodes (s) | 2.90 (2.82–3.21) | 40.5 | 0.07 | ≤ 0.35 |
| SpokeList | spoke list, 2000 spokes (s) | 0.18 | 0.41 | 0.44 | ≤ 0.6 |
| SpokeList | spoke list, 2000 spokes, peak memory (MB) | 52.9 | 83.1 | 0.64 | ≤ 100 MB |
| Size | a goal with a pipe (MB) | 1 | 2 | 0.50 | a \| b |

` + pageEnd + `

What the figures say stays too.
`

// A run of one benchmark replaces that benchmark's rows where they were and
// its run's line, appends a benchmark the page did not have, and leaves every
// other row and the prose around the tables as they were.
func TestUpdatePageReplacesOnlyTheBenchmarksThatRan(t *testing.T) {
	fresh := pageTables{
		runs: [][]string{
			{"SpokeList", "2026-12-04", "5", "0.50 0.60 0.70", "0.80 0.90 1.00"},
			{"SpokeAdd", "2026-12-04", "5", "0.50 0.60 0.70", "0.80 0.90 1.00"},
		},
		measures: [][]string{
			{"SpokeList", "spoke list, 2000 spokes (s)", "0.15", "0.40", "0.38", "≤ 0.6"},
			{"SpokeList", "spoke list, floor (s)", "0.10", "-", "-", "-"},
			{"SpokeAdd", "spoke add --apply (s)", "0.90", "0.30", "3.00", "≤ 1 s over its writes"},
		},
	}
	got, err := updatePage(pageBefore, fresh)
	assert.NilError(t, err)
	want := `# Performance

Prose a person wrote stays.

` + pageBegin + `

| bench | date | runs each side | load at start | load at end |
|---|---|---|---|---|
| SpokeList | 2026-12-04 | 5 | 0.50 0.60 0.70 | 0.80 0.90 1.00 |
| Drain/4nodes | 2026-12-01 | 5 | 1.72 2.27 2.37 | 2.25 1.65 1.97 |
| SpokeAdd | 2026-12-04 | 5 | 0.50 0.60 0.70 | 0.80 0.90 1.00 |

| bench | measure | spokekit | kubectl | ratio | goal |
|---|---|---|---|---|---|
| Drain/4nodes | fleetdrain node, 4 nodes (s) | 2.90 (2.82–3.21) | 40.5 | 0.07 | ≤ 0.35 |
| SpokeList | spoke list, 2000 spokes (s) | 0.15 | 0.40 | 0.38 | ≤ 0.6 |
| SpokeList | spoke list, floor (s) | 0.10 | - | - | - |
| Size | a goal with a pipe (MB) | 1 | 2 | 0.50 | a \| b |
| SpokeAdd | spoke add --apply (s) | 0.90 | 0.30 | 3.00 | ≤ 1 s over its writes |

` + pageEnd + `

What the figures say stays too.
`
	assert.Equal(t, got, want)

	// Nothing ran: the page is written back as it was.
	same, err := updatePage(pageBefore, pageTables{})
	assert.NilError(t, err)
	assert.Equal(t, same, pageBefore)
}

// A page whose generated part is missing or damaged is refused, never
// rewritten from scratch: the rows of the benchmarks that did not run would
// be lost.
func TestUpdatePageRefusesAPageWithoutItsTables(t *testing.T) {
	_, err := updatePage("# Performance\n", pageTables{})
	assert.ErrorContains(t, err, "no generated part")
	_, err = updatePage(pageEnd+"\n"+pageBegin+"\n", pageTables{})
	assert.ErrorContains(t, err, "no generated part")
	_, err = updatePage(pageBegin+"\n| bench |\n|---|\n"+pageEnd, pageTables{})
	assert.ErrorContains(t, err, "holds 1 tables, want 2")
}

// The checked-in page is in the form make bench writes, so its next run
// changes only the rows it measures (a table edited by hand fails here).
func TestThePerformancePageIsWhatMakeBenchWrites(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "performance.md"))
	assert.NilError(t, err)
	got, err := updatePage(string(page), pageTables{})
	assert.NilError(t, err)
	assert.Equal(t, got, string(page))
}
