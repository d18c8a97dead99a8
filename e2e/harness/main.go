package harness

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// SetupTimeout bounds what a package or a test prepares before it runs any
// plugin (clusters starting, a cluster a test made coming up, thousands of
// objects): a condition, not a measure, so it is generous; only a failing
// run waits it out. Under three e2e jobs on a slow 2-core machine, a
// control plane needed a restart, Cluster API took more than 5 minutes to
// run two workers of a new cluster (its cluster cache retries a workload
// cluster it cannot reach yet every 30 s), and the hub more than 5 to
// create 2,000 Spokes and their ManagedClusters through their webhooks.
const SetupTimeout = 12 * time.Minute

// Setup starts what a package's tests need in env. run lives until the
// tests end (stand-ins started on it stop before the clusters go); start
// carries the setup deadline. The returned func, if any, runs after the tests.
type Setup func(run, start context.Context, env *Env) (after func(), err error)

// Main is a package's TestMain body: it makes the run's Env, runs setup,
// the tests, and then deletes every cluster, also when setup fails.
func Main(m *testing.M, setup Setup) int {
	env, err := NewEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Close()
	return env.runTests(m.Run, setup)
}

// runTests is Main's body on a made Env: setup, then the tests, then the
// checks of the bed they ran on.
func (e *Env) runTests(tests func() int, setup Setup) int {
	run, cancel := context.WithCancel(context.Background())
	defer cancel()
	start, done := context.WithTimeout(run, SetupTimeout)
	after, err := setup(run, start, e)
	done()
	if err != nil {
		fmt.Fprintln(os.Stderr, "setup:", err)
		// A cluster that never became ready is traced from its
		// components' logs, as a failed test is.
		e.reportStoppedComponents()
		e.keepLogs()
		return 1
	}
	code := tests()
	if code != 0 {
		e.reportStoppedComponents()
		e.keepLogs()
	}
	cancel()
	if after != nil {
		after()
	}
	// A stand-in or component that went wrong fails the run, even when the
	// tests passed: what they proved was proven on a broken bed.
	if err := e.Failures(); err != nil {
		fmt.Fprintln(os.Stderr, "test bed:", err)
		if code == 0 {
			e.keepLogs()
		}
		return 1
	}
	return code
}
