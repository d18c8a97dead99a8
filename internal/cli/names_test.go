package cli

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spokekit/spokekit/internal/exitcode"
)

func TestValidateNames(t *testing.T) {
	for _, tc := range []struct {
		kind NameKind
		name string
		want string
	}{
		{ClusterName, "../x", `"../x" is not a valid cluster name (an RFC 1123 label: at most 63 characters`},
		{ClusterName, "a/b", "RFC 1123 label"},
		{ClusterName, "UPPER", "RFC 1123 label"},
		{ClusterName, "a.b", "RFC 1123 label"},
		{ClusterName, "", "RFC 1123 label"},
		{NamespaceName, "Bad NS", `"Bad NS" is not a valid namespace`},
		{NodeName, "Node_1", `"Node_1" is not a valid node name (an RFC 1123 subdomain`},
		{SecretName, "x/y", "RFC 1123 subdomain"},
		{CAPIClusterName, "..", "RFC 1123 subdomain"},
	} {
		err := ValidateNames(tc.kind, "ok", tc.name)
		assert.ErrorContains(t, err, tc.want, "%s %q", tc.kind.What, tc.name)
		assert.Equal(t, exitcode.Of(err), exitcode.Usage)
	}
	assert.NilError(t, ValidateNames(NodeName, "ip-10-0-0-1.ec2.internal", "worker-1"))
	assert.NilError(t, ValidateNames(ClusterName, "spoke-1"))
}
