package cli

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/internal/exitcode"
)

func TestCredentialFileIsOwnerOnlyAndNeverReplacedUnasked(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.kubeconfig")
	assert.NilError(t, CheckCredentialFile(path, false))
	assert.NilError(t, WriteCredentialFile(path, []byte("first"), false))
	info, err := os.Stat(path)
	assert.NilError(t, err)
	assert.Equal(t, info.Mode().Perm(), os.FileMode(0o600))

	err = CheckCredentialFile(path, false)
	assert.Check(t, exitcode.IsRefused(err))
	assert.Check(t, is.ErrorContains(err, "already exists; nothing was written: pass --overwrite"))
	// A file that appears between the check and the write is not replaced.
	assert.Check(t, WriteCredentialFile(path, []byte("second"), false) != nil)
	data, err := os.ReadFile(path)
	assert.NilError(t, err)
	assert.Equal(t, string(data), "first")

	// --overwrite replaces it, owner-only even if it was not before.
	assert.NilError(t, os.Chmod(path, 0o644))
	assert.NilError(t, CheckCredentialFile(path, true))
	assert.NilError(t, WriteCredentialFile(path, []byte("second"), true))
	data, err = os.ReadFile(path)
	assert.NilError(t, err)
	assert.Equal(t, string(data), "second")
	info, err = os.Stat(path)
	assert.NilError(t, err)
	assert.Equal(t, info.Mode().Perm(), os.FileMode(0o600))
	entries, err := os.ReadDir(dir)
	assert.NilError(t, err)
	assert.Equal(t, len(entries), 1, "no temporary file left")

	assert.Check(t, exitcode.IsRefused(CheckCredentialFile(filepath.Join(dir, "missing", "x"), true)))
	assert.Check(t, exitcode.IsRefused(CheckCredentialFile(dir, true)))
}
