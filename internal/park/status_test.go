package park

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/capi"
)

func unhealthyEvent(machine string, at time.Time) corev1.Event {
	return corev1.Event{Reason: capi.EventMachineMarkedUnhealthy, InvolvedObject: corev1.ObjectReference{Kind: "Machine", Name: machine}, LastTimestamp: metav1.NewTime(at)}
}

func TestStatusCountsReplacementsPerPool(t *testing.T) {
	now := parkedAt
	objs := PlatformObjects{
		Cluster: &capi.Cluster{
			Spec:   capi.ClusterSpec{Topology: &capi.Topology{Version: "v1.34.1"}, ControlPlaneRef: &capi.ObjectRef{Kind: "KubeadmControlPlane", Name: "app-cp-x2"}},
			Status: capi.ClusterStatus{Phase: "Provisioned"},
		},
		Deployments: []capi.MachineDeployment{
			// Cluster API names a topology's MachineDeployment with a random
			// suffix and labels it with the pool's name, which status shows.
			{ObjectMeta: metav1.ObjectMeta{Name: "app-md-0-x7k2p", Labels: map[string]string{capi.TopologyDeploymentNameLabel: "md-0"}}, Spec: withVersion(capi.MachineSetSpec{Replicas: int32Ptr(3)}, "v1.34.1"), Status: capi.MachineSetStatus{ReadyReplicas: int32Ptr(2), UpToDateReplicas: int32Ptr(1)}},
			// A name that is a prefix of another pool's must not take its machines.
			{ObjectMeta: metav1.ObjectMeta{Name: "app-md"}, Spec: capi.MachineSetSpec{Replicas: int32Ptr(1)}, Status: capi.MachineSetStatus{ReadyReplicas: int32Ptr(1)}},
		},
		Machines: []capi.Machine{
			{ObjectMeta: metav1.ObjectMeta{Name: "app-md-0-aaaaa", Labels: map[string]string{capi.MachineDeploymentNameLabel: "app-md-0-x7k2p"}}, Status: capi.MachineStatus{Phase: "Running"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "app-md-x1"}, Status: capi.MachineStatus{Phase: "Provisioning"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "app-cp-x2-abcde", Labels: map[string]string{capi.MachineControlPlaneLabel: ""}}, Status: capi.MachineStatus{Phase: "Running"}},
		},
		HealthChecks: []capi.MachineHealthCheck{{ObjectMeta: metav1.ObjectMeta{Name: "app-workers"}, Status: capi.MachineHealthCheckStatus{ExpectedMachines: int32Ptr(4), CurrentHealthy: int32Ptr(3)}}},
		Pods:         []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "app-0"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}},
		Events: []corev1.Event{
			unhealthyEvent("app-md-0-x7k2p-gone1", now.Add(-time.Minute)),
			unhealthyEvent("app-md-0-x7k2p-gone2", now.Add(-2*time.Minute)),
			unhealthyEvent("app-md-0-aaaaa", now.Add(-3*time.Minute)),
			unhealthyEvent("app-md-0-x7k2p-old", now.Add(-2*time.Hour)),
			unhealthyEvent("app-md-x2", now.Add(-time.Minute)),
		},
	}
	pv := BuildPlatformView(objs, now, time.Hour)
	assert.Equal(t, pv.Pools[0].Replaced, 3)
	assert.Equal(t, pv.Pools[1].Replaced, 1)

	ready := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ok"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	notReady := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}}}
	approved := certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "done"}, Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved}}}}
	cv := BuildClusterView([]corev1.Node{ready, notReady, {ObjectMeta: metav1.ObjectMeta{Name: "new"}}},
		[]corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "stuck"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}},
		[]certificatesv1.CertificateSigningRequest{approved, {ObjectMeta: metav1.ObjectMeta{Name: "csr-1"}}})
	cv.Source = "secret dynamo-prod/app-kubeconfig"

	var out bytes.Buffer
	StatusReport{ReportMeta: api.NewNamespacedReportMeta("ClusterStatus", "dynamo-prod", "app"), Platform: pv, Cluster: cv}.write(&out)
	golden.Assert(t, out.String(), "status.golden")
}

func TestStatusShowsWhatTheClusterCouldServe(t *testing.T) {
	// Cluster API's simulated workload API server serves nodes and pods but
	// not certificate signing requests: the nodes are still shown.
	cv := BuildClusterView(nil, nil, nil)
	cv.Source = "secret dynamo-prod/app-kubeconfig"
	cv.Unavailable = map[string]string{partCSRs: "the server could not find the requested resource"}
	var out bytes.Buffer
	StatusReport{ReportMeta: api.NewNamespacedReportMeta("ClusterStatus", "dynamo-prod", "app"), Platform: BuildPlatformView(PlatformObjects{Cluster: &capi.Cluster{}}, parkedAt, time.Hour), Cluster: cv}.write(&out)
	assert.Check(t, strings.Contains(out.String(), "  NotReady nodes: none\n  Pods not Running: none\n  Pending CSRs: not available (listing certificate signing requests: the server could not find the requested resource)\n"), out.String())
}

// A GitOps tool that sets the worker replicas un-parks a parked cluster by
// itself: status names it (a Flux label, another manager applying the
// replicas), and stays quiet for a manager that only created the cluster.
func TestStatusNamesWhoElseSetsTheReplicas(t *testing.T) {
	c := threePools()
	c.Labels = map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps"}
	c.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "argocd-controller", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: metav1.NewFieldsV1(
			`{"f:spec":{"f:topology":{"f:workers":{"f:machineDeployments":{"k:{\"name\":\"md-1\"}":{".":{},"f:name":{},"f:replicas":{}},"k:{\"name\":\"md-0\"}":{"f:replicas":{}}}}}}}`)},
		{Manager: "kubectl-create", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: metav1.NewFieldsV1(
			`{"f:spec":{"f:topology":{"f:workers":{"f:machineDeployments":{"k:{\"name\":\"md-0\"}":{"f:replicas":{}}}}}}}`)},
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: metav1.NewFieldsV1(
			`{"f:spec":{"f:topology":{"f:workers":{"f:machineDeployments":{"k:{\"name\":\"md-0\"}":{"f:replicas":{}}}}}}}`)},
	}
	var out bytes.Buffer
	StatusReport{ReportMeta: api.NewNamespacedReportMeta("ClusterStatus", "dynamo-prod", "app"), Platform: BuildPlatformView(PlatformObjects{Cluster: c}, parkedAt, time.Hour), Cluster: ClusterView{Error: "x"}}.write(&out)
	assert.Check(t, strings.Contains(out.String(), "  ! Worker replicas also set by: Flux Kustomization apps (kustomize.toolkit.fluxcd.io/name); field manager argocd-controller (applies the replicas of md-0, md-1). It may un-park"), out.String())
	assert.Check(t, !strings.Contains(out.String(), "kubectl-create"), out.String())

	plain := BuildPlatformView(PlatformObjects{Cluster: threePools()}, parkedAt, time.Hour)
	assert.Check(t, len(plain.ReplicasOwners) == 0)
	assert.Equal(t, gitOpsWarning(plain.ReplicasOwners, "un-park the cluster"), "")
	assert.Check(t, strings.Contains(gitOpsWarning([]string{"Flux Kustomization apps"}, "un-park the cluster"), "Flux Kustomization apps, which may set them back and un-park the cluster"))
}

func withVersion(spec capi.MachineSetSpec, version string) capi.MachineSetSpec {
	spec.Template.Spec.Version = version
	return spec
}

// A Kamaji control plane runs as pods on the platform, not on Machines:
// status says the cluster has no control-plane node, so that a user who
// counts nodes does not look for one.
func TestStatusSaysAHostedControlPlaneHasNoNodes(t *testing.T) {
	objs := PlatformObjects{
		Cluster: &capi.Cluster{
			Spec:   capi.ClusterSpec{Topology: &capi.Topology{Version: "v1.34.1"}, ControlPlaneRef: &capi.ObjectRef{Kind: "KamajiControlPlane", Name: "app-x7k"}},
			Status: capi.ClusterStatus{Phase: "Provisioned"},
		},
		Deployments: []capi.MachineDeployment{{
			ObjectMeta: metav1.ObjectMeta{Name: "app-md-0-x7k2p", Labels: map[string]string{capi.TopologyDeploymentNameLabel: "md-0"}},
			Spec:       withVersion(capi.MachineSetSpec{Replicas: int32Ptr(3)}, "v1.34.1"), Status: capi.MachineSetStatus{ReadyReplicas: int32Ptr(3), UpToDateReplicas: int32Ptr(3)},
		}},
		Machines: []capi.Machine{{ObjectMeta: metav1.ObjectMeta{Name: "app-md-0-x7k2p-a", Labels: map[string]string{capi.MachineDeploymentNameLabel: "app-md-0-x7k2p"}}, Status: capi.MachineStatus{Phase: "Running"}}},
		Pods:     []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "app-x7k-0"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}},
	}
	pv := BuildPlatformView(objs, parkedAt, time.Hour)
	assert.Check(t, pv.ControlPlane.Hosted)
	cv := BuildClusterView(nil, nil, nil)
	cv.Source = "app.kubeconfig"
	var out bytes.Buffer
	StatusReport{ReportMeta: api.NewNamespacedReportMeta("ClusterStatus", "dynamo-prod", "app"), Platform: pv, Cluster: cv}.write(&out)
	golden.Assert(t, out.String(), "status-hosted.golden")

	// Kubeadm's control plane while its first machine is coming: not hosted.
	objs.Cluster.Spec.ControlPlaneRef.Kind, objs.Pods = "KubeadmControlPlane", nil
	assert.Check(t, !BuildPlatformView(objs, parkedAt, time.Hour).ControlPlane.Hosted)
}

// UPDATED is read from what the served version calls it: v1beta2's
// upToDateReplicas, v1beta1's v1beta2 block, or the older updatedReplicas.
func TestStatusReadsTheUpdatedCountOfEitherVersion(t *testing.T) {
	for doc, want := range map[string]int32{
		`{"status":{"upToDateReplicas":2,"deprecated":{"v1beta1":{"updatedReplicas":1}}}}`: 2,
		`{"status":{"updatedReplicas":1,"v1beta2":{"upToDateReplicas":3}}}`:                3,
		`{"status":{"updatedReplicas":1}}`:                                                 1,
		`{"status":{"deprecated":{"v1beta1":{"updatedReplicas":4}}}}`:                      4,
	} {
		var md capi.MachineDeployment
		assert.NilError(t, json.Unmarshal([]byte(doc), &md))
		got := md.Status.Updated()
		if assert.Check(t, got != nil, doc) {
			assert.Check(t, is.Equal(*got, want), doc)
		}
	}
	assert.Check(t, capi.MachineSetStatus{}.Updated() == nil)
}
