//go:build e2e

package bench

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/spokekit/spokekit/e2e/harness"
)

// Usage is what one process (or a sequence of them) cost: the wall time
// from its start to its exit, its CPU time (user+sys) and its peak resident
// memory, as wait4 reports them (the figures `/usr/bin/time -v` prints).
// A plugin run through kubectl is one process: kubectl execs the plugin.
type Usage struct {
	Wall   time.Duration
	CPU    time.Duration
	MaxRSS int64 // bytes
}

// plus is u followed by v: times add, the peak is the larger one.
func (u Usage) plus(v Usage) Usage {
	return Usage{Wall: u.Wall + v.Wall, CPU: u.CPU + v.CPU, MaxRSS: max(u.MaxRSS, v.MaxRSS)}
}

// measure runs program and returns its usage; the window is the process
// alone (nothing else of the benchmark runs inside it). A failing command
// fails the benchmark.
func measure(b *testing.B, c harness.Command, program string, args ...string) Usage {
	b.Helper()
	return measureExit(b, c, 0, program, args...)
}

// measureExit is measure for a command whose answer is the exit code want
// (spoke health exits 1 when a spoke is unhealthy); any other fails it.
func measureExit(b *testing.B, c harness.Command, want int, program string, args ...string) Usage {
	b.Helper()
	cmd := c.Exec(program, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if want != 0 && cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == want {
		err = nil
	}
	assert.NilError(b, err, "%s %v: %s", program, args, stderr.String())
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return Usage{Wall: wall, CPU: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), MaxRSS: ru.Maxrss * 1024}
}

// alternate runs each side n times, taking turns and rotating which goes
// first every round (A B, B A, ... or A B C, B C A, ...), so no side always
// runs on the machine another just warmed or loaded.
func alternate(n int, sides ...func(i int)) {
	for i := range n {
		for k := range sides {
			sides[(i+k)%len(sides)](i)
		}
	}
}

func seconds(us []Usage) []float64 {
	out := make([]float64, len(us))
	for i, u := range us {
		out[i] = u.Wall.Seconds()
	}
	return out
}

func cpuMillis(us []Usage) []float64 {
	out := make([]float64, len(us))
	for i, u := range us {
		out[i] = float64(u.CPU.Microseconds()) / 1000
	}
	return out
}

func megabytes(us []Usage) []float64 {
	out := make([]float64, len(us))
	for i, u := range us {
		out[i] = float64(u.MaxRSS) / 1e6
	}
	return out
}

func ctx(b *testing.B, d time.Duration) context.Context {
	b.Helper()
	return harness.Context(b, d)
}

var plugins = []string{"spoke", "fleetdrain", "park"}

// BenchmarkStartup compares the CPU time of `kubectl-<plugin> version` with
// `kubectl version --client`. The plugin binary is run itself: run through
// kubectl, the plugin's start-up comes after kubectl's own, which is the
// other side of the comparison.
func BenchmarkStartup(b *testing.B) {
	c := harness.Command{Tools: env.Tools, Home: b.TempDir()}
	kubectl := filepath.Join(env.Tools.Bin, "kubectl")
	for _, p := range plugins {
		var ours, theirs []Usage
		bin := filepath.Join(env.Tools.Plugins, "kubectl-"+p)
		measure(b, c, bin, "version")
		measure(b, c, kubectl, "version", "--client")
		alternate(2*pairs, func(int) { ours = append(ours, measure(b, c, bin, "version")) },
			func(int) { theirs = append(theirs, measure(b, c, kubectl, "version", "--client")) })
		add(b, "start-up: kubectl-"+p+" version / kubectl version --client", "CPU ms", cpuMillis(ours), cpuMillis(theirs), "≤ 0.2")
	}
}

// BenchmarkSize reports each stripped plugin binary and its gzip'd tar
// archive (as a release ships it) against the pinned kubectl.
func BenchmarkSize(b *testing.B) {
	kubectl := filepath.Join(env.Tools.Bin, "kubectl")
	kb, ka := fileSize(b, kubectl), archiveSize(b, kubectl)
	for _, p := range plugins {
		bin := filepath.Join(env.Tools.Plugins, "kubectl-"+p)
		add(b, "size: kubectl-"+p+" binary", "MB", []float64{fileSize(b, bin)}, []float64{kb}, "≤ 40 MB")
		add(b, "size: kubectl-"+p+" .tar.gz", "MB", []float64{archiveSize(b, bin)}, []float64{ka}, "≤ 12 MB")
	}
}

func fileSize(b *testing.B, path string) float64 {
	b.Helper()
	fi, err := os.Stat(path)
	assert.NilError(b, err)
	return float64(fi.Size()) / 1e6
}

// archiveSize is the size of a tar.gz holding the one file at gzip's
// default level.
func archiveSize(b *testing.B, path string) float64 {
	b.Helper()
	f, err := os.Open(path)
	assert.NilError(b, err)
	defer f.Close() //nolint:errcheck // read only: closing loses nothing
	fi, err := f.Stat()
	assert.NilError(b, err)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	assert.NilError(b, tw.WriteHeader(&tar.Header{Name: filepath.Base(path), Mode: 0o755, Size: fi.Size()}))
	_, err = io.Copy(tw, f)
	assert.NilError(b, err)
	assert.NilError(b, tw.Close())
	assert.NilError(b, gz.Close())
	return float64(buf.Len()) / 1e6
}
