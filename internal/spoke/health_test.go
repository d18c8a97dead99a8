package spoke

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/spoke/health"
	"github.com/spokekit/spokekit/internal/spoke/hubclient"
	"github.com/spokekit/spokekit/internal/spoke/probe"
)

// tokenKubeconfig is a kubeconfig whose token is a JWT expiring at exp.
func tokenKubeconfig(exp time.Time) []byte {
	payload := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"exp":%d}`, exp.Unix()))
	return []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: Y2E=}}]
users: [{name: u, user: {token: "eyJhbGciOiJub25lIn0.` + payload + `.c2ln"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
}

func kubeconfigSecret(name string, data []byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "mural-system"}, Data: map[string][]byte{"kubeconfig": data}}
}

// pivotedAndPurging: an addon-mode Spoke (the agent add-on listed) whose
// agent took over, with purgeKubeconfigSecret on.
func pivotedAndPurging(s *fleetconfig.Spoke) {
	s.Spec.CleanupConfig.PurgeKubeconfigSecret = true
	s.Spec.AddOns = []fleetconfig.AddOn{{ConfigName: fleetconfig.AgentAddOn}}
	s.Status.Conditions = []fleetconfig.Condition{{Condition: metav1.Condition{Type: fleetconfig.SpokeConditionPivotComplete, Status: metav1.ConditionTrue}, WantStatus: metav1.ConditionTrue}}
}

func TestAssessCredential(t *testing.T) {
	s := newSpoke("spoke-1")
	purged := newSpoke("spoke-1", pivotedAndPurging)
	inCluster := newSpoke("hub-as-spoke", func(s *fleetconfig.Spoke) { s.Spec.Kubeconfig = fleetconfig.Kubeconfig{InCluster: true} })
	forbidden := fmt.Errorf("reading: %w", errForbiddenSecret)
	execKubeconfig := []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {exec: {command: /bin/steal, apiVersion: client.authentication.k8s.io/v1}}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
	for name, c := range map[string]struct {
		spoke   fleetconfig.Spoke
		secret  *corev1.Secret
		readErr error
		want    string
		problem bool
	}{
		"in-cluster":         {inCluster, nil, nil, health.CredentialNone, false},
		"forbidden":          {s, nil, forbidden, health.CredentialNotReadable, false},
		"read failed":        {s, nil, errors.New("timeout"), health.CredentialUnknown, false},
		"purged after pivot": {purged, nil, nil, health.CredentialPurged, false},
		// Unified mode (no agent add-on) keeps the secret: gone is missing.
		"gone in unified mode":   {newSpoke("spoke-1", pivotedAndPurging, func(s *fleetconfig.Spoke) { s.Spec.AddOns = nil }), nil, nil, health.CredentialMissing, true},
		"missing":                {s, nil, nil, health.CredentialMissing, true},
		"runs a program":         {s, kubeconfigSecret("spoke-1-kubeconfig", execKubeconfig), nil, health.CredentialRefused, true},
		"no kubeconfig key":      {s, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "spoke-1-kubeconfig"}}, nil, health.CredentialInvalid, true},
		"valid":                  {s, kubeconfigSecret("spoke-1-kubeconfig", tokenKubeconfig(now.Add(400*24*time.Hour))), nil, health.CredentialValid, false},
		"expires within 30 days": {s, kubeconfigSecret("spoke-1-kubeconfig", tokenKubeconfig(now.Add(10*24*time.Hour))), nil, health.CredentialExpiring, true},
		"expired":                {s, kubeconfigSecret("spoke-1-kubeconfig", tokenKubeconfig(now.Add(-time.Hour))), nil, health.CredentialExpired, true},
	} {
		got, kc := assessCredential(&c.spoke, c.secret, c.readErr, now)
		assert.Check(t, is.Equal(got.State, c.want), "%s: %+v", name, got)
		assert.Check(t, is.Equal(got.Problem() != "", c.problem), "%s: %+v", name, got)
		assert.Check(t, is.Equal(kc != nil, got.Kind != ""), "%s: a kubeconfig for a usable credential only", name)
	}
}

var errForbiddenSecret = apierrors.NewForbidden(secretResource.GroupResource(), "spoke-1-kubeconfig", errors.New("RBAC"))

// fleetInStates is a fleet with a spoke in each state health tells apart.
func fleetInStates() healthInput {
	unavailable := func(name string, status metav1.ConditionStatus, msg, taint string) ocm.ManagedCluster {
		mc := newCluster(name, status, taint)
		mc.Status.Conditions[1].Message = msg
		return mc
	}
	clusters := []ocm.ManagedCluster{
		newCluster("joined", metav1.ConditionTrue),
		unavailable("agent-stopped", metav1.ConditionUnknown, "Registration agent stopped updating its lease.", ocm.TaintUnreachable),
		unavailable("apiserver-stopped", metav1.ConditionFalse, "The kube-apiserver is not ok, status code: 0, dial tcp 127.0.0.1:1: connect: connection refused", ocm.TaintUnavailable),
		newCluster("purged", metav1.ConditionTrue),
		newCluster("drained", metav1.ConditionTrue, ocm.DrainTaintKey),
		newCluster("expiring", metav1.ConditionTrue),
		newCluster("addon-down", metav1.ConditionTrue),
		newCluster("hub-as-spoke", metav1.ConditionTrue),
		newCluster("edge-oob", metav1.ConditionTrue),
	}
	for i := range clusters {
		clusters[i].Status.Version.Kubernetes = "v1.37.2"
	}
	spokes := []fleetconfig.Spoke{
		newSpoke("joined"), newSpoke("agent-stopped"),
		newSpoke("apiserver-stopped", func(s *fleetconfig.Spoke) { s.Status.Phase = fleetconfig.SpokePhaseUnhealthy }),
		newSpoke("purged", pivotedAndPurging), newSpoke("drained"), newSpoke("expiring"), newSpoke("addon-down"),
		newSpoke("hub-as-spoke", func(s *fleetconfig.Spoke) { s.Spec.Kubeconfig = fleetconfig.Kubeconfig{InCluster: true} }),
		newSpoke("not-joined", func(s *fleetconfig.Spoke) { s.Status.Phase = fleetconfig.SpokePhaseJoining }),
	}
	creds := map[string]health.Credential{}
	for i := range spokes {
		s := &spokes[i]
		var sec *corev1.Secret
		switch s.Name {
		case "purged":
		case "expiring":
			sec = kubeconfigSecret(s.Name+"-kubeconfig", tokenKubeconfig(now.Add(10*24*time.Hour)))
		default:
			sec = kubeconfigSecret(s.Name+"-kubeconfig", tokenKubeconfig(now.Add(400*24*time.Hour)))
		}
		creds[healthKey(s.Namespace, s.Name)], _ = assessCredential(s, sec, nil, now)
	}
	leases := map[string]time.Time{}
	for _, mc := range clusters {
		leases[mc.Name] = now.Add(-20 * time.Second)
	}
	leases["agent-stopped"] = now.Add(-6 * time.Minute)
	return healthInput{
		Spokes: spokes, Clusters: clusters, Leases: leases, Credentials: creds, OutOfBand: true,
		AddOns: []addOnState{
			{Cluster: "joined", Name: fleetconfig.AgentAddOn, Available: "True"},
			{Cluster: "addon-down", Name: fleetconfig.AgentAddOn, Available: "Unknown"},
			{Cluster: "addon-down", Name: "governance-policy-framework", Available: "True"},
		},
	}
}

func printHealth(t *testing.T, rows []health.Row, deep bool, format string) string {
	t.Helper()
	r := HealthReport{Kind: "SpokeHealthList", Items: rows, deep: deep}
	o := cli.NewOutput()
	*o.PrintFlags.OutputFormat = format
	var buf bytes.Buffer
	assert.NilError(t, o.Print(&buf, r, func() cli.Table { return r.Table(now) }))
	return buf.String()
}

func TestHealthOfEveryState(t *testing.T) {
	rows := AssessHealth(fleetInStates(), now)
	golden.Assert(t, printHealth(t, rows, false, "wide"), "health.golden")
	var unhealthy []string
	for _, r := range rows {
		if !r.Healthy {
			unhealthy = append(unhealthy, r.Metadata.Name)
		}
	}
	assert.DeepEqual(t, unhealthy, []string{"addon-down", "agent-stopped", "apiserver-stopped", "expiring", "not-joined"})
	err := HealthReport{Items: rows}.unhealthy()
	assert.Equal(t, exitcode.Of(err), exitcode.Failed)
	assert.ErrorContains(t, err, "5 of 10 spokes unhealthy: addon-down, agent-stopped, apiserver-stopped, expiring, not-joined")
	assert.NilError(t, HealthReport{Items: rows[6:7]}.unhealthy(), "a healthy fleet exits 0")
	clitest.AssertPrintsInEveryFormat(t, HealthReport{Kind: "SpokeHealthList", Items: rows}, func() cli.Table { return HealthReport{Items: rows}.Table(now) })
}

func TestDeepHealth(t *testing.T) {
	in := fleetInStates()
	certSoon := metav1.NewTime(now.Add(5 * 24 * time.Hour))
	certLater := metav1.NewTime(now.Add(300 * 24 * time.Hour))
	in.Deep = map[string]*probe.Result{
		"mural-system/joined":            {Nodes: 3, NodesReady: 3, APIServerCert: &certLater},
		"mural-system/agent-stopped":     {Nodes: 2, NodesReady: 1, NotReadyNodes: []string{"worker-2"}, UnreadySystemPods: []string{"coredns-7d9f"}, PendingCSRs: []string{"csr-x8k2p"}, APIServerCert: &certLater},
		"mural-system/apiserver-stopped": {Error: "no answer within --spoke-timeout 10s"},
		"mural-system/purged":            {Skipped: "no usable stored kubeconfig (credential purged)"},
		"mural-system/drained":           {Nodes: 1, NodesReady: 1, APIServerCert: &certSoon},
		"mural-system/expiring":          {Nodes: 1, NodesReady: 1, Unchecked: []string{"kube-system pods", "certificatesigningrequests"}, APIServerCert: &certLater},
		"mural-system/addon-down":        {Nodes: 0, NodesReady: 0, APIServerCert: &certLater},
		"mural-system/hub-as-spoke":      {Skipped: "no usable stored kubeconfig (credential none)"},
		"mural-system/not-joined":        {Error: "Get \"https://10.0.0.9:6443/version\": dial tcp 10.0.0.9:6443: i/o timeout"},
	}
	rows := AssessHealth(in, now)
	golden.Assert(t, printHealth(t, rows, true, "wide"), "health-deep.golden")
	var got map[string]any
	assert.NilError(t, json.Unmarshal([]byte(printHealth(t, rows, true, "json")), &got))
	assert.Equal(t, got["kind"], "SpokeHealthList")
}

// The hub view reads each kind with one list, and no Secret: the stored
// credential's expiry is the one recorded on the Spoke.
func TestHealthReadsOneListPerKind(t *testing.T) {
	srv := hubWithOutOfBandCluster(t, true)
	srv.Respond("GET /apis/coordination.k8s.io/v1/leases", 200, `{"apiVersion":"coordination.k8s.io/v1","kind":"LeaseList","metadata":{},"items":[
		{"metadata":{"name":"managed-cluster-lease","namespace":"spoke-1"},"spec":{"renewTime":"2026-11-30T11:59:40.000000Z"}}]}`)
	srv.Respond("GET /apis/addon.open-cluster-management.io/v1alpha1/managedclusteraddons", 200, `{"apiVersion":"addon.open-cluster-management.io/v1alpha1","kind":"ManagedClusterAddOnList","metadata":{},"items":[
		{"metadata":{"name":"fleetconfig-controller-agent","namespace":"spoke-1"},"status":{"conditions":[{"type":"Available","status":"True","reason":"r","message":"m","lastTransitionTime":"2026-11-30T10:00:02Z"}]}}]}`)
	code, out, errOut := run(srv, "health", "-n", "mural-system", "-o", "wide")
	assert.Equal(t, code, exitcode.OK, "%s%s", out, errOut)
	assert.Check(t, is.Regexp(`(?m)^spoke-1\s+Running\s+True\s+True\s+\S+\s+1/1\s+-\s+-\s+2127-06-01 \(client certificate\)\s+Healthy\s+<none>$`, out))
	assert.Check(t, is.Regexp(`(?m)^edge-9\s+OutOfBand\s+True\s+True\s+-\s+0/0\s+-\s+-\s+none\s+Healthy`, out), "without --deep nothing goes unchecked")
	for _, kind := range []string{"GET " + releasePath + "/spokes", "GET " + clustersPath, "GET /apis/coordination.k8s.io/v1/leases?", "GET /apis/addon.open-cluster-management.io/v1alpha1/managedclusteraddons?"} {
		assert.Check(t, is.Equal(count(srv, kind), 1), "%s: %v", kind, srv.Requests())
	}
	assert.Check(t, is.Equal(count(srv, "GET /api/v1/namespaces/mural-system/secrets"), 0), "no Secret is read: %v", srv.Requests())
	assert.Check(t, is.Contains(srv.Requests(), "GET /apis/coordination.k8s.io/v1/leases?fieldSelector=metadata.name%3Dmanaged-cluster-lease&limit=500"))

	// With --deep the Secret is read on its own (the spoke's kubeconfig is
	// this same server), and the spoke answers for its nodes, kube-system
	// pods and CSRs.
	kc, err := os.ReadFile(srv.Kubeconfig)
	assert.NilError(t, err)
	srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 200, secretJSON("spoke-1-kubeconfig", kc))
	srv.Respond("GET /version", 200, `{"gitVersion":"v1.37.2"}`)
	srv.Respond("GET /api/v1/nodes", 200, `{"apiVersion":"v1","kind":"NodeList","metadata":{},"items":[
		{"metadata":{"name":"n1"},"status":{"conditions":[{"type":"Ready","status":"True"}]}},{"metadata":{"name":"n2"},"status":{"conditions":[{"type":"Ready","status":"False"}]}}]}`)
	srv.Respond("GET /api/v1/namespaces/kube-system/pods", 200, `{"apiVersion":"v1","kind":"PodList","metadata":{},"items":[
		{"metadata":{"name":"etcd-1"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}},{"metadata":{"name":"coredns-1"},"status":{"phase":"Pending"}}]}`)
	srv.Respond("GET /apis/certificates.k8s.io/v1/certificatesigningrequests", 200, `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequestList","metadata":{},"items":[
		{"metadata":{"name":"csr-1"},"spec":{"request":"","signerName":"x","usages":[]},"status":{}},{"metadata":{"name":"csr-2"},"spec":{"request":"","signerName":"x","usages":[]},"status":{"conditions":[{"type":"Approved","status":"True"}]}}]}`)
	code, out, errOut = run(srv, "health", "-n", "mural-system", "--deep", "-o", "wide")
	assert.Equal(t, code, exitcode.Failed, "%s%s", out, errOut)
	assert.Check(t, is.Regexp(`(?m)^spoke-1\s+Running\s+True\s+True\s+\S+\s+1/1\s+-\s+-\s+never \(token\)\s+1/2\s+1\s+1\s+\d{4}-\d\d-\d\d\s+Unhealthy\s+1 of 2 nodes not Ready: n2; kube-system pods not ready: coredns-1; CSRs pending \(not approved by this command\): csr-1$`, out))
	assert.Check(t, is.Regexp(`(?m)^edge-9\s+OutOfBand\s+.*\s+skipped\s+-\s+-\s+-\s+Unchecked\s+not checked: joined out of band: the hub stores no kubeconfig$`, out))
	assert.Check(t, is.Contains(errOut, "1 of 2 spokes unhealthy: spoke-1; --deep could not check 1: edge-9"))

	// A spoke --deep could not check is never a pass: with nothing
	// unhealthy, exit 3. Here spoke-1's nodes are not readable.
	srv.Respond("GET /api/v1/nodes", 403, `{"apiVersion":"v1","kind":"Status","status":"Failure","reason":"Forbidden","code":403}`)
	srv.Respond("GET /api/v1/namespaces/kube-system/pods", 200, `{"apiVersion":"v1","kind":"PodList","metadata":{},"items":[]}`)
	srv.Respond("GET /apis/certificates.k8s.io/v1/certificatesigningrequests", 200, `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequestList","metadata":{},"items":[]}`)
	code, out, errOut = run(srv, "health", "spoke-1", "-n", "mural-system", "--deep", "-o", "wide")
	assert.Equal(t, code, exitcode.Refused, "%s%s", out, errOut)
	assert.Check(t, is.Regexp(`(?m)^spoke-1\s+.*\s+not readable\s+0\s+0\s+\S+\s+Unchecked\s+nodes not readable with the stored kubeconfig$`, out))
	assert.Check(t, is.Contains(errOut, "--deep could not check 1 of 1 spokes: spoke-1"))
	for _, r := range srv.Requests() {
		assert.Check(t, !strings.HasPrefix(r, "PUT") && !strings.HasPrefix(r, "PATCH") && !strings.HasPrefix(r, "POST"), "health only reads: %s", r)
	}
}

// A spoke that hangs holds its own slot for --spoke-timeout at most: the
// other spokes are reached, even one at a time.
func TestDeepHealthStalledSpokeHoldsNoOther(t *testing.T) {
	stalled := httptest.NewTLSServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(stalled.Close)
	good := clitest.NewAPIServer(t)
	good.Respond("GET /version", 200, `{}`)
	for _, p := range []string{"/api/v1/nodes", "/api/v1/namespaces/kube-system/pods", "/apis/certificates.k8s.io/v1/certificatesigningrequests"} {
		good.Respond("GET "+p, 200, `{"metadata":{},"items":[]}`)
	}
	hub := &HubClient{hubclient.NewForClients(nil, fake.NewClientset(
		kubeconfigSecret("hangs-kubeconfig", kubeconfigFor(t, stalled)),
		kubeconfigSecret("fine-kubeconfig", mustRead(t, good.Kubeconfig)),
	), "mural-system")}
	spokes := []fleetconfig.Spoke{newSpoke("hangs"), newSpoke("fine")}
	// One at a time: were the stalled spoke not cut off at its timeout,
	// readDeep would never reach the other (and the test would hang). The
	// timeout leaves the healthy one room on a loaded machine.
	_, deep := hub.readDeep(context.Background(), spokes, 1, 3*time.Second, now)
	assert.Check(t, is.Equal(deep["mural-system/hangs"].Error, "no answer within --spoke-timeout 3s"))
	assert.Check(t, is.DeepEqual(*deep["mural-system/fine"], probe.Result{APIServerCert: deep["mural-system/fine"].APIServerCert}))
	assert.Check(t, deep["mural-system/fine"].APIServerCert != nil, "read from the TLS handshake")
}

// kubeconfigFor is a kubeconfig of the test server srv, as a Secret holds one.
func kubeconfigFor(t *testing.T, srv *httptest.Server) []byte {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return []byte("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    server: " + srv.URL +
		"\n    certificate-authority-data: " + base64.StdEncoding.EncodeToString(ca) + "\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n")
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	assert.NilError(t, err)
	return data
}
