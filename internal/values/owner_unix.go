//go:build unix

package values

import (
	"os"
	"syscall"
)

// keepOwner gives f the owner and group of like, when they differ from
// what a new file gets.
func keepOwner(f *os.File, like os.FileInfo) error {
	want, ok := like.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if have, ok := info.Sys().(*syscall.Stat_t); ok && have.Uid == want.Uid && have.Gid == want.Gid {
		return nil
	}
	return f.Chown(int(want.Uid), int(want.Gid))
}
