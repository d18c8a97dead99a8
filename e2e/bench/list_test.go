//go:build e2e

package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/e2e/harness"
)

const listNamespace = "fleet-bench"

// BenchmarkSpokeList compares `kubectl spoke list` with what it replaces,
// `kubectl get spokes` followed by `kubectl get managedclusters`, on a hub
// (the OCM and FleetConfig CRDs on a plain cluster, no controllers: the
// objects do not change while it runs) with 2,000 and then 10,000 Spokes
// and as many ManagedClusters.
func BenchmarkSpokeList(b *testing.B) {
	hub, err := env.StartCluster(ctx(b, 10*time.Minute), "bench-hub")
	assert.NilError(b, err)
	assert.NilError(b, harness.InstallHubCRDs(ctx(b, 5*time.Minute), hub))
	_, err = hub.Kube.CoreV1().Namespaces().Create(ctx(b, time.Minute), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: listNamespace}}, metav1.CreateOptions{})
	assert.NilError(b, err)
	c := hub.For(b.TempDir())
	kubectl := func(args ...string) Usage { return measure(b, c, filepath.Join(env.Tools.Bin, "kubectl"), args...) }
	plugin := func() Usage { return kubectl("spoke", "list", "-n", listNamespace) }
	getBoth := func() Usage {
		return kubectl("get", "spokes.fleetconfig.open-cluster-management.io", "-n", listNamespace).
			plus(kubectl("get", "managedclusters"))
	}
	have := 0
	for _, n := range []int{2000, 10000} {
		createSpokes(b, hub, have, n)
		have = n
		// Once each unmeasured: kubectl's discovery cache is warm for both.
		plugin()
		getBoth()
		ourLists := countLists(b, hub, func() { plugin() })
		theirLists := countLists(b, hub, func() { getBoth() })
		var ours, theirs, floors []Usage
		alternate(pairs, func(int) { ours = append(ours, plugin()) }, func(int) { theirs = append(theirs, getBoth()) },
			func(int) { floors = append(floors, floor(b, hub)) })
		what := fmt.Sprintf("spoke list, %d spokes", n)
		add(b, what, "s", seconds(ours), seconds(theirs), "≤ 0.6")
		add(b, what+" / the floor: both LISTs unpaged, in parallel, nothing decoded", "s", seconds(ours), seconds(floors), "≤ 1.5")
		add(b, what+", peak memory", "MB", megabytes(ours), megabytes(theirs), "≤ 100 MB")
		add(b, what+", LIST requests", "spokes+managedclusters", []float64{ourLists}, []float64{theirLists}, fmt.Sprintf("one per page: %d", 2*((n+499)/500)))
		if n == 10000 {
			listBreakdown(b, hub, kubectl, what)
		}
	}
}

// listBreakdown measures where spoke list's time over the floor goes, in
// two rows taken in turns: the two process starts alone (kubectl finding and
// starting the plugin, the plugin's start-up: `kubectl spoke version`), and
// the list unpaged (--chunk-size=0), whose difference to the paged list is
// what paging costs and whose difference to the floor, less the starts, is
// reading, decoding and printing.
func listBreakdown(b *testing.B, hub *harness.Cluster, kubectl func(...string) Usage, what string) {
	b.Helper()
	var starts, unpaged, floors []Usage
	alternate(pairs,
		func(int) { starts = append(starts, kubectl("spoke", "version")) },
		func(int) { unpaged = append(unpaged, kubectl("spoke", "list", "-n", listNamespace, "--chunk-size=0")) },
		func(int) { floors = append(floors, floor(b, hub)) })
	add(b, what+", unpaged (--chunk-size=0) / the floor", "s", seconds(unpaged), seconds(floors), "where the time goes")
	add(b, "kubectl spoke version (the two process starts alone) / the floor", "s", seconds(starts), seconds(floors), "where the time goes")
}

// floor is the least a list of the Spokes and ManagedClusters can take:
// both read whole (no pages) at once over the benchmark's own connection,
// their bodies discarded undecoded. Its window is the two requests alone
// (no process start: the kubectl column of the row is this, not kubectl).
func floor(b *testing.B, hub *harness.Cluster) Usage {
	b.Helper()
	rc := hub.Kube.CoreV1().RESTClient()
	paths := []string{"/apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/" + listNamespace + "/spokes", "/apis/cluster.open-cluster-management.io/v1/managedclusters"}
	var g errgroup.Group
	start := time.Now()
	for _, p := range paths {
		g.Go(func() error {
			body, err := rc.Get().AbsPath(p).Stream(ctx(b, time.Minute))
			if err != nil {
				return err
			}
			defer body.Close() //nolint:errcheck // read only: closing loses nothing
			_, err = io.Copy(io.Discard, body)
			return err
		})
	}
	assert.NilError(b, g.Wait())
	return Usage{Wall: time.Since(start)}
}

// createSpokes creates Spokes and ManagedClusters from index `from` up to
// `to`. The ManagedClusters are not accepted by the hub.
func createSpokes(b *testing.B, hub *harness.Cluster, from, to int) {
	b.Helper()
	names := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		names = append(names, fmt.Sprintf("spoke-%05d", i))
	}
	assert.NilError(b, harness.CreateUnacceptedSpokes(ctx(b, 20*time.Minute), hub, listNamespace, listNamespace, names, nil))
}

// countLists runs fn and returns the LIST requests for Spokes and
// ManagedClusters the API server counted meanwhile (nothing else lists them
// on this cluster).
func countLists(b *testing.B, c *harness.Cluster, fn func()) float64 {
	b.Helper()
	before := requests(b, c, func(verb, resource string) bool {
		return verb == "LIST" && (resource == "spokes" || resource == "managedclusters")
	})
	fn()
	after := requests(b, c, func(verb, resource string) bool {
		return verb == "LIST" && (resource == "spokes" || resource == "managedclusters")
	})
	return after - before
}

// requests sums the API server's apiserver_request_total over the series
// whose verb and resource match.
func requests(b *testing.B, c *harness.Cluster, match func(verb, resource string) bool) float64 {
	b.Helper()
	raw, err := c.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx(b, time.Minute))
	assert.NilError(b, err)
	total := 0.0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		if !match(label(line, "verb"), label(line, "resource")) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		assert.NilError(b, err)
		total += v
	}
	return total
}

func label(line, name string) string {
	_, rest, ok := strings.Cut(line, ","+name+`="`)
	if !ok {
		if _, rest, ok = strings.Cut(line, "{"+name+`="`); !ok {
			return ""
		}
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}
