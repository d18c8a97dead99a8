package values

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// File is a values or HelmRelease file as it was read, so that a write can
// tell whether someone else changed it in between.
type File struct {
	Path string
	Kind Kind
	Data []byte
	mode os.FileMode
}

// Read reads the file at path.
func Read(path string, kind Kind) (*File, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return &File{Path: path, Kind: kind, Data: data, mode: info.Mode().Perm()}, nil
}

// Write replaces the file's content with data atomically (a temporary file
// in the same directory, renamed over it), keeping its mode. It refuses when
// the file no longer holds what Read saw.
func (f *File) Write(data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), "."+filepath.Base(f.Path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", f.Path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", f.Path, err)
	}
	if err := tmp.Chmod(f.mode); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", f.Path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", f.Path, err)
	}
	now, err := os.ReadFile(f.Path)
	if err != nil {
		return fmt.Errorf("re-reading %s before replacing it: %w", f.Path, err)
	}
	if !bytes.Equal(now, f.Data) {
		return fmt.Errorf("%s changed while this command ran; it was not written: run the command again", f.Path)
	}
	if err := os.Rename(tmp.Name(), f.Path); err != nil {
		return fmt.Errorf("replacing %s: %w", f.Path, err)
	}
	f.Data = data
	return nil
}
