//go:build e2e

package spoke

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestBadNamesExit2AndChangeNothing(t *testing.T) {
	before := spoke(t, "list", "-o", "name")
	assert.Equal(t, before.ExitCode, 0, before)
	for _, args := range [][]string{
		{"status", "../x"},
		{"status", "a/b"},
		{"remove", "UPPER", "--dry-run=client"},
		{"list", "-n", "Bad NS"},
		{"rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", spoke1.Kubeconfig, "--secret", "../x"},
	} {
		r := spoke(t, args...)
		assert.Check(t, is.Equal(r.ExitCode, 2), "%q: %s", args, r)
		assert.Check(t, is.Contains(r.Stderr, "RFC 1123"), "%q: %s", args, r)
		assert.Check(t, is.Equal(r.Stdout, ""), "%q: %s", args, r)
	}
	after := spoke(t, "list", "-o", "name")
	assert.Equal(t, after.Stdout, before.Stdout, "nothing changed")
}
