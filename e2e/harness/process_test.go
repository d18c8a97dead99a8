package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// A component's temp files live in the run's workdir, so they go with it:
// OCM's controllers write a serving cert into TMPDIR on every start.
func TestProcessTempFilesStayInTheWorkdir(t *testing.T) {
	env := &Env{Workdir: t.TempDir()}
	p, err := env.StartProcess("probe", nil, "/bin/sh", "-c", "mktemp -d && exec sleep 60")
	assert.NilError(t, err)
	defer p.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var made string
	assert.NilError(t, waitFor(ctx, "the probe's temp dir", func(context.Context) (bool, error) {
		made = strings.TrimSpace(p.Tail(1))
		return made != "", nil
	}))
	assert.Assert(t, strings.HasPrefix(made, filepath.Join(env.Workdir, "tmp")+"/"), "temp dir %q is outside the workdir %s", made, env.Workdir)
	_, err = os.Stat(made)
	assert.NilError(t, err)
}
