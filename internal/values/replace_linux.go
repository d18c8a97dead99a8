package values

import (
	"errors"

	"golang.org/x/sys/unix"
)

// replace puts tmp in target's place if target still holds want. The swap
// is one atomic exchange of the two names, after which the old file is
// checked: a change that landed at the last moment is swapped back, so it is
// never lost. keep is true when the swap back failed and tmp holds the
// other change.
func replace(tmp, target string, want []byte) (keep bool, err error) {
	if err := unchanged(target, want); err != nil {
		return false, err
	}
	afterCheck()
	err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, target, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		// The file system cannot exchange.
		return false, replaceByRename(tmp, target, want)
	}
	if errors.Is(err, unix.ENOENT) {
		return false, errChanged
	}
	if err != nil {
		return false, err
	}
	if unchanged(tmp, want) == nil {
		return false, nil
	}
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, target, unix.RENAME_EXCHANGE); err != nil {
		return true, errChanged
	}
	return false, errChanged
}
