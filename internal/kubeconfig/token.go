package kubeconfig

import (
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WithToken is a kubeconfig for the same cluster as k (server, CA, TLS
// server name) whose one user, named user, holds token and nothing else
// of k's credential: to hand out a narrower credential made with an admin
// one. Its context is named context.
func (k *Kubeconfig) WithToken(context, user, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[k.Cluster] = k.config.Clusters[k.Cluster].DeepCopy()
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[context] = &clientcmdapi.Context{Cluster: k.Cluster, AuthInfo: user}
	cfg.CurrentContext = context
	return clientcmd.Write(*cfg)
}
