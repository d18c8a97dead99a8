package spoke

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
	"github.com/spokekit/spokekit/internal/spoke/hubclient"
)

// prepareNames are the objects prepare keeps on a spoke for the join.
type prepareNames struct {
	Namespace      string `json:"namespace"`
	ServiceAccount string `json:"serviceAccount"`
	// Role names the ClusterRole and its ClusterRoleBinding.
	Role  string `json:"role"`
	Token string `json:"token"`
}

// defaultPrepareNames are the names prepare uses unless -n names another
// namespace.
var defaultPrepareNames = prepareNames{Namespace: "spokekit-system", ServiceAccount: "spokekit-join", Role: "spokekit:spoke-join", Token: "spokekit-join-token"}

// identityReads are what add and rotate-kubeconfig read with a spoke's
// kubeconfig besides the join: the kube-system namespace's UID. Not the
// id.k8s.io ClusterClaim: whoever runs a cluster may set it, and the hub
// shows every spoke's to anyone who may read ManagedClusters, so no proof
// of a cluster rests on it (see proveSameCluster).
var identityReads = []authz.Permission{
	{Verb: "get", Resource: "namespaces", Name: "kube-system"},
}

// deepReads are what health --deep lists with a spoke's kubeconfig beyond
// the join's needs (which list pods already): read only, so that a prepared
// spoke is checked whole instead of left unchecked (exit 3).
var deepReads = []authz.Permission{
	{Verb: "list", Resource: "nodes"},
	{Verb: "list", Group: "certificates.k8s.io", Resource: "certificatesigningrequests"},
}

// preparedAccess is all the prepared identity may do: the join's needs, the
// very list add checks, the identity reads and health --deep's reads.
func preparedAccess() []authz.Permission {
	return slices.Concat(kubeconfig.JoinPermissions, identityReads, deepReads)
}

// prepareFacts are the objects of prepareNames as found on the spoke (nil:
// none).
type prepareFacts struct {
	Namespace      *corev1.Namespace
	ServiceAccount *corev1.ServiceAccount
	Role           *rbacv1.ClusterRole
	Binding        *rbacv1.ClusterRoleBinding
	Token          *corev1.Secret
}

// objectAction is what prepare does to one object.
type objectAction string

const (
	objectCreate    objectAction = "create"
	objectUpdate    objectAction = "update"
	objectUnchanged objectAction = "unchanged"
)

// objectWrite is one object prepare writes, or finds as it should be.
type objectWrite[T any] struct {
	Action objectAction `json:"action"`
	Object T            `json:"object"`
}

// preparePlan is what prepare will write on the spoke: a value built by
// planPrepare, applied by apply, shown by steps and, under a dry run,
// printed.
type preparePlan struct {
	Names          prepareNames                            `json:"names"`
	Namespace      objectWrite[*corev1.Namespace]          `json:"namespace"`
	ServiceAccount objectWrite[*corev1.ServiceAccount]     `json:"serviceAccount"`
	Role           objectWrite[*rbacv1.ClusterRole]        `json:"role"`
	Binding        objectWrite[*rbacv1.ClusterRoleBinding] `json:"binding"`
	Token          objectWrite[*corev1.Secret]             `json:"token"`
}

// planPrepare decides every write from what exists; it reads and writes
// nothing. An object of these names that spokekit did not make (no
// hubclient.ManagedByLabel) is never taken over: a ServiceAccount, role or token of
// someone else would get, or give, the join's rights.
func planPrepare(n prepareNames, f prepareFacts) (*preparePlan, error) {
	p := &preparePlan{Names: n}
	ownLabels := func() map[string]string { return maps.Clone(hubclient.ManagedByLabel) }

	switch ns := f.Namespace; {
	case ns == nil:
		p.Namespace = objectWrite[*corev1.Namespace]{objectCreate, &corev1.Namespace{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: n.Namespace, Labels: ownLabels()},
		}}
	case ns.DeletionTimestamp != nil:
		return nil, exitcode.RefusedErrorf("namespace %s is being deleted; nothing was changed: wait until it is gone, or pick another with -n", n.Namespace)
	default:
		// Only a namespace prepare made (and marked) holds its privileged
		// ServiceAccount and token: whoever acts in someone else's would
		// reach them. It is not changed.
		if err := refuseForeign("namespace "+n.Namespace, ns.ObjectMeta); err != nil {
			return nil, err
		}
		p.Namespace = objectWrite[*corev1.Namespace]{objectUnchanged, ns}
	}

	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: n.ServiceAccount, Namespace: n.Namespace, Labels: ownLabels()},
	}
	if f.ServiceAccount == nil {
		p.ServiceAccount = objectWrite[*corev1.ServiceAccount]{objectCreate, sa}
	} else if err := refuseForeign("serviceaccount "+n.Namespace+"/"+n.ServiceAccount, f.ServiceAccount.ObjectMeta); err != nil {
		return nil, err
	} else {
		p.ServiceAccount = objectWrite[*corev1.ServiceAccount]{objectUnchanged, f.ServiceAccount}
	}

	role := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: n.Role, Labels: ownLabels()}, Rules: rulesFor(preparedAccess()),
	}
	switch {
	case f.Role == nil:
		p.Role = objectWrite[*rbacv1.ClusterRole]{objectCreate, role}
	case refuseForeign("clusterrole "+n.Role, f.Role.ObjectMeta) != nil:
		return nil, refuseForeign("clusterrole "+n.Role, f.Role.ObjectMeta)
	case equality.Semantic.DeepEqual(f.Role.Rules, role.Rules) && f.Role.AggregationRule == nil:
		p.Role = objectWrite[*rbacv1.ClusterRole]{objectUnchanged, f.Role}
	default:
		// An older spokekit's rules (or a hand edit): this version's, in
		// place, under the resourceVersion read.
		updated := f.Role.DeepCopy()
		updated.Rules, updated.AggregationRule = role.Rules, nil
		p.Role = objectWrite[*rbacv1.ClusterRole]{objectUpdate, updated}
	}

	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: n.ServiceAccount, Namespace: n.Namespace}}
	roleRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: n.Role}
	switch b := f.Binding; {
	case b == nil:
		p.Binding = objectWrite[*rbacv1.ClusterRoleBinding]{objectCreate, &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: n.Role, Labels: ownLabels()}, RoleRef: roleRef, Subjects: subjects,
		}}
	case refuseForeign("clusterrolebinding "+n.Role, b.ObjectMeta) != nil:
		return nil, refuseForeign("clusterrolebinding "+n.Role, b.ObjectMeta)
	case b.RoleRef != roleRef:
		return nil, exitcode.RefusedErrorf("clusterrolebinding %s binds %s %s, and a binding's role cannot change; nothing was changed: delete it (kubectl delete clusterrolebinding %s) and run this again", n.Role, b.RoleRef.Kind, b.RoleRef.Name, n.Role)
	case equality.Semantic.DeepEqual(b.Subjects, subjects):
		p.Binding = objectWrite[*rbacv1.ClusterRoleBinding]{objectUnchanged, b}
	default:
		// Only the prepared ServiceAccount holds the join's rights.
		updated := b.DeepCopy()
		updated.Subjects = subjects
		p.Binding = objectWrite[*rbacv1.ClusterRoleBinding]{objectUpdate, updated}
	}

	switch t := f.Token; {
	case t == nil:
		// A service-account-token Secret: the token the controller puts in
		// it has no expiry, and lives as long as the Secret and the
		// ServiceAccount do. A TokenRequest's token always expires.
		p.Token = objectWrite[*corev1.Secret]{objectCreate, &corev1.Secret{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{
				Name: n.Token, Namespace: n.Namespace, Labels: ownLabels(),
				Annotations: map[string]string{corev1.ServiceAccountNameKey: n.ServiceAccount},
			},
			Type: corev1.SecretTypeServiceAccountToken,
		}}
	case refuseForeign("secret "+n.Namespace+"/"+n.Token, t.ObjectMeta) != nil:
		return nil, refuseForeign("secret "+n.Namespace+"/"+n.Token, t.ObjectMeta)
	case t.Type != corev1.SecretTypeServiceAccountToken || t.Annotations[corev1.ServiceAccountNameKey] != n.ServiceAccount:
		return nil, exitcode.RefusedErrorf("secret %s/%s is not the token of serviceaccount %s (type %s); nothing was changed: delete it and run this again", n.Namespace, n.Token, n.ServiceAccount, t.Type)
	default:
		// The token already given out stays valid: re-running reuses it.
		p.Token = objectWrite[*corev1.Secret]{objectUnchanged, t}
	}
	return p, nil
}

// refuseForeign refuses an object of prepare's names that spokekit did not
// make.
func refuseForeign(what string, m metav1.ObjectMeta) error {
	if !madeBySpokekit(m) {
		return exitcode.RefusedErrorf("%s exists and was not made by kubectl spoke prepare (no label %s); nothing was changed: pick another namespace with -n, or remove it if it is a leftover", what, labels.Set(hubclient.ManagedByLabel))
	}
	if m.DeletionTimestamp != nil {
		return exitcode.RefusedErrorf("%s is being deleted; nothing was changed: run this again once it is gone", what)
	}
	return nil
}

// madeBySpokekit tells an object that carries hubclient.ManagedByLabel.
func madeBySpokekit(m metav1.ObjectMeta) bool {
	for k, v := range hubclient.ManagedByLabel {
		if m.Labels[k] != v {
			return false
		}
	}
	return true
}

// rulesFor is the smallest ClusterRole that allows each of needs: one rule
// per resource and set of verbs, limited to the names the needs name. A
// need in a namespace is granted in every namespace: the join's namespaces
// do not exist before the join, and unjoin deletes them with any Role in them.
func rulesFor(needs []authz.Permission) []rbacv1.PolicyRule {
	type object struct{ group, resource, name string }
	verbs := map[object][]string{}
	for _, a := range needs {
		o := object{a.Group, a.Resource, a.Name}
		if !slices.Contains(verbs[o], a.Verb) {
			verbs[o] = append(verbs[o], a.Verb)
		}
	}
	type rule struct{ group, resource, verbs string }
	names := map[rule][]string{}
	var order []rule
	for o, vs := range verbs {
		slices.Sort(vs)
		r := rule{o.group, o.resource, strings.Join(vs, ",")}
		if _, seen := names[r]; !seen {
			order = append(order, r)
		}
		names[r] = append(names[r], o.name)
	}
	slices.SortFunc(order, func(a, b rule) int {
		return strings.Compare(a.group+"\x00"+a.resource+"\x00"+a.verbs, b.group+"\x00"+b.resource+"\x00"+b.verbs)
	})
	var out []rbacv1.PolicyRule
	for _, r := range order {
		ns := names[r]
		slices.Sort(ns)
		base := rbacv1.PolicyRule{APIGroups: []string{r.group}, Resources: []string{r.resource}, Verbs: strings.Split(r.verbs, ",")}
		if slices.Contains(ns, "") {
			// Unlimited by name: the named ones are inside it.
			out = append(out, base)
			continue
		}
		base.ResourceNames = ns
		out = append(out, base)
	}
	return out
}
