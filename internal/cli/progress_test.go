package cli

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

func TestProgressPlainLinesOnlyOnChange(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf)
	p.now = func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }
	p.Update("spoke %s: %s", "spoke-1", "Joining")
	p.Update("spoke %s: %s", "spoke-1", "Joining")
	p.Update("spoke %s: %s", "spoke-1", "Running")
	p.Done("joined")
	assert.Equal(t, buf.String(), ""+
		"2026-11-30T12:00:00Z spoke spoke-1: Joining\n"+
		"2026-11-30T12:00:00Z spoke spoke-1: Running\n"+
		"2026-11-30T12:00:00Z joined\n")
}

func TestProgressLiveRewritesOneLine(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf)
	p.live = true
	p.Update("a")
	p.Update("b")
	p.Done("done")
	assert.Equal(t, buf.String(), "\r\033[Ka\r\033[Kb\r\033[Kdone\n")
}

func TestProgressPrintfKeepsTheLiveLine(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf)
	p.live = true
	p.Update("1/2 nodes drained")
	p.Printf("node/%s drained", "a")
	p.Done("2/2 nodes drained")
	assert.Equal(t, buf.String(), "\r\033[K1/2 nodes drained\r\033[Knode/a drained\n1/2 nodes drained\r\033[K2/2 nodes drained\n")
}

// Lines and updates from many goroutines never race (run with -race).
func TestProgressPrintfAndUpdateFromManyGoroutines(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			p.Update("step %d", i)
			p.Printf("line %d", i)
		})
	}
	wg.Wait()
	assert.Equal(t, strings.Count(buf.String(), "line "), 8)
}

// A nil Progress (a caller with nothing to report to) takes every call and
// writes nothing, not even to the process's own stderr.
func TestNilProgressIsQuiet(t *testing.T) {
	stderr := captureStderr(t)
	var p *Progress
	p.Update("x")
	p.Printf("z")
	p.Done("y")
	assert.Equal(t, stderr(), "")
}

// A log line (client-go's, or -v's requests) written while a live line is
// on the terminal goes above that line, which is drawn again, instead of
// being glued to its end; once the line is done, logs go to stderr.
func TestLogLinesGoAboveTheLiveLine(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf)
	p.live = true
	t.Cleanup(func() { onScreen.Store(nil) })
	p.Update("spoke x: Joining")
	_, err := logWriter{}.Write([]byte("I1205 round_trippers.go:632] \"Response\" status=\"200 OK\"\n"))
	assert.NilError(t, err)
	p.Done("spoke x: Running")
	assert.Equal(t, buf.String(), "\r\033[Kspoke x: Joining"+
		"\r\033[KI1205 round_trippers.go:632] \"Response\" status=\"200 OK\"\nspoke x: Joining"+
		"\r\033[Kspoke x: Running\n")
	assert.Check(t, onScreen.Load() == nil, "a finished line takes no more log lines")
}
