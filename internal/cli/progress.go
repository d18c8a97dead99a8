package cli

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/kubectl/pkg/util/term"
)

// Progress reports what a long step is doing on stderr: one line rewritten in
// place on a terminal, plain timestamped lines (only when the state changes)
// otherwise, so logs stay readable.
type Progress struct {
	mu   sync.Mutex
	out  io.Writer
	live bool
	now  func() time.Time
	last string
}

// onScreen is the Progress whose live line the terminal shows now: klog's
// lines (client-go's, and -v's requests) are written above that line, not
// into it (logWriter).
var onScreen atomic.Pointer[Progress]

// NewProgress reports to w, live when w is a terminal. The line's text is
// escaped here; its own control sequences go to the stream as they are.
func NewProgress(w io.Writer) *Progress {
	w = raw(w)
	return &Progress{out: w, live: term.IsTerminal(w), now: time.Now}
}

// Update shows the current state.
func (p *Progress) Update(format string, args ...any) {
	if p == nil {
		return
	}
	msg := escapeLine(fmt.Sprintf(format, args...))
	p.mu.Lock()
	defer p.mu.Unlock()
	if msg == p.last {
		return
	}
	p.last = msg
	if p.live {
		fmt.Fprintf(p.out, "\r\033[K%s", msg)
		onScreen.Store(p)
		return
	}
	fmt.Fprintf(p.out, "%s %s\n", p.now().UTC().Format(time.RFC3339), msg)
}

// Printf writes a line of its own (e.g. "node/x drained") without tearing
// the live line: the line is cleared, the message written, the live state
// drawn again. Every writer of a command's stderr that runs beside the
// progress goes through it, so writes never interleave. The line carries
// server text (eviction errors): it is escaped to one line like Update's.
func (p *Progress) Printf(format string, args ...any) {
	if p == nil {
		return
	}
	msg := escapeLine(fmt.Sprintf(format, args...))
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.live {
		fmt.Fprintln(p.out, msg)
		return
	}
	p.above(msg + "\n")
}

// above writes lines above the live line and draws the line again; p.mu is
// held.
func (p *Progress) above(lines string) {
	fmt.Fprintf(p.out, "\r\033[K%s", lines)
	if p.last != "" {
		fmt.Fprint(p.out, p.last)
	}
}

// logAbove writes a log line above the live line, if p's is still on the
// terminal; false: it is not, write the line as it is.
func (p *Progress) logAbove(line string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.live || p.last == "" {
		return false
	}
	p.above(line)
	return true
}

// Done ends the live line with a final message.
func (p *Progress) Done(format string, args ...any) {
	if p == nil {
		return
	}
	p.Update(format, args...)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live {
		fmt.Fprintln(p.out)
		onScreen.CompareAndSwap(p, nil)
	}
	p.last = ""
}

// endLiveLine ends a live line a command left on the terminal, so that what
// is printed after the command (its error) starts a line of its own.
func endLiveLine() {
	if p := onScreen.Swap(nil); p != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.last != "" {
			fmt.Fprintln(p.out)
			p.last = ""
		}
	}
}
