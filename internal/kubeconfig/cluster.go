package kubeconfig

import (
	"bytes"
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/spokekit/spokekit/internal/cli"
)

// Identity is what tells one cluster from another: the UID of its kube-system
// namespace (set at the cluster's creation, never reused), and the server URL
// and CA as a weaker fallback.
type Identity struct {
	UID    string
	Server string
	CA     []byte
}

// SameAs says whether two identities are the same cluster, and on what
// grounds. The UID decides when both are known; otherwise URL and CA must match.
func (i Identity) SameAs(o Identity) (bool, string) {
	if i.UID != "" && o.UID != "" {
		return i.UID == o.UID, "kube-system namespace UID"
	}
	return i.Server == o.Server && bytes.Equal(i.CA, o.CA), "server URL and CA"
}

// OfflineIdentity is the identity known without asking the cluster.
func (k *Kubeconfig) OfflineIdentity() Identity {
	return Identity{Server: k.config.Clusters[k.Cluster].Server, CA: k.CA()}
}

// ReachTimeout bounds each request to a spoke: a stopped API server must
// not hang a command.
const ReachTimeout = 10 * time.Second

// Client is a clientset for the kubeconfig's cluster with ReachTimeout.
func (k *Kubeconfig) Client() (kubernetes.Interface, error) {
	cfg, err := k.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = ReachTimeout
	return kubernetes.NewForConfig(cfg)
}

// Reach asks the cluster for its identity: it fails when the API server does
// not answer or rejects the credential.
func (k *Kubeconfig) Reach(ctx context.Context) (Identity, error) {
	id := k.OfflineIdentity()
	c, err := k.Client()
	if err != nil {
		return id, err
	}
	ns, err := c.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		return id, fmt.Errorf("the API server %s did not answer as user %q: %s", k.Server, k.User, k.scrub(err))
	}
	id.UID = string(ns.UID)
	return id, nil
}

// JoinPermissions are what joining a cluster needs of the identity in its
// kubeconfig: the join installs the klusterlet operator (CRDs, RBAC,
// namespaces, a deployment).
var JoinPermissions = []authorizationv1.ResourceAttributes{
	{Verb: "create", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
	{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
	{Verb: "create", Resource: "namespaces"},
	{Verb: "delete", Resource: "namespaces"},
	{Verb: "create", Group: "apps", Resource: "deployments", Namespace: "open-cluster-management"},
	{Verb: "create", Resource: "secrets", Namespace: "open-cluster-management-agent"},
}

// MissingPermissions asks the cluster (SelfSubjectAccessReview) which of
// perms the kubeconfig's identity lacks, in words.
func (k *Kubeconfig) MissingPermissions(ctx context.Context, perms []authorizationv1.ResourceAttributes) ([]string, error) {
	c, err := k.Client()
	if err != nil {
		return nil, err
	}
	missing, err := cli.MissingAccess(ctx, c.AuthorizationV1(), perms)
	if err != nil {
		return nil, fmt.Errorf("asking %s what user %q may do: %s", k.Server, k.User, k.scrub(err))
	}
	return missing, nil
}
