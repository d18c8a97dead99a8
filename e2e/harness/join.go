package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// clusterAnnotationPrefix is upstream's operatorv1.ClusterAnnotationsKeyPrefix
// with its slash: clusteradm join adds it to a --klusterlet-annotation key
// without it, and the registration agent drops keys that lack it.
const clusterAnnotationPrefix = "agent.open-cluster-management.io/"

// JoinValues are what a `clusteradm join` line gives the cluster it runs on.
type JoinValues struct {
	HubAPIServer string
	Token        string
	// KlusterletAnnotations are the --klusterlet-annotation values, key=value.
	KlusterletAnnotations []string
}

// StartJoinedAgent does on a spoke what `clusteradm join` with values does,
// and starts the cluster's agent as StartAgent does: its bootstrap
// kubeconfig is the hub URL and token given, with the hub's CA read as
// clusteradm join reads it (kube-public's cluster-info, else its
// kube-root-ca.crt, asked with that token), and the klusterlet's cluster
// annotations are the given ones, each key with the agent's prefix added
// where it lacks it. Nothing of the test bed's own bootstrap is used.
func (h *OCMHub) StartJoinedAgent(ctx context.Context, cluster string, spokeKubeconfig []byte, v JoinValues) error {
	ca, err := hubCA(ctx, v)
	if err != nil {
		return fmt.Errorf("reading the hub's CA as clusteradm join does: %w", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: v.HubAPIServer, CertificateAuthorityData: ca}
	cfg.AuthInfos["bootstrap"] = &clientcmdapi.AuthInfo{Token: v.Token}
	cfg.Contexts["bootstrap"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "bootstrap"}
	cfg.CurrentContext = "bootstrap"
	dir := filepath.Join(h.env.Workdir, "agents", cluster)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	bootstrap := filepath.Join(dir, "bootstrap.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, bootstrap); err != nil {
		return err
	}
	var args []string
	if len(v.KlusterletAnnotations) > 0 {
		annotations := make([]string, len(v.KlusterletAnnotations))
		for i, a := range v.KlusterletAnnotations {
			if !strings.HasPrefix(a, clusterAnnotationPrefix) {
				a = clusterAnnotationPrefix + a
			}
			annotations[i] = a
		}
		args = append(args, "--cluster-annotations", strings.Join(annotations, ","))
	}
	return h.startAgent(ctx, cluster, spokeKubeconfig, bootstrap, args...)
}

// hubCA is the hub's CA as clusteradm join finds it without --ca-file:
// asked of the hub with the join's token over a connection not yet
// verified.
func hubCA(ctx context.Context, v JoinValues) ([]byte, error) {
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: v.HubAPIServer, BearerToken: v.Token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		return nil, err
	}
	cm, err := kube.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
	if err == nil {
		info, err := clientcmd.Load([]byte(cm.Data["kubeconfig"]))
		if err != nil {
			return nil, err
		}
		for _, c := range info.Clusters {
			return c.CertificateAuthorityData, nil
		}
		return nil, errors.New("kube-public/cluster-info names no cluster")
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	cm, err = kube.CoreV1().ConfigMaps("kube-public").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return []byte(cm.Data["ca.crt"]), nil
}
