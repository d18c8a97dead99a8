package park

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/cli/clitest"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// parkedCluster is threePools parked by park, named name and labelled env=dev.
func parkedCluster(t *testing.T, name string) *capi.Cluster {
	t.Helper()
	c := applyToCluster(t, threePools(), func(c *capi.Cluster) Patch {
		p, err := PlanPark(c, parkedAt, "alice")
		assert.NilError(t, err)
		return p.Patch
	})
	c.Name, c.Labels = name, map[string]string{"env": "dev"}
	return c
}

// bulkPlatform holds the clusters; the user may do anything, and each
// patch of a Cluster is applied as the API server would, then handed to
// onPatch (if set) with the cluster's name.
func bulkPlatform(t *testing.T, onPatch func(name string), clusters ...*capi.Cluster) (*Platform, *patchCount) {
	t.Helper()
	var objs []runtime.Object
	for _, c := range clusters {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
		assert.NilError(t, err)
		u := &unstructured.Unstructured{Object: obj}
		u.SetAPIVersion(capi.Group + "/" + testVersion)
		u.SetKind("Cluster")
		objs = append(objs, u)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{clusterGVR: "ClusterList"}, objs...)
	patches := &patchCount{}
	dyn.PrependReactor("patch", capi.ClusterResource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		stored, err := dyn.Tracker().Get(clusterGVR, pa.GetNamespace(), pa.GetName())
		assert.NilError(t, err)
		err = applyJSONPatch(t, dyn, stored.(*unstructured.Unstructured), pa.GetPatch())
		patches.add(pa.GetName())
		if onPatch != nil {
			onPatch(pa.GetName())
		}
		return true, nil, err
	})
	kube := fake.NewClientset()
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = true
		return true, r, nil
	})
	return &Platform{Dynamic: dyn, Kube: kube, Version: testVersion, Namespace: "dynamo-prod"}, patches
}

type patchCount struct {
	mu    sync.Mutex
	names []string
}

func (p *patchCount) add(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.names = append(p.names, name)
}

func (p *patchCount) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.names)
}

func bulkResume(out io.Writer, maxConcurrent int) *ResumeOptions {
	o := &ResumeOptions{changeOptions: changeOptions{
		IOStreams: genericiooptions.IOStreams{Out: out, ErrOut: io.Discard}, Output: cli.NewOutput(), Namespace: "dynamo-prod",
		progress: cli.NewProgress(io.Discard), bulk: bulk{Selector: "env=dev", MaxConcurrent: maxConcurrent},
	}}
	return o
}

func items(r BulkReport) []string {
	var out []string
	for _, item := range r.Items {
		out = append(out, fmt.Sprintf("%s=%s changed=%v", item.Metadata.Name, item.Result, item.Changed))
	}
	return out
}

// One cluster of the selection cannot be resumed (parked by hand, nothing
// recorded): the whole batch is refused before any patch, and the report
// names the refused cluster and why, the others planned.
func TestBulkResumeRefusesTheBatchWhenOnePlanIsRefused(t *testing.T) {
	byHand := threePools()
	byHand.Name, byHand.Labels = "by-hand", map[string]string{"env": "dev"}
	byHand.Spec.Topology.Workers.MachineDeployments[0].Replicas = int32Ptr(0)
	byHand.Spec.Topology.Workers.MachineDeployments[1].Replicas = int32Ptr(0)
	other := parkedCluster(t, "prod")
	other.Labels = map[string]string{"env": "prod"}
	p, patches := bulkPlatform(t, nil, parkedCluster(t, "a"), byHand, parkedCluster(t, "c"), other)

	var out bytes.Buffer
	o := bulkResume(&out, 2)
	o.Output.PrintFlags.OutputFormat = new(string)
	*o.Output.PrintFlags.OutputFormat = "json"
	err := o.runBulk(context.Background(), p, "resume", BulkResumed, o)
	assert.Equal(t, exitcode.Of(err), exitcode.Refused, "%v", err)
	assert.ErrorContains(t, err, "cannot resume 1 of the 3 selected cluster(s): dynamo-prod/by-hand")
	assert.ErrorContains(t, err, "no cluster was changed")
	assert.Equal(t, patches.count(), 0, "nothing written")

	var report BulkReport
	assert.NilError(t, json.Unmarshal(out.Bytes(), &report))
	assert.DeepEqual(t, items(report), []string{"a=Planned changed=false", "by-hand=Refused changed=false", "c=Planned changed=false"})
	assert.Check(t, is.Contains(report.Items[1].Error, "--replicas N"))
	assert.Equal(t, len(report.Items[0].Changes), 3, "the plan of the others is shown")
}

// Every cluster the selector picks is resumed, two at a time, each in its
// own patch; a second run finds them running and changes nothing.
func TestBulkResumeRunsEveryClusterAndAgainChangesNothing(t *testing.T) {
	p, patches := bulkPlatform(t, nil, parkedCluster(t, "a"), parkedCluster(t, "b"), parkedCluster(t, "c"))
	var out bytes.Buffer
	o := bulkResume(&out, 2)
	assert.NilError(t, o.runBulk(context.Background(), p, "resume", BulkResumed, o))
	assert.Equal(t, patches.count(), 3)
	for _, want := range []string{"NAME", "RESULT", "POOLS", "a", "Resumed", "md-0,md-1,auto"} {
		assert.Check(t, is.Contains(out.String(), want))
	}

	out.Reset()
	assert.NilError(t, o.runBulk(context.Background(), p, "resume", BulkResumed, o))
	assert.Equal(t, patches.count(), 3, "nothing written again")
	assert.Equal(t, strings.Count(out.String(), "Unchanged"), 3, out.String())
}

// Ctrl-C while the second of three clusters is being patched (one at a
// time): the first and second are resumed, the third never starts; the
// report says what changed and where each cluster was left, and the run
// exits 130.
func TestBulkInterruptedSaysWhatChangedAndWhatIsLeft(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	p, patches := bulkPlatform(t, func(name string) {
		if name == "b" {
			cancel(fmt.Errorf("%w by SIGINT", exitcode.ErrInterrupted))
		}
	}, parkedCluster(t, "a"), parkedCluster(t, "b"), parkedCluster(t, "c"))
	var out bytes.Buffer
	o := bulkResume(&out, 1)
	o.Output.PrintFlags.OutputFormat = new(string)
	*o.Output.PrintFlags.OutputFormat = "json"
	err := o.runBulk(ctx, p, "resume", BulkResumed, o)
	assert.Equal(t, exitcode.Of(err), exitcode.Interrupted, "%v", err)
	assert.Equal(t, patches.count(), 2)
	assert.ErrorContains(t, err, "1 of 3 cluster(s) not done: dynamo-prod/c (Interrupted, now Parked); changed by this run: dynamo-prod/a, dynamo-prod/b; run the same command again to finish")

	var report BulkReport
	assert.NilError(t, json.Unmarshal(out.Bytes(), &report))
	assert.DeepEqual(t, items(report), []string{"a=Resumed changed=true", "b=Resumed changed=true", "c=Interrupted changed=false"})
	assert.Check(t, is.Contains(report.Items[2].Error, "not started: interrupted by SIGINT"))
	assert.Equal(t, report.Items[2].StateNow, StateParked)
}

// The exit code of a batch is the worst of its clusters'.
func TestBulkExitCodeIsTheWorstOutcome(t *testing.T) {
	report := func(results ...BulkResult) BulkReport {
		var r BulkReport
		for _, res := range results {
			r.Items = append(r.Items, BulkItem{Result: res, Changed: res == BulkResumed || res == BulkTimedOut})
		}
		return r
	}
	cases := []struct {
		name        string
		report      BulkReport
		interrupted bool
		want        int
	}{
		{"all done", report(BulkResumed, BulkUnchanged), false, exitcode.OK},
		{"one timed out", report(BulkResumed, BulkTimedOut), false, exitcode.TimedOut},
		{"one failed", report(BulkFailed, BulkTimedOut), false, exitcode.Failed},
		{"refused on its run, nothing changed", report(BulkRefused, BulkUnchanged), false, exitcode.Refused},
		{"refused on its run, another changed", report(BulkRefused, BulkResumed), false, exitcode.Failed},
		{"interrupted", report(BulkResumed, BulkInterrupted), true, exitcode.Interrupted},
	}
	for _, tc := range cases {
		assert.Check(t, is.Equal(tc.report.exitCode(tc.interrupted), tc.want), tc.name)
	}
}

func TestBulkFlagsAreCheckedBeforeAnyRequest(t *testing.T) {
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "not both",
		[]string{"cluster", "app", "-l", "env=dev"},
		[]string{"resume", "app", "-l", "env=dev"},
	)
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "name a cluster, or select clusters with -l",
		[]string{"cluster"},
		[]string{"resume", "--wait"},
	)
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "selects everything",
		[]string{"cluster", "-l", " "},
		[]string{"resume", "-A", "--selector", "\t"},
	)
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "-A selects clusters of every namespace with -l",
		[]string{"cluster", "app", "-A"},
	)
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "--max-concurrent must be at least 1",
		[]string{"resume", "-l", "env=dev", "--max-concurrent", "0"},
	)
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "with -l, --wait reaches each cluster through its NAME-kubeconfig secret",
		[]string{"resume", "-l", "env=dev", "--wait", "--cluster-kubeconfig", "app.kubeconfig"},
	)
	clitest.AssertExitBeforeAnyRequest(t, NewCmdPark, exitcode.Usage, "exactly 1 argument (NAME), or none with -l",
		[]string{"cluster", "a", "b"},
	)
}

func TestBulkReportPrintsInEveryFormat(t *testing.T) {
	three, zero := int32(3), int32(0)
	r := BulkReport{ReportMeta: api.NewReportMeta("BulkResumeReport", ""), Items: []BulkItem{{
		ReportMeta: api.NewNamespacedReportMeta("BulkResume", "dynamo-prod", "app"), Result: BulkResumed, Changed: true,
		Changes: []PoolChange{{Kind: MachineDeployments, Name: "md-0", From: PoolState{Replicas: &zero}, To: PoolState{Replicas: &three}}},
		Phases:  resumePhases(resumeView{}),
	}}}
	clitest.AssertPrintsInEveryFormat(t, r, r.table)
}

// The named phases of a resume, from what its wait has seen at each step.
func TestResumePhases(t *testing.T) {
	available := func(status metav1.ConditionStatus, reason, msg string) *capi.Cluster {
		c := threePools()
		c.Status.Conditions = []metav1.Condition{{Type: capi.ClusterControlPlaneAvailableCondition, Status: status, Reason: reason, Message: msg}}
		return c
	}
	v1beta1 := threePools()
	v1beta1.Status.Conditions = []metav1.Condition{{Type: capi.ClusterControlPlaneReadyCondition, Status: metav1.ConditionFalse, Reason: "WaitingForControlPlane"}}
	machine := func(name, phase string, joined bool) capi.Machine {
		m := capi.Machine{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: capi.MachineStatus{Phase: phase}}
		if joined {
			m.Status.NodeRef = &capi.NodeRef{Name: name}
		}
		return m
	}
	back := []capi.Machine{machine("w-1", capi.MachinePhaseRunning, true), machine("w-2", capi.MachinePhaseRunning, true)}
	node := func(name string, ready corev1.ConditionStatus) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
	}
	ready := []corev1.Node{node("w-1", corev1.ConditionTrue), node("w-2", corev1.ConditionTrue)}
	pending := []certificatesv1.CertificateSigningRequest{{ObjectMeta: metav1.ObjectMeta{Name: "csr-w-2"}}}
	healthy := checkedPart{seen: true, done: true, detail: "every health check counts the workers healthy"}
	poolsReady := checkedPart{seen: true, done: true, detail: "every pool counts its workers ready"}

	cases := []struct {
		name  string
		view  resumeView
		ended bool
	}{
		{"nothing seen yet", resumeView{}, false},
		{"the control plane is not available", resumeView{cluster: available(metav1.ConditionFalse, "NotAvailable", "* KubeadmControlPlane: etcd has no quorum")}, false},
		{"the wait ran out there", resumeView{cluster: available(metav1.ConditionFalse, "NotAvailable", "")}, true},
		{"a Cluster API older than v1.9", resumeView{cluster: v1beta1}, false},
		{"machines provisioning", resumeView{
			cluster: available(metav1.ConditionTrue, "Available", ""), desired: 3, machinesSeen: true,
			machines: []capi.Machine{machine("w-1", capi.MachinePhaseRunning, true), machine("w-2", capi.MachinePhaseProvisioning, false)},
		}, true},
		{"machines running, one node not Ready", resumeView{
			cluster: available(metav1.ConditionTrue, "", ""), desired: 2, machinesSeen: true, machines: back,
			nodesSeen: true, nodes: []corev1.Node{node("w-1", corev1.ConditionTrue), node("w-2", corev1.ConditionFalse)},
		}, true},
		{"the nodes could not be read", resumeView{
			cluster: available(metav1.ConditionTrue, "", ""), desired: 2, machinesSeen: true, machines: back,
			nodesError: "not checked: timed out",
		}, true},
		{"nodes Ready, the health checks not agreeing yet", resumeView{
			cluster: available(metav1.ConditionTrue, "", ""), desired: 2, machinesSeen: true, machines: back,
			nodesSeen: true, nodes: ready, health: checkedPart{seen: true, detail: "MachineHealthCheck app-md-0: 1 of 2 worker(s) healthy"},
		}, true},
		{"health checks passed, a pool's status behind its machines", resumeView{
			cluster: available(metav1.ConditionTrue, "", ""), desired: 2, machinesSeen: true, machines: back,
			nodesSeen: true, nodes: ready, health: healthy, pools: checkedPart{seen: true, detail: "waiting for the pools to count their workers ready (md-0: 0/2 ready, 2 up to date)"},
		}, true},
		{"done, one CSR pending", resumeView{
			cluster: available(metav1.ConditionTrue, "", ""), desired: 2, machinesSeen: true, machines: back,
			nodesSeen: true, nodes: ready, health: healthy, pools: poolsReady, csrsSeen: true, csrs: pending,
		}, false},
		{"done, the CSRs could not be listed", resumeView{
			cluster: available(metav1.ConditionTrue, "", ""), desired: 2, machinesSeen: true, machines: back,
			nodesSeen: true, nodes: ready, health: healthy, pools: poolsReady, csrsError: "not listed: the server could not find the requested resource",
		}, true},
	}
	var out bytes.Buffer
	for _, tc := range cases {
		phases := resumePhases(tc.view)
		stuck := ""
		if tc.ended {
			stuck = stuckPhase(phases)
		}
		fmt.Fprintf(&out, "== %s (stuck in: %q)\n", tc.name, stuck)
		assert.NilError(t, cli.WriteTable(&out, phasesTable(phases), false))
		fmt.Fprintf(&out, "summary: %s\n\n", phaseSummary(phases))
	}
	golden.Assert(t, out.String(), "resume-phases.golden")
}
