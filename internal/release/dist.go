package release

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// krew requires a semantic version with a leading v.
var versionPattern = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// Release is every plugin of one version for every platform.
type Release struct {
	Version   string
	Plugins   []string
	Platforms []Platform
	// BinDir holds the built plugins, one <os>_<arch> directory per platform.
	BinDir string
	// SourceDir is the checkout with LICENSE and
	// plugins/kubectl-<plugin>/kubectl_complete-<plugin>.
	SourceDir string
	// URL is where the archives are downloaded from: URL/<archive name>.
	URL string
}

// Packed is one archive Pack wrote.
type Packed struct {
	Archive
	Path        string
	SHA256      string
	BinarySize  int64
	ArchiveSize int64
}

// Validate rejects what krew would refuse before anything is built.
func (r Release) Validate() error {
	if !versionPattern.MatchString(r.Version) {
		return fmt.Errorf("version %q is not vMAJOR.MINOR.PATCH, as krew requires", r.Version)
	}
	if len(r.Plugins) == 0 || len(r.Platforms) == 0 {
		return fmt.Errorf("a release needs at least one plugin and one platform")
	}
	return nil
}

// Pack writes one archive per plugin and platform into dir, each with a
// <archive>.sha256 file that `sha256sum -c` reads.
func (r Release) Pack(dir string) ([]Packed, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	var packed []Packed
	for _, plugin := range r.Plugins {
		for _, platform := range r.Platforms {
			p, err := r.pack(dir, Archive{Plugin: plugin, Version: r.Version, Platform: platform})
			if err != nil {
				return nil, err
			}
			packed = append(packed, p)
		}
	}
	return packed, nil
}

func (r Release) pack(dir string, a Archive) (Packed, error) {
	binary := filepath.Join(r.BinDir, a.Platform.OS+"_"+a.Platform.Arch, a.Binary())
	info, err := os.Stat(binary)
	if err != nil {
		return Packed{}, fmt.Errorf("the %s build of kubectl-%s is missing: %w", a.Platform, a.Plugin, err)
	}
	files := []File{
		{Name: a.Binary(), Path: binary, Executable: true},
		{Name: "LICENSE", Path: filepath.Join(r.SourceDir, "LICENSE")},
		{Name: a.CompletionScript(), Path: filepath.Join(r.SourceDir, "plugins", "kubectl-"+a.Plugin, a.CompletionScript()), Executable: true},
	}
	p := Packed{Archive: a, Path: filepath.Join(dir, a.Name()), BinarySize: info.Size()}
	out, err := os.Create(p.Path)
	if err != nil {
		return Packed{}, fmt.Errorf("creating %s: %w", p.Path, err)
	}
	defer out.Close()
	sum := sha256.New()
	if err := a.Pack(io.MultiWriter(out, sum), files); err != nil {
		return Packed{}, fmt.Errorf("packing %s: %w", a.Name(), err)
	}
	if err := out.Close(); err != nil {
		return Packed{}, fmt.Errorf("writing %s: %w", p.Path, err)
	}
	p.SHA256 = hex.EncodeToString(sum.Sum(nil))
	if info, err = os.Stat(p.Path); err != nil {
		return Packed{}, fmt.Errorf("reading %s: %w", p.Path, err)
	}
	p.ArchiveSize = info.Size()
	if err := os.WriteFile(p.Path+".sha256", []byte(p.SHA256+"  "+a.Name()+"\n"), 0o644); err != nil {
		return Packed{}, fmt.Errorf("writing the checksum of %s: %w", a.Name(), err)
	}
	return p, nil
}

// KrewManifests returns the krew manifest of every plugin, pointing at the
// packed archives under r.URL.
func (r Release) KrewManifests(packed []Packed) ([]KrewManifest, error) {
	var manifests []KrewManifest
	for _, plugin := range r.Plugins {
		m := KrewManifest{Plugin: plugin, Version: r.Version}
		for _, p := range packed {
			if p.Plugin == plugin {
				m.Platforms = append(m.Platforms, KrewPlatform{Archive: p.Archive, URI: strings.TrimSuffix(r.URL, "/") + "/" + p.Name(), SHA256: p.SHA256})
			}
		}
		if len(m.Platforms) == 0 {
			return nil, fmt.Errorf("no archive of kubectl-%s was packed", plugin)
		}
		manifests = append(manifests, m)
	}
	return manifests, nil
}
