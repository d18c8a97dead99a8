//go:build e2e

package park

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	standin "github.com/spokekit/spokekit/e2e/standin/capi"
	capiapi "github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/park"
)

// replacements counts the health check's events for a cluster's machines.
func replacements(t *testing.T, prefix string) int {
	l, err := platform.Kube.CoreV1().Events(namespace).List(ctx(t), metav1.ListOptions{FieldSelector: "reason=" + capiapi.EventMachineMarkedUnhealthy})
	assert.NilError(t, err)
	n := 0
	for _, e := range l.Items {
		if strings.HasPrefix(e.InvolvedObject.Name, prefix) {
			n++
		}
	}
	return n
}

func csrPEM(t *testing.T) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	assert.NilError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:stuck"}}, key)
	assert.NilError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestStatusShowsBothViews(t *testing.T) {
	capi.AddTenant("flaky", tenant)
	assert.NilError(t, platform.ApplyYAML(ctx(t), `apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: flaky
  namespace: `+namespace+`
spec:
  topology:
    classRef:
      name: kubevirt-kubeadm
    version: v1.34.1
    workers:
      machineDeployments:
      - class: default-worker
        name: md-0
        replicas: 1
        metadata:
          annotations:
            `+standin.BrokenNodesAnnotation+`: "true"
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineHealthCheck
metadata:
  name: flaky-workers
  namespace: `+namespace+`
spec:
  clusterName: flaky
  selector:
    matchLabels:
      cluster.x-k8s.io/cluster-name: flaky
  checks:
    unhealthyNodeConditions:
    - type: Ready
      status: "False"
      timeoutSeconds: 1
`))
	_, err := tenant.Kube.CoreV1().Pods("default").Create(ctx(t), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stuck"},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"no-such": "node"},
			Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	_, err = tenant.Kube.CertificatesV1().CertificateSigningRequests().Create(ctx(t), &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "stuck-csr"},
		Spec: certv1.CertificateSigningRequestSpec{Request: csrPEM(t), SignerName: "example.com/nobody",
			Usages: []certv1.KeyUsage{certv1.UsageDigitalSignature}},
	}, metav1.CreateOptions{})
	assert.NilError(t, err)
	err = wait.PollUntilContextTimeout(ctx(t), 500*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return replacements(t, "flaky-md-0-") >= 3, nil
	})
	assert.NilError(t, err, "the stand-in's health check replaces the broken machine")
	// Then the platform team relaxes the check, so the broken machine stays
	// and its node is there, NotReady, to be reported.
	_, err = platform.Dynamic.Resource(capiapi.GVR("v1beta2", capiapi.MachineHealthCheckResource)).Namespace(namespace).Patch(ctx(t), "flaky-workers", types.JSONPatchType,
		[]byte(`[{"op":"replace","path":"/spec/checks/unhealthyNodeConditions/0/timeoutSeconds","value":3600}]`), metav1.PatchOptions{})
	assert.NilError(t, err)
	err = wait.PollUntilContextTimeout(ctx(t), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		nodes, err := tenant.Kube.CoreV1().Nodes().List(ctx(t), metav1.ListOptions{LabelSelector: "e2e.spokekit.io/broken=true"})
		if err != nil || len(nodes.Items) == 0 {
			return false, err
		}
		for _, c := range nodes.Items[0].Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	assert.NilError(t, err, "a broken node is registered and NotReady")

	r := kubectl(t, "park", "status", "flaky", "-n", namespace)
	assert.Equal(t, r.ExitCode, 0, r)
	for _, want := range []string{"Cluster phase: Provisioned", "keeps being replaced", "MachineHealthCheck flaky-workers: 0 of 1 machines healthy",
		"Control-plane pods: flaky-0 (Running), flaky-1 (Running)", "NotReady nodes: flaky-md-0-", "default/stuck (Pending)", "Pending CSRs: stuck-csr", "Report them rather than approving"} {
		assert.Check(t, is.Contains(r.Stdout, want), r)
	}
	assert.Check(t, !strings.Contains(r.Stdout+r.Stderr, "client-key-data") && !strings.Contains(r.Stdout+r.Stderr, "BEGIN"), "no credential in output")
	csr, err := tenant.Kube.CertificatesV1().CertificateSigningRequests().Get(ctx(t), "stuck-csr", metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Check(t, is.Len(csr.Status.Conditions, 0), "the CSR is reported, never approved")

	r = kubectl(t, "park", "status", "flaky", "-n", namespace, "-o", "json", "--cluster-kubeconfig", tenant.Kubeconfig)
	assert.Equal(t, r.ExitCode, 0, r)
	var report park.StatusReport
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &report), r)
	assert.Check(t, report.Platform.Pools[0].Replaced >= 3, r)
	assert.Equal(t, report.Cluster.Source, tenant.Kubeconfig)

	r = kubectl(t, "park", "status", "flaky", "-n", namespace, "--window", "0s")
	assert.Equal(t, r.ExitCode, 2, r)
	r = kubectl(t, "park", "status", "nope", "-n", namespace)
	assert.Equal(t, r.ExitCode, 3, r)
}
