package harness

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// bootstrapRBAC are the files of OCMComponents' cluster-manager chart that
// let the bootstrap token's group register clusters (a ClusterRole and its
// binding), applied as the chart renders them with createBootstrapToken.
var bootstrapRBAC = []string{
	"deploy/cluster-manager/chart/cluster-manager/templates/bootstrap_cluster_role.yaml",
	"deploy/cluster-manager/chart/cluster-manager/templates/bootstrap_cluster_role_binding.yaml",
}

// bootstrapSA are the files of the same chart that make the ServiceAccount
// `clusteradm get token` mints join tokens of (createBootstrapSA), in the
// namespace clusteradm init installs it in.
var bootstrapSA = []string{
	"deploy/cluster-manager/chart/cluster-manager/templates/bootstrap_sa.yaml",
	"deploy/cluster-manager/chart/cluster-manager/templates/bootstrap_sa_cluster_role_binding.yaml",
}

const (
	// bootstrapGroup is the group upstream's bootstrap token authenticates in.
	bootstrapGroup = "system:bootstrappers:managedcluster"
	// BootstrapSANamespace is where clusteradm init makes that ServiceAccount.
	BootstrapSANamespace = "open-cluster-management"
)

// createBootstrapToken does what `clusteradm init` does for joins: a
// bootstrap token Secret in kube-system of the hub (the hub's API server
// runs with --enable-bootstrap-token-auth), the bootstrap ServiceAccount
// and RBAC, and a kubeconfig of the hub with that token, which agents
// bootstrap with.
func (h *OCMHub) createBootstrapToken(ctx context.Context) (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	random := func(n int) string {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		for i := range b {
			b[i] = alphabet[int(b[i])%len(alphabet)]
		}
		return string(b)
	}
	id, secret := random(6), random(16)
	_, err := h.Kube.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{
		// Labelled as the chart and clusteradm init label it: clusteradm get
		// token --use-bootstrap-token looks for that label.
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: "kube-system", Labels: map[string]string{"app": "cluster-manager"}},
		Type:       corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{
			"token-id": id, "token-secret": secret,
			"usage-bootstrap-authentication": "true",
			"auth-extra-groups":              bootstrapGroup,
		},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating the bootstrap token: %w", err)
	}
	if err := createNamespace(ctx, h.Kube, BootstrapSANamespace); err != nil {
		return "", err
	}
	files, err := ModuleFiles(ctx, OCMComponents, append(bootstrapRBAC, bootstrapSA...))
	if err != nil {
		return "", err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		data = bytes.ReplaceAll(withoutTemplateLines(data), []byte("{{ .Release.Namespace }}"), []byte(BootstrapSANamespace))
		if err := h.ApplyYAML(ctx, string(data)); err != nil {
			return "", fmt.Errorf("applying %s: %w", filepath.Base(f), err)
		}
	}
	admin, err := clientcmd.LoadFromFile(h.Kubeconfig)
	if err != nil {
		return "", err
	}
	cluster := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = cluster
	cfg.AuthInfos["bootstrap"] = &clientcmdapi.AuthInfo{Token: id + "." + secret}
	cfg.Contexts["bootstrap"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "bootstrap"}
	cfg.CurrentContext = "bootstrap"
	path := filepath.Join(h.env.Workdir, h.Name+"-bootstrap.kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// withoutTemplateLines drops a chart template's {{ }} lines (the chart's
// conditions around plain YAML).
func withoutTemplateLines(data []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("{{")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}
