package cli

import (
	"bytes"
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

func TestNilProgressIsQuiet(t *testing.T) {
	var p *Progress
	p.Update("x")
	p.Done("y")
}
