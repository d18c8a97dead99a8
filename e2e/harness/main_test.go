package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

// A setup that fails (a cluster that never became ready) keeps the run's
// logs, as a failed test does: CI's failures are traced from them later.
func TestFailedSetupKeepsTheLogs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	env := &Env{Workdir: t.TempDir()}
	assert.NilError(t, os.MkdirAll(filepath.Join(env.Workdir, "logs"), 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(env.Workdir, "logs", "ocm-hub.log"), []byte("gave up\n"), 0o644))

	code := env.runTests(func() int {
		t.Error("the tests ran after a failed setup")
		return 0
	}, func(context.Context, context.Context, *Env) (func(), error) {
		return nil, errors.New("cluster hub did not become ready")
	})

	assert.Equal(t, code, 1)
	kept, err := filepath.Glob(filepath.Join(tmp, "spokekit-e2e-failed", "*", "processes", "ocm-hub.log"))
	assert.NilError(t, err)
	assert.Equal(t, len(kept), 1, "the setup's logs were not kept under %s", tmp)
}
