package spoke

import (
	"net/http"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// notServed is the API server's answer for a resource it does not serve.
const notServed = `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}`

const spoke1Works = "GET /apis/work.open-cluster-management.io/v1/namespaces/spoke-1/manifestworks"

// A hub that does not serve ManifestWorks, or whose list of them fails,
// shows no work that would block the removal: remove cannot check, so it
// refuses (exit 3) and changes nothing, and status says it cannot tell
// instead of "blocking ManifestWorks: none".
func TestRemovalCannotCheckWorksItCannotList(t *testing.T) {
	for name, answer := range map[string]struct {
		code int
		body string
		want string
	}{
		"not served":  {http.StatusNotFound, notServed, "the hub does not serve ManifestWorks"},
		"list failed": {http.StatusServiceUnavailable, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"ServiceUnavailable","code":503}`, "listing ManifestWorks in namespace spoke-1"},
	} {
		t.Run(name, func(t *testing.T) {
			for _, args := range [][]string{{"remove", "spoke-1"}, {"remove", "spoke-1", "--dry-run=server"}, {"status", "spoke-1"}} {
				srv := hubWithOutOfBandCluster(t, true)
				srv.Respond("GET "+releasePath+"/spokes/spoke-1", http.StatusOK, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke",`+
					`"metadata":{"name":"spoke-1","namespace":"mural-system","creationTimestamp":"2026-11-30T10:00:00Z"},"spec":{"hubRef":{"name":"hub","namespace":"mural-system"}},"status":{"phase":"Running"}}`)
				srv.Respond("GET "+clustersPath+"/spoke-1", http.StatusOK, `{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedCluster","metadata":{"name":"spoke-1"},"spec":{}}`)
				srv.Respond(spoke1Works, answer.code, answer.body)
				code, out, errOut := run(srv, args...)
				assert.Check(t, is.Equal(code, exitcode.Refused), "%v: %s", args, errOut)
				assert.Check(t, is.Contains(errOut, "cannot check the ManifestWorks"), "%v", args)
				assert.Check(t, is.Contains(errOut, answer.want), "%v", args)
				assert.Check(t, is.Equal(out, ""), "%v", args)
				assert.Check(t, count(srv, spoke1Works) > 0, "%v: the works were asked for: %v", args, srv.Requests())
				for _, r := range srv.Requests() {
					assert.Check(t, strings.HasPrefix(r, "GET "), "%v changed something: %s", args, r)
				}
			}
		})
	}
}
