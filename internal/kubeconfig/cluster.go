package kubeconfig

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/spokekit/spokekit/internal/authz"
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

// The names the join's objects have on a spoke in the klusterlet's Default
// mode: clusteradm join renders OCM's klusterlet chart into these.
const (
	klusterletOperatorNamespace = "open-cluster-management"
	klusterletAgentNamespace    = "open-cluster-management-agent"
	klusterletName              = "klusterlet"
	klusterletCRD               = "klusterlets.operator.open-cluster-management.io"
)

// JoinPermissions are what the hub's FleetConfig controller does on a spoke
// with the kubeconfig stored for it, in addon and in unified mode:
// `clusteradm join --wait` applies the klusterlet chart (each object read,
// created when missing, then patched as kubectl apply does) and follows the
// operator's pod and the Klusterlet; in addon mode the controller also
// creates its agent's namespace; `clusteradm unjoin --purge-operator`, run
// with the same kubeconfig in unified mode or when the agent never took
// over, deletes what the join made. add checks each of them with a
// SelfSubjectAccessReview, and prepare grants exactly these: one list.
//
// A create names no object (RBAC cannot limit it by name); every other verb
// names the one object it needs where the tools name it. The join creates
// the klusterlet operator's ClusterRole, which itself grants escalate and
// bind on roles: escalate is needed to create it, and makes whoever holds
// these as powerful as cluster-admin.
var JoinPermissions = slices.Concat(
	// Where the klusterlet finds its own API server (a miss is only warned).
	access("", "configmaps", "kube-public", "cluster-info", "get"),
	// Whether the operator runs already, and its pods while waiting for it.
	access("apps", "deployments", klusterletOperatorNamespace, klusterletName, "get", "patch", "delete"),
	access("apps", "deployments", klusterletOperatorNamespace, "", "create"),
	access("", "pods", klusterletOperatorNamespace, "", "list", "watch"),
	// The Klusterlet CRD, waited for until it is served.
	access("apiextensions.k8s.io", "customresourcedefinitions", "", klusterletCRD, "get", "patch", "delete"),
	access("apiextensions.k8s.io", "customresourcedefinitions", "", "", "create"),
	// The operator's and the agent's namespaces; in addon mode also the
	// FleetConfig agent's (named as the controller's namespace on the hub).
	access("", "namespaces", "", klusterletOperatorNamespace, "get", "patch"),
	access("", "namespaces", "", klusterletAgentNamespace, "get", "patch", "delete"),
	access("", "namespaces", "", "", "create"),
	// The image pull secret and the hub's bootstrap kubeconfig.
	access("", "secrets", klusterletOperatorNamespace, "open-cluster-management-image-pull-credentials", "get", "patch"),
	access("", "secrets", klusterletOperatorNamespace, "", "create"),
	access("", "secrets", klusterletAgentNamespace, "bootstrap-hub-kubeconfig", "get", "patch"),
	access("", "secrets", klusterletAgentNamespace, "", "create"),
	// The operator's ServiceAccount, ClusterRole and ClusterRoleBinding.
	access("", "serviceaccounts", klusterletOperatorNamespace, klusterletName, "get", "patch", "delete"),
	access("", "serviceaccounts", klusterletOperatorNamespace, "", "create"),
	access("rbac.authorization.k8s.io", "clusterroles", "", klusterletName, "get", "patch", "delete", "bind"),
	access("rbac.authorization.k8s.io", "clusterroles", "", "", "create", "escalate"),
	access("rbac.authorization.k8s.io", "clusterrolebindings", "", klusterletName, "get", "patch", "delete"),
	access("rbac.authorization.k8s.io", "clusterrolebindings", "", "", "create"),
	// The Klusterlet, followed until its agents are up; unjoin lists them.
	access("operator.open-cluster-management.io", "klusterlets", "", klusterletName, "get", "patch", "delete"),
	access("operator.open-cluster-management.io", "klusterlets", "", "", "create", "list", "watch"),
	// unjoin refuses to remove the agent while works it applied remain.
	access("work.open-cluster-management.io", "appliedmanifestworks", "", "", "list"),
)

// access is one permission for each verb.
func access(group, resource, namespace, name string, verbs ...string) []authorizationv1.ResourceAttributes {
	out := make([]authorizationv1.ResourceAttributes, 0, len(verbs))
	for _, v := range verbs {
		out = append(out, authorizationv1.ResourceAttributes{Verb: v, Group: group, Resource: resource, Namespace: namespace, Name: name})
	}
	return out
}

// MissingPermissions asks the cluster (SelfSubjectAccessReview) which of
// perms the kubeconfig's identity lacks, in words.
func (k *Kubeconfig) MissingPermissions(ctx context.Context, perms []authorizationv1.ResourceAttributes) ([]string, error) {
	c, err := k.Client()
	if err != nil {
		return nil, err
	}
	missing, err := authz.Missing(ctx, c.AuthorizationV1(), perms)
	if err != nil {
		return nil, fmt.Errorf("asking %s what user %q may do: %s", k.Server, k.User, k.scrub(err))
	}
	return missing, nil
}
