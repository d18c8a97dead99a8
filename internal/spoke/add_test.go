package spoke

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
	"github.com/spokekit/spokekit/internal/values"
)

const notFound = `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`

// fakeFleet is a hub with one Hub in mural-system that is also the spoke
// cluster to add (the kubeconfig reaches it and may do everything), with no
// spoke-1 yet.
func fakeFleet(t *testing.T) *clitest.APIServer {
	t.Helper()
	srv := clitest.NewAPIServer(t)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/hubs", 200,
		`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"HubList","metadata":{},"items":[{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Hub","metadata":{"name":"hub","namespace":"mural-system"}}]}`)
	srv.Respond("GET /api/v1/namespaces/kube-system", 200, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kube-system","uid":"ks-1"}}`)
	srv.Respond("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 201, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}`)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 404, notFound)
	srv.Respond("GET /apis/cluster.open-cluster-management.io/v1/managedclusters/spoke-1", 404, notFound)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes", 200, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"SpokeList","metadata":{},"items":[]}`)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/spokes", 200, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"SpokeList","metadata":{},"items":[]}`)
	// Unified mode: no agent add-on registered.
	srv.Respond("GET /apis/addon.open-cluster-management.io/v1alpha1/clustermanagementaddons/fleetconfig-controller-agent", 404, notFound)
	// Never joined to any hub: no klusterlet bootstrap kubeconfig.
	srv.Respond("GET /api/v1/namespaces/open-cluster-management-agent/secrets/bootstrap-hub-kubeconfig", 404, notFound)
	return srv
}

func runSpoke(srv *clitest.APIServer, args ...string) (int, string, string) {
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	code := cli.Execute(NewCmdSpoke(streams), append(args, "-n", "mural-system", "--kubeconfig", srv.Kubeconfig), streams)
	return code, out.String(), errOut.String()
}

// writes are the requests that change something (access, rules and
// self-subject reviews only ask).
func writes(srv *clitest.APIServer) []string {
	var out []string
	for _, r := range srv.Requests() {
		if !strings.HasPrefix(r, "GET ") && !strings.Contains(r, "/apis/authorization.k8s.io/") && !strings.Contains(r, "selfsubjectreviews") {
			out = append(out, r)
		}
	}
	return out
}

func TestAddRefusesToReplaceASecretThatIsNotAKubeconfig(t *testing.T) {
	srv := fakeFleet(t)
	srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 200,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"spoke-1-kubeconfig","namespace":"mural-system","resourceVersion":"9"},"data":{"kubeconfig":"`+base64.StdEncoding.EncodeToString([]byte("someone's notes"))+`"}}`)
	code, _, errOut := runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig)
	assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
	assert.Check(t, is.Contains(errOut, "pass --overwrite"))
	assert.Check(t, is.Len(writes(srv), 0))

	// With --overwrite: an update guarded by the resourceVersion read, not a forced apply.
	srv.Respond("PUT /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 200, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"spoke-1-kubeconfig"}}`)
	code, _, errOut = runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--overwrite")
	assert.Check(t, is.Equal(code, exitcode.OK), errOut)
	assert.Check(t, is.DeepEqual(writes(srv), []string{"PUT /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig?fieldManager=kubectl-spoke"}))
	sent, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(srv.Body("PUT /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig")), nil, nil)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(sent.(*corev1.Secret).ResourceVersion, "9"), "the update is guarded by the resourceVersion read")
}

func TestAddCreatesOnly(t *testing.T) {
	srv := fakeFleet(t)
	srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 404, notFound)
	srv.Respond("POST /api/v1/namespaces/mural-system/secrets", 201, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"spoke-1-kubeconfig"}}`)
	srv.Respond("POST /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes", 201, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-1","namespace":"mural-system"}}`)
	code, _, errOut := runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--apply")
	assert.Check(t, is.Equal(code, exitcode.OK), errOut)
	assert.Check(t, is.DeepEqual(writes(srv), []string{
		"POST /api/v1/namespaces/mural-system/secrets?fieldManager=kubectl-spoke",
		"POST /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes?fieldManager=kubectl-spoke",
	}))
}

// planValues is a values file with one entry, spoke-1.
const planValues = `fleetConfig:
  spokes:
  # the first spoke
  - name: spoke-1
    kubeconfig:
      secretReference: {name: spoke-1-kubeconfig, kubeconfigKey: kubeconfig}
    ociRegistry:
      endpoint: oci://registry.example.com/mural
`

func planHub() *fleetconfig.Hub {
	return &fleetconfig.Hub{ObjectMeta: metav1.ObjectMeta{
		Name: "hub", Namespace: "mural-system",
		Annotations: map[string]string{fleetconfig.HelmReleaseNameAnnotation: "mural"},
	}}
}

// TestPlanAdd shows, for what add can find, the plan and the steps it
// prints, written and under a dry run.
func TestPlanAdd(t *testing.T) {
	expires := now.Add(365 * 24 * time.Hour)
	cred := kubeconfig.Credential{Kind: "client certificate", Expires: &expires}
	secret := func(data string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "spoke-2-kubeconfig", Namespace: "mural-system", ResourceVersion: "9"},
			Data:       map[string][]byte{fleetconfig.DefaultKubeconfigKey: []byte(data)},
		}
	}
	file := func(data string) *values.File {
		return &values.File{Path: "values.yaml", Kind: values.HelmValues, Data: []byte(data)}
	}
	withSpoke := planValues + "  - name: spoke-2\n    kubeconfig:\n      secretReference: {name: spoke-2-kubeconfig}\n"
	existing := newSpoke("spoke-2")
	cases := []struct {
		name  string
		opts  AddOptions
		facts addFacts
	}{
		{"new, values file, apply", AddOptions{Apply: true}, addFacts{File: file(planValues), HelmOwned: true}},
		{"new, values file, apply, the release's job applies the Spokes: no Helm marks", AddOptions{Apply: true}, addFacts{File: file(planValues)}},
		{"again: all in place", AddOptions{Apply: true}, addFacts{Secret: secret("new"), File: file(withSpoke), Spoke: &existing, HelmOwned: true}},
		{"new credentials of the same cluster, no file", AddOptions{}, addFacts{Secret: secret("old")}},
		{"overwrite a secret of another cluster", AddOptions{Overwrite: true}, addFacts{Secret: secret("old"), SecretHolds: secretHolds{OtherCluster: "kube-system namespace UID"}}},
	}
	var out strings.Builder
	for _, tc := range cases {
		tc.opts.Name, tc.opts.Cleanup = "spoke-2", fleetconfig.ChartCleanupDefaults
		tc.facts.Namespace, tc.facts.Hub, tc.facts.Kubeconfig, tc.facts.Credential = "mural-system", planHub(), []byte("new"), cred
		p, err := planAdd(&tc.opts, tc.facts)
		assert.NilError(t, err, tc.name)
		describePlan(t, &out, tc.name, p, p.Edited, func(dry cli.DryRun) []Step { return p.steps("mural-system", "spoke-2", dry) })
	}
	golden.Assert(t, out.String(), "add-plans.golden")
}

// After the last spoke's removal (spokes: []), add writes the first entry
// again from what it knows: the Hub found and --oci-registry.
func TestPlanAddIntoAnEmptyList(t *testing.T) {
	o := &AddOptions{Cleanup: fleetconfig.ChartCleanupDefaults, ociRegistry: map[string]any{"endpoint": "oci://registry.example.com"}}
	o.Name = "spoke-2"
	f := addFacts{
		Namespace: "mural-system", Hub: planHub(), Kubeconfig: []byte("new"),
		File: &values.File{Path: "v.yaml", Kind: values.HelmValues, Data: []byte("fleetConfig:\n  spokes: []\n")},
	}
	p, err := planAdd(o, f)
	assert.NilError(t, err)
	names, err := values.Names(p.Edited, values.HelmValues)
	assert.NilError(t, err)
	assert.DeepEqual(t, names, []string{"spoke-2"})
	entry, err := values.EntryValues(p.Edited, values.HelmValues, "spoke-2")
	assert.NilError(t, err)
	assert.DeepEqual(t, entry["hubRef"], map[string]any{"name": planHub().Name, "namespace": ""})
	assert.DeepEqual(t, entry["ociRegistry"], map[string]any{"endpoint": "oci://registry.example.com"})
}

func TestPlanAddRefusals(t *testing.T) {
	base := addFacts{
		Namespace: "mural-system", Hub: planHub(), Kubeconfig: []byte("new"),
		Secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "spoke-2-kubeconfig"}, Data: map[string][]byte{"kubeconfig": []byte("old")}},
	}
	for name, tc := range map[string]struct {
		opts    AddOptions
		facts   func(addFacts) addFacts
		wantErr string
	}{
		"secret holds no kubeconfig": {
			AddOptions{},
			func(f addFacts) addFacts { f.SecretHolds.Unreadable = errors.New("not yaml"); return f },
			"does not hold a kubeconfig this command can read (not yaml)",
		},
		"secret of another cluster": {
			AddOptions{},
			func(f addFacts) addFacts { f.SecretHolds.OtherCluster = "server URL"; return f },
			"holds a kubeconfig of another cluster (different server URL)",
		},
		"no entry to copy from": {AddOptions{CopyFrom: "nope"}, func(f addFacts) addFacts {
			f.Secret = nil
			f.File = &values.File{Path: "v.yaml", Kind: values.HelmValues, Data: []byte(planValues)}
			return f
		}, `v.yaml: --copy-from "nope": no such entry`},
		"empty list, no --oci-registry": {AddOptions{}, func(f addFacts) addFacts {
			f.Secret = nil
			f.File = &values.File{Path: "v.yaml", Kind: values.HelmValues, Data: []byte("fleetConfig:\n  spokes: []\n")}
			return f
		}, "give it with --oci-registry"},
	} {
		t.Run(name, func(t *testing.T) {
			tc.opts.Name = "spoke-2"
			_, err := planAdd(&tc.opts, tc.facts(base))
			assert.ErrorContains(t, err, tc.wantErr)
			assert.ErrorContains(t, err, "nothing was changed")
			assert.Check(t, exitcode.IsRefused(err))
		})
	}
}

// describePlan writes a plan for a golden file: its JSON, the file as the
// plan edits it, and the steps printed when written and under a dry run.
func describePlan(t *testing.T, out *strings.Builder, name string, plan any, edited []byte, steps func(cli.DryRun) []Step) {
	t.Helper()
	data, err := json.MarshalIndent(plan, "", "  ")
	assert.NilError(t, err)
	fmt.Fprintf(out, "== %s\n%s\n", name, data)
	if edited != nil {
		fmt.Fprintf(out, "-- edited values\n%s", edited)
	}
	for _, dry := range []cli.DryRun{cli.DryRunNone, cli.DryRunClient} {
		fmt.Fprintf(out, "-- steps, dry run %q\n", cli.DryRunName(dry))
		for _, s := range steps(dry) {
			fmt.Fprintf(out, "%s: %s\n", s.What, s.Result)
		}
	}
}

const agentAddOnPath = "GET /apis/addon.open-cluster-management.io/v1alpha1/clustermanagementaddons/fleetconfig-controller-agent"

// In addon mode (the agent add-on registered on the hub) the Spoke add
// applies lists the agent add-on and the chart's feature gates; a mode
// that cannot be read refuses.
func TestAddInAddonMode(t *testing.T) {
	srv := fakeFleet(t)
	srv.Respond(agentAddOnPath, 200, `{"apiVersion":"addon.open-cluster-management.io/v1alpha1","kind":"ClusterManagementAddOn","metadata":{"name":"fleetconfig-controller-agent"}}`)
	srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 404, notFound)
	code, out, errOut := runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--apply", "--dry-run=client", "-o", "json")
	assert.Assert(t, is.Equal(code, exitcode.OK), errOut)
	var r AddReport
	assert.NilError(t, json.Unmarshal([]byte(out), &r))
	assert.Check(t, is.DeepEqual(r.Spoke.Spec.AddOns, []fleetconfig.AddOn{{ConfigName: fleetconfig.AgentAddOn}}))
	assert.Check(t, is.Equal(r.Spoke.Spec.Klusterlet.FeatureGates, "ClusterClaim=true,RawFeedbackJsonString=true"))

	for _, code := range []int{403, 503} {
		srv.Respond(agentAddOnPath, code, fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"answer %d","code":%d}`, code, code))
		got, _, errOut := runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--apply")
		assert.Check(t, is.Equal(got, exitcode.Refused), errOut)
		assert.Check(t, is.Contains(errOut, "cannot tell whether the hub's FleetConfig controller runs in addon mode"))
	}
	assert.Check(t, is.Len(writes(srv), 0))
}

// existingSpoke1 is spoke-1 registered with its secret spoke-1-kubeconfig.
const existingSpoke1 = `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-1","namespace":"mural-system","uid":"u1"},"spec":{"kubeconfig":{"secretReference":{"name":"spoke-1-kubeconfig","kubeconfigKey":"kubeconfig"}},"cleanupConfig":{"purgeKubeconfigSecret":true}}}`

func managedClusterWithClaim(claim string) string {
	claims := ""
	if claim != "" {
		claims = `,"clusterClaims":[{"name":"id.k8s.io","value":"` + claim + `"}]`
	}
	return `{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedCluster","metadata":{"name":"spoke-1"},"status":{"conditions":[]` + claims + `}}`
}

// A purged secret is no way in: add of an existing Spoke whose secret is
// gone stores the new credential only when the cluster is shown to be the
// Spoke's another way, by the kube-system UID recorded on the Spoke, else
// refuses writing nothing. The id.k8s.io claim, which anyone may read on
// the hub and set on their own cluster, proves nothing.
func TestAddOfASpokeWhoseSecretIsGone(t *testing.T) {
	for name, tc := range map[string]struct {
		recordedUID string
		want        int
		wantErr     string
	}{
		"no UID recorded, the claims match": {"", exitcode.Refused, "recorded no kube-system UID on it"},
		"another cluster recorded":          {"ks-2", exitcode.Refused, "already exists for another cluster (the kube-system UID recorded on it differs"},
		"the same cluster":                  {"ks-1", exitcode.OK, ""},
	} {
		t.Run(name, func(t *testing.T) {
			srv := fakeFleet(t)
			annotations := `{}`
			if tc.recordedUID != "" {
				annotations = `{"spoke.spokekit.io/kube-system-uid":"` + tc.recordedUID + `"}`
			}
			srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, recordedSpokeJSON("spoke-1", "spoke-1-kubeconfig", annotations))
			srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 404, notFound)
			srv.Respond("GET /apis/cluster.open-cluster-management.io/v1/managedclusters/spoke-1", 200, managedClusterWithClaim("c-1"))
			srv.Respond("GET /apis/cluster.open-cluster-management.io/v1alpha1/clusterclaims/id.k8s.io", 200,
				`{"apiVersion":"cluster.open-cluster-management.io/v1alpha1","kind":"ClusterClaim","metadata":{"name":"id.k8s.io"},"spec":{"value":"c-1"}}`)
			srv.Respond("POST /api/v1/namespaces/mural-system/secrets", 201, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"spoke-1-kubeconfig"}}`)
			srv.Respond("PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, existingSpoke1)
			code, _, errOut := runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--overwrite")
			assert.Check(t, is.Equal(code, tc.want), errOut)
			if tc.want != exitcode.OK {
				assert.Check(t, is.Contains(errOut, tc.wantErr))
				assert.Check(t, is.Contains(errOut, "nothing was changed"))
				assert.Check(t, is.Len(writes(srv), 0))
				return
			}
			assert.Check(t, is.DeepEqual(writes(srv), []string{
				"POST /api/v1/namespaces/mural-system/secrets?fieldManager=kubectl-spoke",
				"PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1?fieldManager=kubectl-spoke",
			}))
		})
	}
}

// bootstrapSecret is a klusterlet's bootstrap kubeconfig Secret naming the
// hub at server, trusting ca.
func bootstrapSecret(t *testing.T, server string, ca []byte) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["bootstrap"] = &clientcmdapi.AuthInfo{Token: "t0ken"}
	cfg.Contexts["bootstrap"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "bootstrap"}
	cfg.CurrentContext = "bootstrap"
	data, err := clientcmd.Write(*cfg)
	assert.NilError(t, err)
	return `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bootstrap-hub-kubeconfig","namespace":"open-cluster-management-agent"},"data":{"kubeconfig":"` + base64.StdEncoding.EncodeToString(data) + `"}}`
}

// A cluster whose klusterlet is still registered with another hub is
// refused (exit 3), naming that hub, and nothing is written; one
// registered with this hub (a re-run), reached at another address but
// signed by this hub's CA, or at the Hub's spec.apiServer, is not.
func TestAddRefusesAClusterRegisteredWithAnotherHub(t *testing.T) {
	thisHub, err := clientcmd.LoadFromFile(fakeFleet(t).Kubeconfig)
	assert.NilError(t, err)
	var hubCA []byte
	for _, c := range thisHub.Clusters {
		hubCA = c.CertificateAuthorityData
	}
	otherCA := testCA(t)
	for name, tc := range map[string]struct {
		server, hubAPIServer string
		ca                   []byte
		want                 int
	}{
		"another hub":                          {"https://old-hub.example.com:6443", "", otherCA, exitcode.Refused},
		"another hub, no CA":                   {"https://old-hub.example.com:6443", "", nil, exitcode.Refused},
		"this hub, another address, its CA":    {"https://hub.internal:6443", "", hubCA, exitcode.OK},
		"this hub at the Hub's spec.apiServer": {"https://hub.internal:443/", "https://HUB.internal", otherCA, exitcode.OK},
	} {
		t.Run(name, func(t *testing.T) {
			srv := fakeFleet(t)
			if tc.hubAPIServer != "" {
				srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/hubs", 200,
					`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"HubList","metadata":{},"items":[{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Hub","metadata":{"name":"hub","namespace":"mural-system"},"spec":{"apiServer":"`+tc.hubAPIServer+`"}}]}`)
			}
			srv.Respond("GET /api/v1/namespaces/open-cluster-management-agent/secrets/bootstrap-hub-kubeconfig", 200, bootstrapSecret(t, tc.server, tc.ca))
			srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 404, notFound)
			srv.Respond("POST /api/v1/namespaces/mural-system/secrets", 201, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"spoke-1-kubeconfig"}}`)
			code, _, errOut := runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig)
			assert.Check(t, is.Equal(code, tc.want), errOut)
			if tc.want == exitcode.Refused {
				assert.Check(t, is.Contains(errOut, "still registered with another hub"))
				assert.Check(t, is.Contains(errOut, "names the hub at "+tc.server))
				assert.Check(t, is.Contains(errOut, "remove it from that hub first"))
				assert.Check(t, is.Len(writes(srv), 0))
			}
		})
	}

	// A registration that cannot be read is no pass.
	srv := fakeFleet(t)
	srv.Respond("GET /api/v1/namespaces/open-cluster-management-agent/secrets/bootstrap-hub-kubeconfig", 200,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bootstrap-hub-kubeconfig"},"data":{"kubeconfig":"`+base64.StdEncoding.EncodeToString([]byte("not yaml: ["))+`"}}`)
	code, _, errOut := runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig)
	assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
	assert.Check(t, is.Contains(errOut, "cannot tell whether"))
	assert.Check(t, is.Len(writes(srv), 0))
}

// testCA is a self-signed CA certificate, PEM.
func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	assert.NilError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "old-hub-ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	assert.NilError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// A cluster the hub has already under another name, in any namespace, is
// refused (exit 3) naming that Spoke, told by the kube-system UID recorded
// on it; no Secret of another Spoke is read.
func TestAddRefusesAClusterTheHubHasUnderAnotherName(t *testing.T) {
	srv := fakeFleet(t)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/spokes", 200, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"SpokeList","metadata":{},"items":[`+
		`{"metadata":{"name":"edge-7","namespace":"other-fleet","annotations":{"spoke.spokekit.io/kube-system-uid":"ks-9"}},"spec":{}},`+
		`{"metadata":{"name":"edge-3","namespace":"other-fleet","annotations":{"spoke.spokekit.io/kube-system-uid":"ks-1"}},"spec":{}}]}`)
	srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 404, notFound)
	srv.Respond("POST /api/v1/namespaces/mural-system/secrets", 201, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"spoke-1-kubeconfig"}}`)
	code, _, errOut := runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig)
	assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
	assert.Check(t, is.Contains(errOut, "the hub already has this cluster as spoke other-fleet/edge-3"))
	assert.Check(t, is.Len(writes(srv), 0))
	for _, r := range srv.Requests() {
		assert.Check(t, !strings.Contains(r, "namespaces/other-fleet/secrets"), "another Spoke's Secret was read: %s", r)
	}
}

// A dry run shows the secret add writes, not the metadata of the one there:
// its last-applied-configuration annotation holds the old kubeconfig.
func TestAddDryRunShowsNoneOfTheExistingSecretsMetadata(t *testing.T) {
	srv := fakeFleet(t)
	old := `apiVersion: v1\\nkind: Config\\nusers: [{name: u, user: {token: OLD-TOKEN}}]`
	srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 200,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"spoke-1-kubeconfig","namespace":"mural-system","resourceVersion":"9","labels":{"team":"x"},"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"`+old+`"},"managedFields":[{"manager":"kubectl"}]},"data":{"kubeconfig":"`+base64.StdEncoding.EncodeToString([]byte("notes"))+`"}}`)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/hubs", 200,
		`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"HubList","metadata":{},"items":[{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Hub","metadata":{"name":"hub","namespace":"mural-system"}}]}`)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes", 200, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"SpokeList","metadata":{},"items":[]}`)
	for _, format := range []string{"json", "yaml"} {
		code, out, errOut := runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--overwrite", "--dry-run=client", "-o", format)
		assert.Check(t, is.Equal(code, exitcode.OK), errOut)
		for _, leak := range []string{"last-applied", "OLD-TOKEN", "managedFields", "team", "resourceVersion"} {
			assert.Check(t, !strings.Contains(out, leak), "%s output shows %q:\n%s", format, leak, out)
		}
		assert.Check(t, is.Contains(out, "spoke-1-kubeconfig"))
	}
}

// add --overwrite never writes over a secret the Hub or another Spoke uses.
func TestAddOverwriteRefusesASecretOthersUse(t *testing.T) {
	srv := fakeFleet(t)
	srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 200,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"spoke-1-kubeconfig","namespace":"mural-system","resourceVersion":"9"},"data":{"kubeconfig":"`+base64.StdEncoding.EncodeToString([]byte("notes"))+`"}}`)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/hubs", 200,
		`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"HubList","metadata":{},"items":[{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Hub","metadata":{"name":"hub","namespace":"mural-system"},"spec":{"kubeconfig":{"secretReference":{"name":"spoke-1-kubeconfig"}}}}]}`)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes", 200,
		`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"SpokeList","metadata":{},"items":[{"metadata":{"name":"spoke-9","namespace":"mural-system"},"spec":{"kubeconfig":{"secretReference":{"name":"other"}},"klusterlet":{"managedClusterKubeconfig":{"secretReference":{"name":"spoke-1-kubeconfig"}}}}}]}`)
	code, _, errOut := runSpoke(srv, "add", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--overwrite")
	assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
	assert.Check(t, is.Contains(errOut, "is the kubeconfig of Hub hub and the managedClusterKubeconfig of spoke spoke-9"))
	assert.Check(t, is.Len(writes(srv), 0))
}

// The next step names the helm upgrade (or the Flux manifest) that keeps
// the spoke registered.
func TestAddNextStepNamesTheUpgrade(t *testing.T) {
	hub := planHub()
	o := &AddOptions{writeTarget: writeTarget{Name: "spoke-2", ValuesFile: "values.yaml"}}
	assert.Check(t, is.Contains(o.next(hub), "run `helm upgrade mural CHART -n mural-system -f values.yaml`"))
	o.Apply = true
	assert.Check(t, is.Contains(o.next(hub), "`helm upgrade mural CHART -n mural-system -f values.yaml`"))
	o.ValuesFile = ""
	assert.Check(t, is.Contains(o.next(hub), "the entry `- name: spoke-2` to fleetConfig.spokes"))
	assert.Check(t, is.Contains(o.next(hub), "Flux"))
	o.ReleaseFile = "mural.yaml"
	assert.Check(t, is.Contains(o.next(hub), "commit mural.yaml where Flux reads it"))
	o.Apply = false
	assert.Check(t, is.Contains(o.next(hub), "apply mural.yaml to the hub (or commit it where Flux reads it)"))
}

// hub-as-spoke is the hub's own cluster to FleetConfig: add refuses the
// name before any request.
func TestAddRefusesTheNameHubAsSpoke(t *testing.T) {
	srv := fakeFleet(t)
	code, _, errOut := runSpoke(srv, "add", "hub-as-spoke", "--spoke-kubeconfig", srv.Kubeconfig)
	assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
	assert.Check(t, is.Len(srv.Requests(), 0))
}
