package values

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/localfile"
)

// File is a values or HelmRelease file as it was read, so that a write can
// tell whether someone else changed it in between.
type File struct {
	// Path is the path as the user gave it (perhaps a symlink).
	Path string
	Kind Kind
	Data []byte
	// target is the regular file Path leads to: the one a write replaces,
	// so a symlink stays a link to the edited file.
	target string
	info   os.FileInfo
}

// Read reads the file at path, following symlinks: a regular file of at
// most localfile.MaxSize bytes (localfile.Read).
func Read(path string, kind Kind) (*File, error) {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	data, info, err := localfile.Read(target, localfile.MaxSize)
	if err != nil {
		return nil, err
	}
	return &File{Path: path, Kind: kind, Data: data, target: target, info: info}, nil
}

// errChanged is a write refused because the file no longer holds what Read saw.
var errChanged = errors.New("changed while this command ran")

// Write replaces the file's content with data atomically: a temporary file
// in the same directory with the file's owner, group and mode (setgid
// included) takes its place. It refuses (exit 3, nothing written) when the
// file no longer holds what Read saw, checked at the moment of the swap.
func (f *File) Write(data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(f.target), "."+filepath.Base(f.target)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", f.Path, err)
	}
	keep := false
	defer func() {
		if !keep {
			_ = os.Remove(tmp.Name()) // best effort: the write already failed, and that error is returned
		}
	}()
	err = writeLike(tmp, data, f.info)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w; it was not changed", f.Path, err)
	}
	keep, err = replace(tmp.Name(), f.target, f.Data)
	switch {
	case errors.Is(err, errChanged) && keep:
		return fmt.Errorf("%s changed while this command ran, and putting the other version back failed: it is in %s; %s holds this command's edit", f.Path, tmp.Name(), f.Path)
	case errors.Is(err, errChanged):
		return exitcode.RefusedErrorf("%s %w; it was not written: run the command again", f.Path, errChanged)
	case err != nil:
		return fmt.Errorf("replacing %s: %w; it was not changed", f.Path, err)
	}
	f.Data = data
	return nil
}

// writeLike writes data into tmp and gives it the owner, group and mode
// of the file it will replace (owner first: a chown clears setgid).
func writeLike(tmp *os.File, data []byte, like os.FileInfo) error {
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := keepOwner(tmp, like); err != nil {
		return fmt.Errorf("keeping the file's owner and group: %w", err)
	}
	if err := tmp.Chmod(like.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)); err != nil {
		return err
	}
	return tmp.Sync()
}

// unchanged says whether the file at path still holds want. It reads as
// Read does: whatever was put in the file's place may be a FIFO.
func unchanged(path string, want []byte) error {
	now, _, err := localfile.Read(path, localfile.MaxSize)
	if err != nil {
		return fmt.Errorf("re-reading it before replacing it: %w", err)
	}
	if !bytes.Equal(now, want) {
		return errChanged
	}
	return nil
}

// replaceByRename is the swap where the system has no atomic exchange: the
// check and the rename are two steps.
func replaceByRename(tmp, target string, want []byte) error {
	if err := unchanged(target, want); err != nil {
		return err
	}
	afterCheck()
	return os.Rename(tmp, target)
}

// afterCheck lets a test change the file at the last moment: after the
// check that it is unchanged, before the swap. A swap that trusted the
// check alone would lose that change.
var afterCheck = func() {}
