//go:build unix

package values

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestWriteKeepsOwnerGroupAndSetgid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file away to another owner needs root")
	}
	path := filepath.Join(t.TempDir(), "values.yaml")
	assert.NilError(t, os.WriteFile(path, []byte("a: 1\n"), 0o644))
	assert.NilError(t, os.Chown(path, 4321, 8765))
	assert.NilError(t, os.Chmod(path, 0o664|os.ModeSetgid))

	f, err := Read(path, HelmValues)
	assert.NilError(t, err)
	assert.NilError(t, f.Write([]byte("a: 2\n")))

	info, err := os.Stat(path)
	assert.NilError(t, err)
	st := info.Sys().(*syscall.Stat_t)
	assert.Check(t, is.Equal(st.Uid, uint32(4321)))
	assert.Check(t, is.Equal(st.Gid, uint32(8765)))
	assert.Check(t, is.Equal(info.Mode()&(os.ModePerm|os.ModeSetgid), 0o664|os.ModeSetgid))
}
