// Package release packs the plugins into one archive per plugin and platform
// and writes the krew manifests that install them.
package release

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"
)

// Platform is one operating system and CPU architecture a release is built for.
type Platform struct {
	OS   string
	Arch string
}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ParsePlatform reads "os/arch", as in GOOS/GOARCH.
func ParsePlatform(s string) (Platform, error) {
	goos, arch, ok := strings.Cut(s, "/")
	if !ok || goos == "" || arch == "" || strings.Contains(arch, "/") {
		return Platform{}, fmt.Errorf("platform %q is not os/arch (e.g. linux/amd64)", s)
	}
	return Platform{OS: goos, Arch: arch}, nil
}

// Archive is the download of one plugin for one platform.
type Archive struct {
	Plugin   string
	Version  string
	Platform Platform
}

// Name is the archive's file name, e.g. kubectl-park_v0.1.0_linux_amd64.tar.gz.
func (a Archive) Name() string {
	ext := ".tar.gz"
	if a.Platform.OS == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("kubectl-%s_%s_%s_%s%s", a.Plugin, a.Version, a.Platform.OS, a.Platform.Arch, ext)
}

// Binary is the plugin executable's name inside the archive.
func (a Archive) Binary() string {
	if a.Platform.OS == "windows" {
		return "kubectl-" + a.Plugin + ".exe"
	}
	return "kubectl-" + a.Plugin
}

// CompletionScript is the name kubectl looks up to complete `kubectl <plugin>`.
func (a Archive) CompletionScript() string { return "kubectl_complete-" + a.Plugin }

// File is one file to put at the top of an archive.
type File struct {
	// Name inside the archive.
	Name string
	// Path on disk.
	Path string
	// Executable files get mode 0755, others 0644.
	Executable bool
}

// Pack writes the files into w as a gzipped tar, or a zip for Windows, the
// formats krew and the users of each platform expect.
func (a Archive) Pack(w io.Writer, files []File) error {
	if a.Platform.OS == "windows" {
		return packZip(w, files)
	}
	return packTarGz(w, files)
}

func packTarGz(w io.Writer, files []File) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if err := addFile(f, func(info os.FileInfo) (io.Writer, error) {
			hdr := &tar.Header{Typeflag: tar.TypeReg, Name: f.Name, Size: info.Size(), Mode: mode(f), ModTime: info.ModTime(), Format: tar.FormatPAX}
			return tw, tw.WriteHeader(hdr)
		}); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("finishing the tar stream: %w", err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("finishing the gzip stream: %w", err)
	}
	return nil
}

func packZip(w io.Writer, files []File) error {
	zw := zip.NewWriter(w)
	for _, f := range files {
		if err := addFile(f, func(info os.FileInfo) (io.Writer, error) {
			hdr := &zip.FileHeader{Name: f.Name, Method: zip.Deflate, Modified: info.ModTime()}
			hdr.SetMode(os.FileMode(mode(f)))
			return zw.CreateHeader(hdr)
		}); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("finishing the zip: %w", err)
	}
	return nil
}

// addFile copies f into the writer that header returns for it.
func addFile(f File, header func(os.FileInfo) (io.Writer, error)) error {
	src, err := os.Open(f.Path)
	if err != nil {
		return fmt.Errorf("opening %s for the archive: %w", f.Path, err)
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return fmt.Errorf("reading %s: %w", f.Path, err)
	}
	w, err := header(info)
	if err != nil {
		return fmt.Errorf("adding %s to the archive: %w", f.Name, err)
	}
	if _, err := io.Copy(w, src); err != nil {
		return fmt.Errorf("copying %s into the archive: %w", f.Path, err)
	}
	return nil
}

func mode(f File) int64 {
	if f.Executable {
		return 0o755
	}
	return 0o644
}
