package health

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/kubeconfig"
	"github.com/spokekit/spokekit/internal/spoke/probe"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// running is a joined, available spoke in phase Running with a valid
// credential: healthy until a case changes it.
func running() Row {
	return Row{Phase: "Running", Joined: "True", Available: "True", ManagedCluster: true, Credential: Credential{State: CredentialValid, Kind: "token"}}
}

func clusterAvailable(status metav1.ConditionStatus, msg string) *ocm.ManagedCluster {
	mc := &ocm.ManagedCluster{}
	mc.Status.Conditions = []metav1.Condition{{Type: ocm.ManagedClusterConditionAvailable, Status: status, Message: msg}}
	return mc
}

func TestJudge(t *testing.T) {
	soon := metav1.NewTime(now.Add(ExpiryWarning - time.Hour))
	later := metav1.NewTime(now.Add(ExpiryWarning + time.Hour))
	for name, c := range map[string]struct {
		row         func(*Row)
		mc          *ocm.ManagedCluster
		problems    []string
		notChecked  []string
		wantHealthy bool
	}{
		"healthy":     {row: func(*Row) {}, wantHealthy: true},
		"not joined":  {row: func(r *Row) { r.ManagedCluster, r.Phase = false, "Joining" }, problems: []string{"no ManagedCluster on the hub: the spoke has not joined"}},
		"no phase":    {row: func(r *Row) { r.Phase = "" }, problems: []string{"phase none"}},
		"out of band": {row: func(r *Row) { r.OutOfBand, r.Phase = true, "OutOfBand" }, wantHealthy: true},
		"unavailable, in the hub's words": {
			row: func(r *Row) { r.Available = "False" }, mc: clusterAvailable(metav1.ConditionFalse, "The kube-apiserver is not ok."),
			problems: []string{"available False: The kube-apiserver is not ok"},
		},
		"join lost":                   {row: func(r *Row) { r.Joined = "Unknown" }, problems: []string{"joined Unknown"}},
		"add-on down":                 {row: func(r *Row) { r.AddOns, r.AddOnsNotAvailable = 2, []string{"agent"} }, problems: []string{"add-on agent not available"}},
		"credential soon":             {row: func(r *Row) { r.Credential = Credential{State: CredentialExpiring, Kind: "token", Expires: &soon} }, problems: []string{"stored credential (token) expiring at " + soon.UTC().Format(time.RFC3339)}},
		"credential purged is normal": {row: func(r *Row) { r.Credential = Credential{State: CredentialPurged} }, wantHealthy: true},
		"deep skipped is not a pass":  {row: func(r *Row) { r.Deep = &probe.Result{Skipped: "no usable stored kubeconfig"} }, notChecked: []string{"not checked: no usable stored kubeconfig"}, wantHealthy: true},
		"deep not reached":            {row: func(r *Row) { r.Deep = &probe.Result{Error: "i/o timeout"} }, problems: []string{"not reached: i/o timeout"}},
		"deep finds the spoke unwell": {
			row: func(r *Row) {
				r.Deep = &probe.Result{Nodes: 2, NodesReady: 1, NotReadyNodes: []string{"n2"}, UnreadySystemPods: []string{"coredns"}, PendingCSRs: []string{"csr-1"}, APIServerCert: &soon, Unchecked: []string{"nodes"}}
			},
			problems: []string{
				"1 of 2 nodes not Ready: n2", "kube-system pods not ready: coredns", "CSRs pending (not approved by this command): csr-1",
				"API server certificate expires at " + soon.UTC().Format(time.RFC3339),
			},
			notChecked: []string{"nodes not readable with the stored kubeconfig"},
		},
		"deep certificate far off": {row: func(r *Row) { r.Deep = &probe.Result{APIServerCert: &later} }, wantHealthy: true},
	} {
		r := running()
		c.row(&r)
		r.Judge(c.mc, now)
		assert.Check(t, is.DeepEqual(r.Problems, c.problems), name)
		assert.Check(t, is.DeepEqual(r.NotChecked, c.notChecked), name)
		assert.Check(t, is.Equal(r.Healthy, c.wantHealthy), name)
	}
}

func TestJudgeExpiry(t *testing.T) {
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	for name, c := range map[string]struct {
		expires *time.Time
		want    string
	}{
		"never":                     {nil, CredentialValid},
		"expired a moment ago":      {at(-time.Second), CredentialExpired},
		"expires now":               {at(0), CredentialExpired},
		"within the warning":        {at(ExpiryWarning - time.Second), CredentialExpiring},
		"at the end of the warning": {at(ExpiryWarning), CredentialValid},
		"far off":                   {at(400 * 24 * time.Hour), CredentialValid},
	} {
		got := JudgeExpiry(kubeconfig.Credential{Kind: "client certificate", Expires: c.expires}, now)
		assert.Check(t, is.Equal(got.State, c.want), name)
		assert.Check(t, is.Equal(got.Kind, "client certificate"), name)
		assert.Check(t, is.Equal(got.Problem() != "", c.want == CredentialExpired || c.want == CredentialExpiring), name)
	}
}

func TestCredentialProblem(t *testing.T) {
	for state, problem := range map[string]string{
		CredentialMissing: "stored kubeconfig missing: gone", CredentialRefused: "stored kubeconfig refused: gone", CredentialInvalid: "stored kubeconfig invalid: gone",
		CredentialValid: "", CredentialPurged: "", CredentialNone: "", CredentialNotReadable: "", CredentialUnknown: "",
	} {
		assert.Check(t, is.Equal(Credential{State: state, Detail: "gone"}.Problem(), problem), state)
	}
}
