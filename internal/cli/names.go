package cli

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// NameKind is a kind of object name with the rule the API server holds it
// to. Checking it before the first request turns "../x" or "UPPER" into a
// usage error (exit 2) instead of a 404, a misleading "already deleted" or a
// request to an unintended path.
type NameKind struct {
	// What the name names, for the error message ("spoke name").
	What string
	// Rule is the rule in words, for the error message.
	Rule  string
	check func(string) []string
}

const (
	labelRule     = "an RFC 1123 label: at most 63 characters, lowercase letters, digits and '-', starting and ending with a letter or digit"
	subdomainRule = "an RFC 1123 subdomain: at most 253 characters, lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
)

// The kinds of names the plugins take.
var (
	// NamespaceName is a namespace: an RFC 1123 label.
	NamespaceName = NameKind{"namespace", labelRule, validation.IsDNS1123Label}
	// ClusterName is a spoke or ManagedCluster: an RFC 1123 label, because
	// the hub makes a namespace of that name for it.
	ClusterName = NameKind{"cluster name", labelRule, validation.IsDNS1123Label}
	// NodeName is a Node: an RFC 1123 subdomain.
	NodeName = NameKind{"node name", subdomainRule, validation.IsDNS1123Subdomain}
	// SecretName is a Secret: an RFC 1123 subdomain.
	SecretName = NameKind{"secret name", subdomainRule, validation.IsDNS1123Subdomain}
	// CAPIClusterName is a Cluster API Cluster: an RFC 1123 subdomain.
	CAPIClusterName = NameKind{"Cluster API cluster name", subdomainRule, validation.IsDNS1123Subdomain}
)

// ValidateNames returns a usage error (exit 2) naming the rule for the first
// name that breaks it.
func ValidateNames(kind NameKind, names ...string) error {
	for _, n := range names {
		if errs := kind.check(n); len(errs) > 0 {
			return exitcode.UsageErrorf("%q is not a valid %s (%s): %s", n, kind.What, kind.Rule, strings.Join(errs, "; "))
		}
	}
	return nil
}

// ValidateNamespace checks the namespace the command will use (-n, or the
// kubeconfig context's), reading only the kubeconfig.
func (f *Factory) ValidateNamespace() error {
	ns, _, err := f.Namespace()
	if err != nil {
		return err
	}
	return ValidateNames(NamespaceName, ns)
}
