//go:build e2e

package spoke

import (
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
)

// `spoke list -A` shows the spokes of every namespace with a NAMESPACE
// column, and -l keeps those whose labels match, as kubectl get does.
func TestListAllNamespacesAndSelector(t *testing.T) {
	c := ctx(t)
	for _, s := range []struct{ ns, name, env string }{
		{"list-sel-a", "lsel-1", "prod"}, {"list-sel-b", "lsel-2", "prod"}, {"list-sel-b", "lsel-3", "dev"},
	} {
		_, err := hub.Kube.CoreV1().Namespaces().Create(c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			assert.NilError(t, err)
		}
		obj := newSpokeIn(s.ns, s.name, nil)
		obj.SetLabels(map[string]string{"env": s.env, "e2e-test": "list-selectors"})
		ri := hub.Dynamic.Resource(fleetconfig.SpokeResource).Namespace(s.ns)
		_, err = ri.Create(c, obj, metav1.CreateOptions{})
		assert.NilError(t, err)
		t.Cleanup(func() { _ = ri.Delete(ctx(t), s.name, metav1.DeleteOptions{}) })
	}

	r := spoke(t, "list", "-A", "-l", "e2e-test=list-selectors,env=prod")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Regexp(`^NAMESPACE\s+NAME\s+PHASE\s+JOINED\s+AVAILABLE\s+AGE\n`, r.Stdout))
	var rows []string
	for _, m := range regexp.MustCompile(`(?m)^(\S+)\s+(lsel-\d)\s`).FindAllStringSubmatch(r.Stdout, -1) {
		rows = append(rows, m[1]+"/"+m[2])
	}
	assert.DeepEqual(t, rows, []string{"list-sel-a/lsel-1", "list-sel-b/lsel-2"})

	r = spoke(t, "list", "-n", "list-sel-b", "-l", "env=dev", "-o", "name")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Equal(t, r.Stdout, "spoke.fleetconfig.open-cluster-management.io/lsel-3\n")
	// -o name is what kubectl takes, as kubectl get -o name's is.
	got := harness.Kubectl(t, hub.For(t.TempDir()), "get", "-n", "list-sel-b", strings.TrimSpace(r.Stdout), "-o", "name")
	assert.Equal(t, got.Stdout, r.Stdout, got)
	r = spoke(t, "list", "-n", "list-sel-b", "-l", "env=dev", "--no-headers")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Regexp(`^lsel-3\s[^\n]*\n$`, r.Stdout), r)

	r = spoke(t, "list", "-n", "list-sel-a", "-l", "env=dev")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Equal(t, r.Stdout, "")
	assert.Check(t, is.Contains(r.Stderr, "No spokes found in namespace list-sel-a matching env=dev."))
}
