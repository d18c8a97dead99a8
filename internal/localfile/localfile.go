// Package localfile reads the local files a user names on the command line
// (a kubeconfig, the files it names, values and HelmRelease files,
// custom-columns templates), bounded and regular files only.
package localfile

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// MaxSize bounds a local file read by a command (a kubeconfig, the
// files it names, values and HelmRelease files, custom-columns templates).
// What they hold ends up in a Secret or an object, which holds at most
// 1 MiB, so anything larger is not one of them.
const MaxSize = 1 << 20

// Read reads a local file the user named: a regular file of at most
// limit bytes. A device (/dev/zero), FIFO or socket would be read forever,
// or block the open itself, so they are refused before any read. The info
// is that of the file read (not of a name swapped in meanwhile).
func Read(path string, limit int64) ([]byte, os.FileInfo, error) {
	// O_NONBLOCK: opening a FIFO without a writer returns at once instead
	// of waiting; for a regular file it changes nothing.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) //nolint:gosec // a file the user named: bounded and regular files only, below
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close() //nolint:errcheck // read only: closing loses nothing
	info, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is %s, not a regular file", path, fileKind(info.Mode()))
	}
	tooBig := fmt.Errorf("%s is larger than %d bytes, the most such a file may have here", path, limit)
	if info.Size() > limit {
		return nil, nil, tooBig
	}
	// The file may grow after the stat: read one byte past the limit to see it.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, nil, tooBig
	}
	return data, info, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}
