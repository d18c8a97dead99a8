//go:build !linux

package values

// replace puts tmp in target's place if target still holds want. Without
// an atomic exchange a change in the instant between check and rename can
// still be lost.
func replace(tmp, target string, want []byte) (keep bool, err error) {
	return false, replaceByRename(tmp, target, want)
}
