package cli

import (
	"k8s.io/apimachinery/pkg/labels"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// ValidateSelector checks a label selector flag before any request: it must
// parse, and a blank one (" ") is refused. labels.Parse takes a blank
// selector as the empty one, which selects everything: the opposite of what
// a typo or an unset shell variable meant.
func ValidateSelector(flag, value string) error {
	sel, err := labels.Parse(value)
	if err != nil {
		return exitcode.UsageErrorf("invalid %s %q: %v", flag, value, err)
	}
	if value != "" && sel.Empty() {
		return exitcode.UsageErrorf("%s %q is blank and selects everything; give a selector, or leave the flag out", flag, value)
	}
	return nil
}
