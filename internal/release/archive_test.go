package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

func TestParsePlatform(t *testing.T) {
	p, err := ParsePlatform("darwin/arm64")
	assert.NilError(t, err)
	assert.Equal(t, p, Platform{OS: "darwin", Arch: "arm64"})
	for _, bad := range []string{"linux", "linux/", "/amd64", "linux/amd64/v2"} {
		_, err := ParsePlatform(bad)
		assert.ErrorContains(t, err, "is not os/arch", bad)
	}
}

func TestArchiveNames(t *testing.T) {
	linux := Archive{Plugin: "park", Version: "v0.1.0", Platform: Platform{OS: "linux", Arch: "arm64"}}
	assert.Equal(t, linux.Name(), "kubectl-park_v0.1.0_linux_arm64.tar.gz")
	assert.Equal(t, linux.Binary(), "kubectl-park")
	windows := Archive{Plugin: "park", Version: "v0.1.0", Platform: Platform{OS: "windows", Arch: "amd64"}}
	assert.Equal(t, windows.Name(), "kubectl-park_v0.1.0_windows_amd64.zip")
	assert.Equal(t, windows.Binary(), "kubectl-park.exe")
	assert.Equal(t, windows.CompletionScript(), "kubectl_complete-park")
}

// entry is a file as it comes out of an archive.
type entry struct {
	Mode    os.FileMode
	Content string
}

func TestPackHoldsTheFilesWithTheirModes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		assert.NilError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	files := []File{
		{Name: "kubectl-park", Path: write("bin", "binary"), Executable: true},
		{Name: "LICENSE", Path: write("license", "Apache")},
	}
	want := map[string]entry{"kubectl-park": {0o755, "binary"}, "LICENSE": {0o644, "Apache"}}

	for _, goos := range []string{"linux", "windows"} {
		t.Run(goos, func(t *testing.T) {
			var buf bytes.Buffer
			a := Archive{Plugin: "park", Version: "v0.1.0", Platform: Platform{OS: goos, Arch: "amd64"}}
			assert.NilError(t, a.Pack(&buf, files))
			read := readTarGz
			if goos == "windows" {
				read = readZip
			}
			assert.DeepEqual(t, read(t, buf.Bytes()), want)
		})
	}
}

func readTarGz(t *testing.T, data []byte) map[string]entry {
	gz, err := gzip.NewReader(bytes.NewReader(data))
	assert.NilError(t, err)
	tr := tar.NewReader(gz)
	got := map[string]entry{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return got
		}
		assert.NilError(t, err)
		b, err := io.ReadAll(tr)
		assert.NilError(t, err)
		got[hdr.Name] = entry{hdr.FileInfo().Mode(), string(b)}
	}
}

func readZip(t *testing.T, data []byte) map[string]entry {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	assert.NilError(t, err)
	got := map[string]entry{}
	for _, f := range zr.File {
		rc, err := f.Open()
		assert.NilError(t, err)
		b, err := io.ReadAll(rc)
		assert.NilError(t, err)
		got[f.Name] = entry{f.Mode(), string(b)}
	}
	return got
}
