package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// CredentialFileMode is the mode of a file that holds a credential: only
// its owner may read it.
const CredentialFileMode = 0o600

// CheckCredentialFile is the check, before any request, that a credential
// may be written to path: its directory exists, and no file is there
// unless overwrite says it may be replaced. Either failure is a refusal
// (exit 3): nothing was written.
func CheckCredentialFile(path string, overwrite bool) error {
	dir := filepath.Dir(path)
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return exitcode.RefusedErrorf("cannot write %s: its directory %s does not exist; nothing was written", path, dir)
	}
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return exitcode.RefusedErrorf("cannot write %s: %w; nothing was written", path, err)
	case info.IsDir():
		return exitcode.RefusedErrorf("cannot write %s: it is a directory; nothing was written", path)
	case !overwrite:
		return exitcode.RefusedErrorf("%s already exists; nothing was written: pass --overwrite to replace it, or choose another --output-file", path)
	}
	return nil
}

// WriteCredentialFile writes data to path with CredentialFileMode. Without
// overwrite it never replaces a file (the create fails if one appeared
// since CheckCredentialFile); with it, a temporary file in the same
// directory takes the old one's place in one rename, so a reader never
// sees half a credential. A failed write leaves no partial file.
func WriteCredentialFile(path string, data []byte, overwrite bool) error {
	if !overwrite {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, CredentialFileMode) //nolint:gosec // the file the user named
		if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		if err := finish(f, data); err != nil {
			_ = os.Remove(path) // best effort: the write already failed, and that error is returned
			return fmt.Errorf("writing %s: %w", path, err)
		}
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(CredentialFileMode); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := finish(tmp, data); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("replacing %s: %w; it was not changed", path, err)
	}
	return nil
}

// finish writes data to f, syncs and closes it.
func finish(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
