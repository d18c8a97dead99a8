//go:build e2e

package park

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The drain, PersistentVolumeClaim and CSR scenarios run on a kwok workload
// cluster, because Cluster API's simulated workload API server cannot serve
// them: it has no pods/eviction subresource (a drain there evicts nothing
// and never meets a PodDisruptionBudget), and it serves no
// PersistentVolumeClaims and no CertificateSigningRequests. The Cluster is
// still provisioned by the real controllers on the in-memory backend; then
// moveToTenant moves its workload API server to the kwokctl cluster "tenant"
// (harness ClusterAPI.MoveToTenant).
func moveToTenant(t *testing.T, ns, cluster string) {
	t.Helper()
	assert.NilError(t, clusterAPI.MoveToTenant(ctx(t), ns, cluster, tenant))
}

func TestParkWaitNamesTheBudgetThatHoldsTheDrain(t *testing.T) {
	createCluster(t, namespace, "drained", "in-memory", "{class: default-worker, name: md-0, replicas: 1}")
	assert.NilError(t, platform.KamajiStandIn(ctx(t), namespace, "drained"))
	waitRunningWorkers(t, namespace, "drained", 1)
	moveToTenant(t, namespace, "drained")
	machine, node := workerNode(t, "drained")

	// db-0 runs on the worker, guarded by a budget that allows no disruption;
	// a claim holds storage; a pod cannot be scheduled; a CSR waits.
	kube := tenant.Kube
	_, err := kube.CoreV1().Pods("default").Create(ctx(t), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "db-0", Labels: map[string]string{"app": "db"}},
		Spec: corev1.PodSpec{
			NodeName: node, Containers: []corev1.Container{{Name: "db", Image: "db:1"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	one := intstr.FromInt32(1)
	_, err = kube.PolicyV1().PodDisruptionBudgets("default").Create(ctx(t), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = kube.CoreV1().PersistentVolumeClaims("default").Create(ctx(t), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}},
		},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = kube.CoreV1().Pods("default").Create(ctx(t), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stuck"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"no-such": "node"},
			Containers:   []corev1.Container{{Name: "app", Image: "app:1"}},
		},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = kube.CertificatesV1().CertificateSigningRequests().Create(ctx(t), &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "stuck-csr"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: csrPEM(t), SignerName: "example.com/nobody",
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature},
		},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	err = wait.PollUntilContextTimeout(ctx(t), time.Second, 2*time.Minute, true, func(c context.Context) (bool, error) {
		pdb, err := kube.PolicyV1().PodDisruptionBudgets("default").Get(c, "db", metav1.GetOptions{})
		return err == nil && pdb.Status.CurrentHealthy == 1 && pdb.Status.DisruptionsAllowed == 0, nil
	})
	assert.NilError(t, err, "the budget protects the running db-0")

	t.Run("status shows the cluster's own view from the tenant", func(t *testing.T) {
		r := kubectl(t, "park", "status", "drained", "-n", namespace)
		assert.Equal(t, r.ExitCode, 0, r)
		for _, want := range []string{"default/stuck (Pending)", "Pending CSRs: stuck-csr", "Report them rather than approving"} {
			assert.Check(t, is.Contains(r.Stdout, want), r)
		}
		csr, err := kube.CertificatesV1().CertificateSigningRequests().Get(ctx(t), "stuck-csr", metav1.GetOptions{})
		assert.NilError(t, err)
		assert.Check(t, is.Len(csr.Status.Conditions, 0), "the CSR is reported, never approved")
	})

	t.Run("park --wait names the machine and the budget its drain waits on", func(t *testing.T) {
		r := kubectl(t, "park", "cluster", "drained", "-n", namespace, "--wait", "--timeout", "90s")
		assert.Equal(t, r.ExitCode, 4, r)
		assert.Check(t, is.Contains(r.Stderr, "machine "+machine+" waits on PodDisruptionBudget default/db (pod default/db-0)"), r)
		// Cluster API cordoned the node and keeps the pod.
		n, err := kube.CoreV1().Nodes().Get(ctx(t), node, metav1.GetOptions{})
		assert.NilError(t, err)
		assert.Check(t, n.Spec.Unschedulable, "cordoned by Cluster API's drain")
		_, err = kube.CoreV1().Pods("default").Get(ctx(t), "db-0", metav1.GetOptions{})
		assert.NilError(t, err)
	})

	t.Run("once the budget allows it, the drain and the park finish", func(t *testing.T) {
		assert.NilError(t, kube.PolicyV1().PodDisruptionBudgets("default").Delete(ctx(t), "db", metav1.DeleteOptions{}))
		r := kubectl(t, "park", "cluster", "drained", "-n", namespace, "--wait", "--timeout", finishBound)
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Contains(r.Stderr, "already parked"), r)
		for _, want := range []string{"1 PersistentVolumeClaim(s)", "default/data 5Gi", "control plane: 2 pod(s)"} {
			assert.Check(t, is.Contains(r.Stdout, want), r)
		}
		_, err := kube.CoreV1().Pods("default").Get(ctx(t), "db-0", metav1.GetOptions{})
		assert.Check(t, apierrors.IsNotFound(err), "db-0 was evicted: %v", err)
		_, err = kube.CoreV1().Nodes().Get(ctx(t), node, metav1.GetOptions{})
		assert.Check(t, apierrors.IsNotFound(err), "Cluster API deleted the node: %v", err)
	})
}

func csrPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	assert.NilError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:stuck"}}, key)
	assert.NilError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}
