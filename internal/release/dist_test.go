package release

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

var linuxAMD64 = Platform{OS: "linux", Arch: "amd64"}

// newRelease lays out what `make dist` has built by the time it packs: a
// checkout with LICENSE and the completion script, and one binary per platform.
func newRelease(t *testing.T, platforms ...Platform) Release {
	src, bin := t.TempDir(), t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(src, "LICENSE"), []byte("Apache License"), 0o644))
	assert.NilError(t, os.MkdirAll(filepath.Join(src, "plugins", "kubectl-park"), 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(src, "plugins", "kubectl-park", "kubectl_complete-park"), []byte("#!/bin/sh\n"), 0o755))
	for _, p := range platforms {
		a := Archive{Plugin: "park", Platform: p}
		dir := filepath.Join(bin, p.OS+"_"+p.Arch)
		assert.NilError(t, os.MkdirAll(dir, 0o755))
		assert.NilError(t, os.WriteFile(filepath.Join(dir, a.Binary()), []byte("binary for "+p.String()), 0o755))
	}
	return Release{Version: "v0.1.0", Plugins: []string{"park"}, Platforms: platforms, BinDir: bin, SourceDir: src, URL: "https://example.com/download/v0.1.0/"}
}

func TestPackWritesArchivesWithChecksums(t *testing.T) {
	windows := Platform{OS: "windows", Arch: "arm64"}
	r := newRelease(t, linuxAMD64, windows)
	out := t.TempDir()
	packed, err := r.Pack(out)
	assert.NilError(t, err)
	assert.Equal(t, len(packed), 2)
	for _, p := range packed {
		data, err := os.ReadFile(p.Path)
		assert.NilError(t, err)
		sum := sha256.Sum256(data)
		assert.Equal(t, p.SHA256, hex.EncodeToString(sum[:]))
		assert.Equal(t, p.ArchiveSize, int64(len(data)))
		assert.Equal(t, p.BinarySize, int64(len("binary for "+p.Platform.String())))
		// The format `sha256sum -c` checks.
		sumFile, err := os.ReadFile(p.Path + ".sha256")
		assert.NilError(t, err)
		assert.Equal(t, string(sumFile), p.SHA256+"  "+p.Name()+"\n")
	}
	assert.Equal(t, filepath.Base(packed[1].Path), "kubectl-park_v0.1.0_windows_arm64.zip")

	manifests, err := r.KrewManifests(packed)
	assert.NilError(t, err)
	assert.Equal(t, len(manifests), 1)
	assert.DeepEqual(t, manifests[0].Platforms, []KrewPlatform{
		{Archive: packed[0].Archive, URI: "https://example.com/download/v0.1.0/kubectl-park_v0.1.0_linux_amd64.tar.gz", SHA256: packed[0].SHA256},
		{Archive: packed[1].Archive, URI: "https://example.com/download/v0.1.0/kubectl-park_v0.1.0_windows_arm64.zip", SHA256: packed[1].SHA256},
	})
}

func TestPackNamesTheMissingBuild(t *testing.T) {
	r := newRelease(t, linuxAMD64)
	r.Platforms = append(r.Platforms, Platform{OS: "darwin", Arch: "arm64"})
	_, err := r.Pack(t.TempDir())
	assert.ErrorContains(t, err, "the darwin/arm64 build of kubectl-park is missing")
}

func TestValidateVersion(t *testing.T) {
	r := newRelease(t, linuxAMD64)
	for _, v := range []string{"v0.1.0", "v1.12.3", "v0.2.0-rc.1"} {
		r.Version = v
		assert.NilError(t, r.Validate(), v)
	}
	for _, v := range []string{"0.1.0", "v0.1", "dev", "9f96be8-dirty", ""} {
		r.Version = v
		err := r.Validate()
		assert.Check(t, is.ErrorContains(err, "is not vMAJOR.MINOR.PATCH"), v)
		assert.Check(t, strings.Contains(err.Error(), `"`+v+`"`), "the error names the version")
	}
}
