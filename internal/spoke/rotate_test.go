package spoke

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/helmrelease"
	"github.com/spokekit/spokekit/internal/kubeconfig"
	"github.com/spokekit/spokekit/internal/values"
)

const spokeJSON = `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"%s","namespace":"mural-system","uid":"u-%s","resourceVersion":"5"},"spec":{"kubeconfig":{"secretReference":{"name":"%s","kubeconfigKey":"kubeconfig"}}}}`

func secretJSON(name string, data []byte) string {
	return `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"` + name + `","namespace":"mural-system","resourceVersion":"11"},"data":{"kubeconfig":"` + base64.StdEncoding.EncodeToString(data) + `"}}`
}

// rotatingFleet has spoke-1 (secret spoke-1-kubeconfig) on a hub that is
// also spoke-1's cluster, so the stored and the new kubeconfig both reach it.
func rotatingFleet(t *testing.T, others ...string) (*clitest.APIServer, []byte) {
	t.Helper()
	srv := clitest.NewAPIServer(t)
	kc, err := os.ReadFile(srv.Kubeconfig)
	assert.NilError(t, err)
	srv.Respond("GET /api/v1/namespaces/kube-system", 200, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kube-system","uid":"ks-1"}}`)
	srv.Respond("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews", 201, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}`)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, fmt.Sprintf(spokeJSON, "spoke-1", "spoke-1", "spoke-1-kubeconfig"))
	srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 200, secretJSON("spoke-1-kubeconfig", kc))
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/hubs", 200,
		`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"HubList","metadata":{},"items":[{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Hub","metadata":{"name":"hub","namespace":"mural-system"},"spec":{"kubeconfig":{"secretReference":{"name":"hub-kubeconfig"}}}}]}`)
	items := fmt.Sprintf(spokeJSON, "spoke-1", "spoke-1", "spoke-1-kubeconfig")
	for _, o := range others {
		items += "," + o
	}
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes", 200, `{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"SpokeList","metadata":{},"items":[`+items+`]}`)
	return srv, kc
}

func TestRotateIntoAnotherSecret(t *testing.T) {
	t.Run("a secret that holds no kubeconfig is refused", func(t *testing.T) {
		srv, _ := rotatingFleet(t)
		srv.Respond("GET /api/v1/namespaces/mural-system/secrets/db-password", 200, secretJSON("db-password", []byte("hunter2")))
		code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--secret", "db-password")
		assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
		assert.Check(t, is.Contains(errOut, "secret mural-system/db-password exists"))
		assert.Check(t, is.Len(writes(srv), 0))
	})
	t.Run("a secret of the same cluster that another spoke uses is refused", func(t *testing.T) {
		srv, kc := rotatingFleet(t, fmt.Sprintf(spokeJSON, "spoke-9", "spoke-9", "shared-kubeconfig"))
		srv.Respond("GET /api/v1/namespaces/mural-system/secrets/shared-kubeconfig", 200, secretJSON("shared-kubeconfig", kc))
		code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--secret", "shared-kubeconfig")
		assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
		assert.Check(t, is.Contains(errOut, "is the kubeconfig of spoke spoke-9"))
		assert.Check(t, is.Len(writes(srv), 0))
	})
	t.Run("the Hub's kubeconfig secret is refused", func(t *testing.T) {
		srv, kc := rotatingFleet(t)
		srv.Respond("GET /api/v1/namespaces/mural-system/secrets/hub-kubeconfig", 200, secretJSON("hub-kubeconfig", kc))
		code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--secret", "hub-kubeconfig")
		assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
		assert.Check(t, is.Contains(errOut, "is the kubeconfig of Hub hub"))
		assert.Check(t, is.Len(writes(srv), 0))
	})
	t.Run("another spoke's purged secret is refused though it does not exist", func(t *testing.T) {
		srv, _ := rotatingFleet(t, fmt.Sprintf(spokeJSON, "spoke-9", "spoke-9", "spoke-9-kubeconfig"))
		srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-9-kubeconfig", 404, notFound)
		srv.Respond("POST /api/v1/namespaces/mural-system/secrets", 201, secretJSON("spoke-9-kubeconfig", nil))
		code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--secret", "spoke-9-kubeconfig")
		assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
		assert.Check(t, is.Contains(errOut, "is the kubeconfig of spoke spoke-9"))
		assert.Check(t, is.Len(writes(srv), 0))
	})
	t.Run("a managedClusterKubeconfig secret is refused", func(t *testing.T) {
		hosted := `{"metadata":{"name":"spoke-8","namespace":"mural-system"},"spec":{"kubeconfig":{"secretReference":{"name":"x"}},"klusterlet":{"mode":"Hosted","managedClusterKubeconfig":{"secretReference":{"name":"spoke-8-managed"}}}}}`
		srv, _ := rotatingFleet(t, hosted)
		srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-8-managed", 404, notFound)
		code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--secret", "spoke-8-managed")
		assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
		assert.Check(t, is.Contains(errOut, "is the managedClusterKubeconfig of spoke spoke-8"))
		assert.Check(t, is.Len(writes(srv), 0))
	})
	t.Run("a new secret is created, never overwritten", func(t *testing.T) {
		srv, _ := rotatingFleet(t)
		srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig-2027", 404, notFound)
		srv.Respond("POST /api/v1/namespaces/mural-system/secrets", 201, secretJSON("spoke-1-kubeconfig-2027", nil))
		srv.Respond("PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, fmt.Sprintf(spokeJSON, "spoke-1", "spoke-1", "spoke-1-kubeconfig-2027"))
		code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--secret", "spoke-1-kubeconfig-2027")
		assert.Check(t, is.Equal(code, exitcode.OK), errOut)
		assert.Check(t, is.DeepEqual(writes(srv), []string{
			"POST /api/v1/namespaces/mural-system/secrets?fieldManager=kubectl-spoke",
			"PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1?fieldManager=kubectl-spoke",
		}))
	})
	t.Run("an unused secret of the same cluster is updated with its resourceVersion", func(t *testing.T) {
		srv, kc := rotatingFleet(t)
		srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-old", 200, secretJSON("spoke-1-old", kc))
		srv.Respond("PUT /api/v1/namespaces/mural-system/secrets/spoke-1-old", 200, secretJSON("spoke-1-old", kc))
		srv.Respond("PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, fmt.Sprintf(spokeJSON, "spoke-1", "spoke-1", "spoke-1-old"))
		code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--secret", "spoke-1-old")
		assert.Check(t, is.Equal(code, exitcode.OK), errOut)
		assert.Check(t, is.DeepEqual(writes(srv), []string{
			"PUT /api/v1/namespaces/mural-system/secrets/spoke-1-old?fieldManager=kubectl-spoke",
			"PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1?fieldManager=kubectl-spoke",
		}))
	})
}

// A purged secret leaves nothing to rotate: said, exit 3, nothing written.
func TestRotateOfAPurgedSecret(t *testing.T) {
	srv, _ := rotatingFleet(t)
	srv.Respond("GET /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200,
		`{"apiVersion":"fleetconfig.open-cluster-management.io/v1beta1","kind":"Spoke","metadata":{"name":"spoke-1","namespace":"mural-system","uid":"u1"},"spec":{"kubeconfig":{"secretReference":{"name":"spoke-1-kubeconfig"}},"addOns":[{"configName":"fleetconfig-controller-agent"}],"cleanupConfig":{"purgeKubeconfigSecret":true}},"status":{"conditions":[{"type":"PivotComplete","status":"True","wantStatus":"True","reason":"ReconcileSuccess","message":"","lastTransitionTime":"2026-11-30T12:00:00Z"}]}}`)
	srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 404, notFound)
	code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig)
	assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
	assert.Check(t, is.Contains(errOut, "was purged once the agent on the spoke took it over"))
	assert.Check(t, is.Contains(errOut, "nothing to rotate"))
	assert.Check(t, is.Len(writes(srv), 0))
}

// TestPlanRotate shows the plan for a rotation in place and into another
// secret, with and without a values file.
func TestPlanRotate(t *testing.T) {
	spoke := newSpoke("spoke-1", helmRendered)
	spoke.UID, spoke.ResourceVersion = "u-1", "41"
	unmarked := newSpoke("spoke-1")
	unmarked.UID, unmarked.ResourceVersion = "u-1", "41"
	current := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "spoke-1-kubeconfig", Namespace: "mural-system", ResourceVersion: "9"}}
	file := func(data string) *values.File {
		return &values.File{Path: "values.yaml", Kind: values.HelmValues, Data: []byte(data)}
	}
	repointed, _, err := values.SetSecret([]byte(planValues), values.HelmValues, "spoke-1", "spoke-1-2027")
	assert.NilError(t, err)
	cases := []struct {
		name   string
		secret string
		file   *values.File
		spoke  *fleetconfig.Spoke
	}{
		{"in place", "", nil, nil},
		{"into the secret it uses, with its file", "spoke-1-kubeconfig", file(planValues), nil},
		{"into a new secret, Helm-rendered, no file", "spoke-1-2027", nil, nil},
		{"into a new secret, with its file", "spoke-1-2027", file(planValues), nil},
		{"into a new secret, the file already names it", "spoke-1-2027", file(string(repointed)), nil},
		// The seed's job model: no Helm marks, and the job re-applies the entry.
		{"into a new secret, no Helm marks, no file", "spoke-1-2027", nil, &unmarked},
	}
	var out strings.Builder
	for _, tc := range cases {
		if tc.spoke == nil {
			tc.spoke = &spoke
		}
		p, err := planRotate(&RotateOptions{writeTarget: writeTarget{Name: "spoke-1"}, Secret: tc.secret}, rotateFacts{Namespace: "mural-system", Spoke: tc.spoke, Current: current, Kubeconfig: []byte("new"), File: tc.file})
		assert.NilError(t, err, tc.name)
		describePlan(t, &out, tc.name, p, p.Edited, func(dry cli.DryRun) []Step {
			r := &RotateReport{Secret: "spoke-1-kubeconfig"}
			p.fill(r, dry)
			return []Step{{"secret", r.Secret}, {"result", r.Result}, {"values", r.Values}, {"warnings", strings.Join(r.Warnings, "; ")}}
		})
	}
	golden.Assert(t, out.String(), "rotate-plans.golden")
}

func rotateValuesFile(t *testing.T, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values.yaml")
	assert.NilError(t, os.WriteFile(p, []byte(data), 0o600))
	return p
}

func TestRotateWithValues(t *testing.T) {
	t.Run("--values without --secret is a usage error", func(t *testing.T) {
		clitest.AssertExitBeforeAnyRequest(t, NewCmdSpoke, exitcode.Usage, "and --release go with --secret",
			[]string{"rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", "x", "--values", "v.yaml"},
			[]string{"rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", "x", "--helmrelease", "v.yaml"})
	})
	t.Run("a file without the spoke's entry is refused before any write", func(t *testing.T) {
		srv, _ := rotatingFleet(t)
		srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-2027", 404, notFound)
		other := strings.Replace(planValues, "name: spoke-1\n", "name: spoke-9\n", 1)
		file := rotateValuesFile(t, other)
		code, _, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--secret", "spoke-1-2027", "--values", file)
		assert.Check(t, is.Equal(code, exitcode.Refused), errOut)
		assert.Check(t, is.Contains(errOut, "has no entry for spoke-1 in fleetConfig.spokes (entries: spoke-9); nothing was changed"))
		assert.Check(t, is.Len(writes(srv), 0))
		data, err := os.ReadFile(file)
		assert.NilError(t, err)
		assert.Check(t, is.Equal(string(data), other))
	})
	for _, dry := range []string{"none", "client"} {
		t.Run("the entry is pointed at the new secret, dry run "+dry, func(t *testing.T) {
			srv, _ := rotatingFleet(t)
			srv.Respond("GET /api/v1/namespaces/mural-system/secrets/spoke-1-2027", 404, notFound)
			srv.Respond("POST /api/v1/namespaces/mural-system/secrets", 201, secretJSON("spoke-1-2027", nil))
			srv.Respond("PATCH /apis/fleetconfig.open-cluster-management.io/v1beta1/namespaces/mural-system/spokes/spoke-1", 200, fmt.Sprintf(spokeJSON, "spoke-1", "spoke-1", "spoke-1-2027"))
			file := rotateValuesFile(t, planValues)
			code, out, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig, "--secret", "spoke-1-2027", "--values", file, "--dry-run="+dry, "-o", "jsonpath={.values}")
			assert.Check(t, is.Equal(code, exitcode.OK), errOut)
			data, err := os.ReadFile(file)
			assert.NilError(t, err)
			if dry == "client" {
				assert.Check(t, is.Equal(out, "entry would name spoke-1-2027"))
				assert.Check(t, is.Len(writes(srv), 0))
				assert.Check(t, is.Equal(string(data), planValues))
				return
			}
			assert.Check(t, is.Equal(out, "entry now names spoke-1-2027"))
			assert.Check(t, is.Len(writes(srv), 2))
			want, _, err := values.SetSecret([]byte(planValues), values.HelmValues, "spoke-1", "spoke-1-2027")
			assert.NilError(t, err)
			assert.Check(t, is.Equal(string(data), string(want)))
		})
	}
}

// The rotation in place is an update carrying the resourceVersion read: a
// secret changed in between fails it with the message add gives too.
func TestRotateInPlaceConflict(t *testing.T) {
	srv, _ := rotatingFleet(t)
	srv.Respond("PUT /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig", 409,
		`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict","code":409,"message":"the object has been modified"}`)
	code, out, errOut := runSpoke(srv, "rotate-kubeconfig", "spoke-1", "--spoke-kubeconfig", srv.Kubeconfig)
	assert.Check(t, is.Equal(code, exitcode.Failed), errOut)
	assert.Check(t, is.Contains(errOut, "secret mural-system/spoke-1-kubeconfig was created or changed by someone else while this command ran; nothing was changed"))
	assert.Check(t, is.Equal(out, ""))
	assert.Check(t, is.DeepEqual(writes(srv), []string{"PUT /api/v1/namespaces/mural-system/secrets/spoke-1-kubeconfig?fieldManager=kubectl-spoke"}))
}

// The repoint patch goes through a status update in between, not through a
// Spoke made again or pointed elsewhere by someone else.
func TestRepointPatch(t *testing.T) {
	read := newSpoke("spoke-1", func(s *fleetconfig.Spoke) { s.UID, s.ResourceVersion = "u-1", "41" })
	read.Spec.Kubeconfig.SecretReference.KubeconfigKey = "kubeconfig"
	rec := Record{Secret: "spoke-1-2027", Credential: kubeconfig.Credential{Kind: "token"}, ClusterUID: "ks-1"}
	patch := repointPatch(&read, "spoke-1-2027", rec)
	busy := read
	busy.ResourceVersion, busy.Status.Phase = "42", fleetconfig.SpokePhaseUnhealthy
	after, err := applyPatch(t, busy, patch)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(after.Spec.Kubeconfig.SecretReference, &fleetconfig.SecretReference{Name: "spoke-1-2027", KubeconfigKey: "kubeconfig"}))
	got, err := readRecord(after)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(got, rec), "the new secret is recorded in the same patch")

	again := busy
	again.UID = "u-2"
	_, err = applyPatch(t, again, patch)
	assert.Check(t, err != nil, "a Spoke made again under the name is not patched")

	moved := busy
	moved.Spec.Kubeconfig.SecretReference = &fleetconfig.SecretReference{Name: "someone-elses", KubeconfigKey: "kubeconfig"}
	_, err = applyPatch(t, moved, patch)
	assert.Check(t, err != nil, "a reference someone else changed in between is not overwritten")
}

// With --secret, --values and --release, the table says what happened to
// both: the file's entry and the release's revision.
func TestRotateTableShowsTheReleaseBesideTheFile(t *testing.T) {
	p := &rotatePlan{
		SecretName: "s-2027", Patch: []api.PatchOp{{Op: "test"}}, Values: repointEntry,
		Release: &releaseUpgrade{Name: "mural", Revision: 4, NewRevision: 5, change: &helmrelease.Change{}},
	}
	r := &RotateReport{ReportMeta: api.NewNamespacedReportMeta("SpokeKubeconfigRotation", "mural-system", "spoke-1")}
	p.fill(r, cli.DryRunNone)
	var out strings.Builder
	assert.NilError(t, cli.NewOutput().Print(&out, r, r.table))
	assert.Check(t, is.Contains(out.String(), "entry now names s-2027"))
	assert.Check(t, is.Contains(out.String(), "revision 5 made from 4, only fleetConfig.spokes changed"))
}
