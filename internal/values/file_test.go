package values

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spokekit/spokekit/internal/exitcode"
)

func TestWriteKeepsModeAndRefusesChangedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "values.yaml")
	assert.NilError(t, os.WriteFile(path, []byte("a: 1\n"), 0o640))
	f, err := Read(path, HelmValues)
	assert.NilError(t, err)
	assert.NilError(t, f.Write([]byte("a: 2\n")))
	info, err := os.Stat(path)
	assert.NilError(t, err)
	assert.Equal(t, info.Mode().Perm(), os.FileMode(0o640))

	f, err = Read(path, HelmValues)
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(path, []byte("a: 3\n"), 0o640))
	err = f.Write([]byte("a: 4\n"))
	assert.ErrorContains(t, err, "changed while this command ran")
	got, _ := os.ReadFile(path)
	assert.Equal(t, string(got), "a: 3\n")
	entries, _ := os.ReadDir(filepath.Dir(path))
	assert.Equal(t, len(entries), 1, "no temporary file is left behind")
}

// A change that lands after Write compared the file, just before it
// replaces it, must not be lost either: the exchange, not the check, keeps it.
func TestWriteRefusesChangeAtTheLastMoment(t *testing.T) {
	dir := t.TempDir()
	if runtime.GOOS != "linux" {
		t.Skip("only Linux exchanges two files atomically")
	}
	path := filepath.Join(dir, "values.yaml")
	assert.NilError(t, os.WriteFile(path, []byte("a: 1\n"), 0o644))
	f, err := Read(path, HelmValues)
	assert.NilError(t, err)
	t.Cleanup(func() { afterCheck = func() {} })
	afterCheck = func() {
		// An editor saves the way editors do: a new file renamed over the old one.
		other := filepath.Join(dir, "other")
		assert.NilError(t, os.WriteFile(other, []byte("a: 3\n"), 0o644))
		assert.NilError(t, os.Rename(other, path))
	}
	err = f.Write([]byte("a: 2\n"))
	assert.ErrorContains(t, err, "changed while this command ran")
	assert.Equal(t, exitcode.Of(err), exitcode.Refused, "a concurrent change is a refusal (exit 3)")
	got, _ := os.ReadFile(path)
	assert.Equal(t, string(got), "a: 3\n", "the other change is kept")
	entries, _ := os.ReadDir(dir)
	assert.Equal(t, len(entries), 1, "no temporary file is left behind")
}

func TestWriteEditsTheSymlinkTarget(t *testing.T) {
	dir := t.TempDir()
	assert.NilError(t, os.Mkdir(filepath.Join(dir, "real"), 0o755))
	target := filepath.Join(dir, "real", "values.yaml")
	assert.NilError(t, os.WriteFile(target, []byte("a: 1\n"), 0o644))
	link := filepath.Join(dir, "values.yaml")
	assert.NilError(t, os.Symlink(filepath.Join("real", "values.yaml"), link))

	f, err := Read(link, HelmValues)
	assert.NilError(t, err)
	assert.NilError(t, f.Write([]byte("a: 2\n")))

	info, err := os.Lstat(link)
	assert.NilError(t, err)
	assert.Check(t, info.Mode()&os.ModeSymlink != 0, "the link is still a link")
	got, _ := os.ReadFile(target)
	assert.Equal(t, string(got), "a: 2\n", "the target was edited")
}
