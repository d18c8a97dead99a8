//go:build unix

package values

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/internal/localfile"
)

// A shared values file keeps its group and setgid bit across the atomic
// rewrite. Any user may give a file to a group it is in, so this runs
// without root; root also gives it away to another owner.
func TestWriteKeepsOwnerGroupAndSetgid(t *testing.T) {
	uid, gid := os.Geteuid(), otherGroup(t)
	if uid == 0 {
		uid = 4321
	}
	path := filepath.Join(t.TempDir(), "values.yaml")
	assert.NilError(t, os.WriteFile(path, []byte("a: 1\n"), 0o644))
	assert.NilError(t, os.Chown(path, uid, gid))
	assert.NilError(t, os.Chmod(path, 0o664|os.ModeSetgid))

	f, err := Read(path, HelmValues)
	assert.NilError(t, err)
	assert.NilError(t, f.Write([]byte("a: 2\n")))

	info, err := os.Stat(path)
	assert.NilError(t, err)
	st := info.Sys().(*syscall.Stat_t)
	assert.Check(t, is.Equal(int(st.Uid), uid))
	assert.Check(t, is.Equal(int(st.Gid), gid), "the group of the file it replaced")
	assert.Check(t, is.Equal(info.Mode()&(os.ModePerm|os.ModeSetgid), 0o664|os.ModeSetgid))
}

// otherGroup is a group the test may give a file to that a new file would
// not get anyway: any one for root, else a supplementary group of the user.
func otherGroup(t *testing.T) int {
	t.Helper()
	if os.Geteuid() == 0 {
		return 8765
	}
	groups, err := os.Getgroups()
	assert.NilError(t, err)
	for _, g := range groups {
		if g != os.Getegid() {
			return g
		}
	}
	t.Skip("the user is in no group but its own, so no file can be given to another")
	return 0
}

// A values file is read as any local file: a FIFO is refused at once (it
// blocked the read before), a file past the bound is refused.
func TestReadRefusesFIFOAndHugeFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "values.yaml")
	assert.NilError(t, syscall.Mkfifo(fifo, 0o600))
	_, err := Read(fifo, HelmValues)
	assert.ErrorContains(t, err, "not a regular file")
	big := filepath.Join(dir, "big.yaml")
	assert.NilError(t, os.WriteFile(big, make([]byte, localfile.MaxSize+1), 0o600))
	_, err = Read(big, HelmValues)
	assert.ErrorContains(t, err, "is larger than")
}

// The re-read before the swap is bounded too: a FIFO put in the file's
// place meanwhile does not block the write.
func TestWriteDoesNotBlockOnAFIFOSwappedIn(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "values.yaml")
	assert.NilError(t, os.WriteFile(path, []byte("a: 1\n"), 0o644))
	f, err := Read(path, HelmValues)
	assert.NilError(t, err)
	assert.NilError(t, os.Remove(path))
	assert.NilError(t, syscall.Mkfifo(path, 0o600))
	err = f.Write([]byte("a: 2\n"))
	assert.ErrorContains(t, err, "not a regular file")
}
