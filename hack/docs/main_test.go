package main

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestReferenceIsUpToDate fails when a command's help changed and the
// checked-in reference did not: run `make docs`.
func TestReferenceIsUpToDate(t *testing.T) {
	want := t.TempDir()
	assert.NilError(t, write(want))
	const checkedIn = "../../docs/reference"

	wantNames, err := filepath.Glob(filepath.Join(want, "*.md"))
	assert.NilError(t, err)
	gotNames, err := filepath.Glob(filepath.Join(checkedIn, "*.md"))
	assert.NilError(t, err)
	assert.DeepEqual(t, baseNames(gotNames), baseNames(wantNames))

	for _, name := range wantNames {
		page, err := os.ReadFile(name)
		assert.NilError(t, err)
		got, err := os.ReadFile(filepath.Join(checkedIn, filepath.Base(name)))
		assert.NilError(t, err)
		assert.Check(t, is.Equal(string(got), string(page)), "%s is stale: run make docs", filepath.Base(name))
	}
}

func baseNames(paths []string) []string {
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = filepath.Base(p)
	}
	return names
}
