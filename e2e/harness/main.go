package harness

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// SetupTimeout bounds how long a package's setup may take to start its
// clusters: generous, since a loaded 2-core machine may need a restart.
const SetupTimeout = 10 * time.Minute

// Setup starts what a package's tests need in env. run lives until the
// tests end (stand-ins started on it stop before the clusters go); start
// carries the setup deadline. The returned func, if any, runs after the tests.
type Setup func(run, start context.Context, env *Env) (after func(), err error)

// Main is a package's TestMain body: it makes the run's Env, runs setup,
// the tests, and then deletes every cluster, also when setup fails.
func Main(m *testing.M, setup Setup) int {
	run, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, err := NewEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Close()
	start, done := context.WithTimeout(run, SetupTimeout)
	after, err := setup(run, start, env)
	done()
	if err != nil {
		fmt.Fprintln(os.Stderr, "setup:", err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		env.reportStoppedComponents()
		env.keepLogs()
	}
	cancel()
	if after != nil {
		after()
	}
	// A stand-in or component that went wrong fails the run, even when the
	// tests passed: what they proved was proven on a broken bed.
	if err := env.Failures(); err != nil {
		fmt.Fprintln(os.Stderr, "test bed:", err)
		if code == 0 {
			env.keepLogs()
		}
		return 1
	}
	return code
}
