//go:build e2e

package spoke

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/internal/api/ocm"
)

// manyNamespace holds many Spokes made directly (no stand-in watches it).
const (
	manyNamespace = "fleet-many"
	manySpokes    = 2000
)

// createManySpokes creates 2,000 Spokes and their ManagedClusters directly
// on this pass's hub (each FleetConfig mode has its own).
func createManySpokes(t testing.TB) {
	t.Helper()
	// 4,000 creates through the stand-in's and OCM's webhooks: over 5
	// minutes in a CI run under load (a Spoke's create took 1.2 s at the median).
	c := harness.Context(t, harness.SetupTimeout)
	_, err := hub.Kube.CoreV1().Namespaces().Create(c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: manyNamespace}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		assert.NilError(t, err)
	}
	names := make([]string, manySpokes)
	for i := range names {
		names[i] = fmt.Sprintf("many-%04d", i)
	}
	assert.NilError(t, harness.CreateUnacceptedSpokes(c, hub.Cluster, manyNamespace, releaseNamespace, names, agentAddOns()))
}

// listRequests reads the hub's count of LIST requests per resource from
// the API server's metrics.
func listRequests(t testing.TB) map[string]float64 {
	t.Helper()
	raw, err := hub.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx(t))
	assert.NilError(t, err)
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `verb="LIST"`) {
			continue
		}
		for _, res := range []string{"spokes", "managedclusters"} {
			if strings.Contains(line, `resource="`+res+`"`) {
				v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
				assert.NilError(t, err)
				out[res] += v
			}
		}
	}
	return out
}

// countLists runs fn with the stand-in paused and returns the LIST
// requests it made, per resource (OCM's controllers watch, they do not list).
func countLists(t testing.TB, fn func()) map[string]float64 {
	t.Helper()
	// Before counting: the first command of a test lists Spokes to forget
	// the clusters earlier tests left (see forgetting).
	forgetEarlierTestsClusters(t)
	resume := standin.Pause()
	defer resume()
	before := listRequests(t)
	fn()
	after := listRequests(t)
	for k := range after {
		after[k] -= before[k]
	}
	return after
}

func pages(n, size int) float64 { return float64((n + size - 1) / size) }

func TestListTwoThousandSpokesInPages(t *testing.T) {
	createManySpokes(t)
	mcs, err := hub.Dynamic.Resource(ocm.ManagedClusterResource).List(ctx(t), metav1.ListOptions{})
	assert.NilError(t, err)

	var r, r200 struct{ out string }
	reqs := countLists(t, func() {
		res := spoke(t, "list", "-n", manyNamespace)
		assert.Equal(t, res.ExitCode, 0, res)
		r.out = res.Stdout
	})
	assert.Equal(t, strings.Count(r.out, "\n"), manySpokes+1, "a header and one row per spoke")
	assert.Check(t, is.Regexp(`(?m)^many-1999\s+<none>\s+Unknown\s+Unknown\s+`, r.out))
	assert.Equal(t, reqs["spokes"], pages(manySpokes, 500), "one paginated LIST of Spokes: %v", reqs)
	assert.Equal(t, reqs["managedclusters"], pages(len(mcs.Items), 500), "one paginated LIST of ManagedClusters: %v", reqs)

	reqs = countLists(t, func() {
		res := spoke(t, "list", "-n", manyNamespace, "--chunk-size", "200", "-o", "name")
		assert.Equal(t, res.ExitCode, 0, res)
		r200.out = res.Stdout
	})
	assert.Equal(t, strings.Count(r200.out, "\n"), manySpokes)
	assert.Equal(t, reqs["spokes"], pages(manySpokes, 200), "%v", reqs)
}
