// park kubeconfig --role: a ServiceAccount token bound to a ClusterRole of
// the workload cluster, made with the admin kubeconfig, one ServiceAccount
// per user and role; --revoke deletes that user's.

package park

import (
	"context"
	"fmt"
	"maps"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
)

// KubeconfigNamespace is the workload cluster's namespace of the
// ServiceAccounts park kubeconfig --role makes.
const KubeconfigNamespace = "spokekit-system"

// managedByPark labels what park makes in a workload cluster: a re-run
// reuses, and --revoke deletes, only objects that carry it.
var managedByPark = map[string]string{"app.kubernetes.io/managed-by": FieldManager}

// UserAnnotation records on the ServiceAccount and ClusterRoleBinding of
// --role the management cluster's user they were made for: a re-run and
// --revoke act on them only for that very user, whatever their name.
const UserAnnotation = "park.spokekit.io/user"

// The actions on an object of the workload cluster.
const (
	ActionCreate = "create"
	ActionReuse  = "reuse"
	ActionDelete = "delete"
)

// WorkloadObject is one object park kubeconfig --role makes or reuses in
// the workload cluster.
type WorkloadObject struct {
	Action    string `json:"action"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Detail    string `json:"detail,omitempty"`
}

// RoleAccess is what the workload cluster holds, before anything is made,
// of a --role credential: the user it is for (the management cluster's
// name of the user running park), whether the ClusterRole exists, and the
// namespace, ServiceAccount and ClusterRoleBinding of that user's name for
// it (nil when there is none).
type RoleAccess struct {
	User           string
	RoleExists     bool
	Namespace      *corev1.Namespace
	ServiceAccount *corev1.ServiceAccount
	Binding        *rbacv1.ClusterRoleBinding
}

// roleObjects are the objects a --role credential needs.
type roleObjects struct {
	Namespace      *corev1.Namespace
	ServiceAccount *corev1.ServiceAccount
	Binding        *rbacv1.ClusterRoleBinding
}

func desiredRoleObjects(role, user string) roleObjects {
	name := roleObjectName(role, user)
	meta := func(namespace, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: maps.Clone(managedByPark)}
	}
	// The namespace is everyone's: it records no user.
	mine := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		m.Annotations = map[string]string{UserAnnotation: user}
		return m
	}
	return roleObjects{
		Namespace:      &corev1.Namespace{ObjectMeta: meta("", KubeconfigNamespace)},
		ServiceAccount: &corev1.ServiceAccount{ObjectMeta: mine(meta(KubeconfigNamespace, name))},
		Binding: &rbacv1.ClusterRoleBinding{
			ObjectMeta: mine(meta("", name)),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: KubeconfigNamespace, Name: name}},
		},
	}
}

// PlanRoleAccess says which objects a --role credential makes and which it
// reuses. It refuses (exit 3) when the ClusterRole is missing, or when an
// object of that name exists that is not park's, was made for another
// user, or binds something else: taking it over would hand out what its
// owner set up.
func PlanRoleAccess(role string, have RoleAccess) ([]WorkloadObject, error) {
	if !have.RoleExists {
		return nil, exitcode.RefusedErrorf("the workload cluster has no ClusterRole %q; nothing was changed (name one it has, e.g. view)", role)
	}
	plan := []WorkloadObject{{Action: ActionReuse, Kind: "Namespace", Name: KubeconfigNamespace}}
	switch ns := have.Namespace; {
	case ns == nil:
		plan[0].Action = ActionCreate
	// Whoever acts in a namespace spokekit did not make would reach the
	// privileged ServiceAccount put there (spoke prepare's is spokekit's too).
	case !ours(ns.Labels) && ns.Labels["app.kubernetes.io/managed-by"] != "kubectl-spoke":
		return nil, notOurs("Namespace", KubeconfigNamespace, "nothing was changed: delete it, or ask for another --role")
	}
	objects, err := userRoleObjects(role, have, "nothing was changed")
	if err != nil {
		return nil, err
	}
	for _, o := range objects {
		if o.Action == "" {
			o.Action = ActionCreate
		} else {
			o.Action = ActionReuse
		}
		plan = append(plan, o)
	}
	return plan, nil
}

// PlanRevokeRoleAccess says what --revoke deletes: the user's
// ClusterRoleBinding of role first (its rights go), then the
// ServiceAccount (every token of it stops working). Nothing of them left is
// an empty plan. The namespace stays: other users' accounts, and spoke
// prepare's, live there. It refuses (exit 3) what park did not make, what
// it made for another user, and a binding that binds anything else.
func PlanRevokeRoleAccess(role string, have RoleAccess) ([]WorkloadObject, error) {
	objects, err := userRoleObjects(role, have, "nothing was deleted")
	if err != nil {
		return nil, err
	}
	var plan []WorkloadObject
	for _, i := range []int{1, 0} {
		if o := objects[i]; o.Action != "" {
			o.Action = ActionDelete
			plan = append(plan, o)
		}
	}
	return plan, nil
}

// userRoleObjects are the user's ServiceAccount and ClusterRoleBinding of
// role as the plans show them, Action "" for one that is not there and
// ActionReuse for one that is, after the checks both plans make of it: it
// is park's, made for this user, and the binding binds exactly role to
// that ServiceAccount. unchanged ends a refusal: what was left alone.
func userRoleObjects(role string, have RoleAccess, unchanged string) ([2]WorkloadObject, error) {
	want := desiredRoleObjects(role, have.User)
	name := want.ServiceAccount.Name
	sa := WorkloadObject{Kind: "ServiceAccount", Namespace: KubeconfigNamespace, Name: name, Detail: "for user " + have.User}
	binding := WorkloadObject{Kind: "ClusterRoleBinding", Name: want.Binding.Name, Detail: "ClusterRole " + role + " to ServiceAccount " + KubeconfigNamespace + "/" + name}
	if s := have.ServiceAccount; s != nil {
		if err := usersObject(s.ObjectMeta, "ServiceAccount", KubeconfigNamespace+"/"+name, have.User, unchanged); err != nil {
			return [2]WorkloadObject{}, err
		}
		sa.Action = ActionReuse
	}
	if b := have.Binding; b != nil {
		if err := usersObject(b.ObjectMeta, "ClusterRoleBinding", b.Name, have.User, unchanged); err != nil {
			return [2]WorkloadObject{}, err
		}
		if b.RoleRef != want.Binding.RoleRef || len(b.Subjects) != 1 || b.Subjects[0] != want.Binding.Subjects[0] {
			return [2]WorkloadObject{}, exitcode.RefusedErrorf("ClusterRoleBinding %s in the workload cluster no longer binds only ClusterRole %s to ServiceAccount %s/%s; %s: delete it by hand if it is a leftover, and run again", b.Name, role, KubeconfigNamespace, name, unchanged)
		}
		binding.Action = ActionReuse
	}
	return [2]WorkloadObject{sa, binding}, nil
}

// usersObject refuses an object that park did not make, or made for
// another user (two names may, rarely, hash alike).
func usersObject(m metav1.ObjectMeta, kind, name, user, unchanged string) error {
	if !ours(m.Labels) {
		return notOurs(kind, name, unchanged+": delete it, or ask for another --role")
	}
	if made := m.Annotations[UserAnnotation]; made != user {
		return exitcode.RefusedErrorf("%s %s in the workload cluster was made by kubectl park for user %q, not for %q; %s", kind, name, made, user, unchanged)
	}
	return nil
}

func notOurs(kind, name, then string) error {
	return exitcode.RefusedErrorf("%s %s exists in the workload cluster and is not kubectl-park's (no label app.kubernetes.io/managed-by=%s); %s", kind, name, FieldManager, then)
}

func ours(labels map[string]string) bool {
	for k, v := range managedByPark {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// roleClient is the client of the workload cluster from the admin
// kubeconfig, and what it holds of the current user's --role objects.
func (o *KubeconfigOptions) roleClient(ctx context.Context, p *Platform, admin *kubeconfig.Kubeconfig, report *KubeconfigReport, unchanged string) (kubernetes.Interface, RoleAccess, error) {
	user, err := managementUser(ctx, p, unchanged)
	if err != nil {
		return nil, RoleAccess{}, err
	}
	cfg, err := admin.RESTConfig()
	if err != nil {
		return nil, RoleAccess{}, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, RoleAccess{}, fmt.Errorf("client for the cluster from %s: %w", report.Source, err)
	}
	have, err := readRoleAccess(ctx, p, kube, o.Role, user)
	if err != nil {
		return nil, have, o.failed(ctx, report, "reading what --role needs", fmt.Errorf("%w; %s", err, unchanged))
	}
	want := desiredRoleObjects(o.Role, user)
	report.Role, report.User, report.ServiceAccount = o.Role, user, KubeconfigNamespace+"/"+want.ServiceAccount.Name
	return kube, have, nil
}

func (o *KubeconfigOptions) failed(ctx context.Context, report *KubeconfigReport, doing string, err error) error {
	return fmt.Errorf("%s in cluster %s/%s (with the kubeconfig from %s): %s", doing, o.Namespace, o.Name, report.Source, notChecked(ctx, err))
}

// managementUser is the management cluster's name of the user running
// park (SelfSubjectReview), after whom the --role objects are named. The
// workload cluster cannot tell users apart: all of them reach it with the
// one admin kubeconfig. Not knowing the name is a refusal: objects named
// without it would be shared.
func managementUser(ctx context.Context, p *Platform, unchanged string) (string, error) {
	r, err := p.Kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", exitcode.RefusedErrorf("asking the management cluster who the current user is (SelfSubjectReview): %w; %s: --role names the workload cluster's ServiceAccount after that user", err, unchanged)
	}
	if r.Status.UserInfo.Username == "" {
		return "", exitcode.RefusedErrorf("the management cluster gave no user name for the current user (SelfSubjectReview); %s: --role names the workload cluster's ServiceAccount after that user", unchanged)
	}
	return r.Status.UserInfo.Username, nil
}

// roleKubeconfig makes (or reuses) the user's ServiceAccount and binding of
// --role in the workload cluster with the admin kubeconfig, asks a token of
// --duration for it and returns the kubeconfig that holds it. Under a dry
// run it returns no kubeconfig: client sends nothing, server sends the
// creations as dry runs and asks no token.
func (o *KubeconfigOptions) roleKubeconfig(ctx context.Context, p *Platform, admin *kubeconfig.Kubeconfig, report *KubeconfigReport) ([]byte, error) {
	kube, have, err := o.roleClient(ctx, p, admin, report, "nothing was changed")
	if err != nil {
		return nil, err
	}
	plan, err := PlanRoleAccess(o.Role, have)
	if err != nil {
		return nil, err
	}
	want := desiredRoleObjects(o.Role, have.User)
	report.Credential, report.Objects = CredentialToken, plan
	if o.DryRun == cli.DryRunClient {
		return nil, nil
	}
	if err := createRoleObjects(ctx, p, kube, want, plan, o.DryRun); err != nil {
		return nil, o.failed(ctx, report, "making what --role needs", fmt.Errorf("%w; run the same command again: it reuses what was made", err))
	}
	if o.DryRun == cli.DryRunServer {
		return nil, nil
	}
	// The token is bound to the ServiceAccount alone: --revoke deletes it,
	// and the API server then refuses every token of it, since it checks
	// that the account (of the UID in the token) still exists.
	seconds := int64(o.Duration / time.Second)
	var tok *authenticationv1.TokenRequest
	err = bounded(ctx, p, func(ctx context.Context) (err error) {
		tok, err = kube.CoreV1().ServiceAccounts(KubeconfigNamespace).CreateToken(cli.HideBodies(ctx), want.ServiceAccount.Name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, o.failed(ctx, report, "asking a token for ServiceAccount "+report.ServiceAccount, fmt.Errorf("%w; %s was not written", err, o.OutputFile))
	}
	report.Expires = &tok.Status.ExpirationTimestamp
	if asked := time.Now().Add(o.Duration); tok.Status.ExpirationTimestamp.Before(&metav1.Time{Time: asked.Add(-time.Minute)}) {
		o.progress.Printf("the workload cluster's API server gives tokens a shorter life than asked: this one expires %s", tok.Status.ExpirationTimestamp.UTC().Format(time.RFC3339))
	}
	return admin.WithToken(o.Name+"-"+o.Role, want.ServiceAccount.Name, tok.Status.Token)
}

// revokeRole deletes the user's ServiceAccount and binding of --role, as
// PlanRevokeRoleAccess says, each only as it was read (UID and
// resourceVersion preconditions): one changed meanwhile is not deleted.
func (o *KubeconfigOptions) revokeRole(ctx context.Context, p *Platform, admin *kubeconfig.Kubeconfig, report *KubeconfigReport) error {
	kube, have, err := o.roleClient(ctx, p, admin, report, "nothing was deleted")
	if err != nil {
		return err
	}
	plan, err := PlanRevokeRoleAccess(o.Role, have)
	if err != nil {
		return err
	}
	report.Objects = plan
	if o.DryRun == cli.DryRunClient {
		return nil
	}
	for _, d := range plan {
		m := have.ServiceAccount.ObjectMeta
		if d.Kind == "ClusterRoleBinding" {
			m = have.Binding.ObjectMeta
		}
		opts := metav1.DeleteOptions{DryRun: cli.DryRunOption(o.DryRun), Preconditions: &metav1.Preconditions{UID: &m.UID, ResourceVersion: &m.ResourceVersion}}
		err := bounded(ctx, p, func(ctx context.Context) error {
			if d.Kind == "ClusterRoleBinding" {
				return kube.RbacV1().ClusterRoleBindings().Delete(ctx, d.Name, opts)
			}
			return kube.CoreV1().ServiceAccounts(KubeconfigNamespace).Delete(ctx, d.Name, opts)
		})
		switch {
		case apierrors.IsNotFound(err):
			// Gone meanwhile: what --revoke wanted.
		case apierrors.IsConflict(err):
			return exitcode.RefusedErrorf("%s %s changed in the workload cluster while this command ran; it was not deleted: run the same command again", d.Kind, d.Name)
		case err != nil:
			return o.failed(ctx, report, "deleting "+d.Kind+" "+d.Name, fmt.Errorf("%w; what came before it is deleted: run the same command again", err))
		}
	}
	return nil
}

// readRoleAccess reads what PlanRoleAccess decides on, each request bounded.
func readRoleAccess(ctx context.Context, p *Platform, kube kubernetes.Interface, role, user string) (RoleAccess, error) {
	have := RoleAccess{User: user}
	want := desiredRoleObjects(role, user)
	// absent turns NotFound into "there is none".
	absent := func(err error) error {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	err := bounded(ctx, p, func(ctx context.Context) error {
		_, err := kube.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{})
		have.RoleExists = err == nil
		return absent(err)
	})
	if err != nil {
		return have, err
	}
	err = bounded(ctx, p, func(ctx context.Context) error {
		ns, err := kube.CoreV1().Namespaces().Get(ctx, KubeconfigNamespace, metav1.GetOptions{})
		if err == nil {
			have.Namespace = ns
		}
		return absent(err)
	})
	if err != nil {
		return have, err
	}
	err = bounded(ctx, p, func(ctx context.Context) error {
		sa, err := kube.CoreV1().ServiceAccounts(KubeconfigNamespace).Get(ctx, want.ServiceAccount.Name, metav1.GetOptions{})
		if err == nil {
			have.ServiceAccount = sa
		}
		return absent(err)
	})
	if err != nil {
		return have, err
	}
	err = bounded(ctx, p, func(ctx context.Context) error {
		b, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, want.Binding.Name, metav1.GetOptions{})
		if err == nil {
			have.Binding = b
		}
		return absent(err)
	})
	return have, err
}

// createRoleObjects creates what the plan says to create, in order
// (namespace, ServiceAccount, binding).
func createRoleObjects(ctx context.Context, p *Platform, kube kubernetes.Interface, want roleObjects, plan []WorkloadObject, dryRun cli.DryRun) error {
	opts := metav1.CreateOptions{DryRun: cli.DryRunOption(dryRun), FieldManager: FieldManager}
	for _, o := range plan {
		if o.Action != ActionCreate {
			continue
		}
		err := bounded(ctx, p, func(ctx context.Context) (err error) {
			switch o.Kind {
			case "Namespace":
				_, err = kube.CoreV1().Namespaces().Create(ctx, want.Namespace, opts)
			case "ServiceAccount":
				_, err = kube.CoreV1().ServiceAccounts(KubeconfigNamespace).Create(ctx, want.ServiceAccount, opts)
			case "ClusterRoleBinding":
				_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, want.Binding, opts)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("creating %s %s: %w", o.Kind, o.Name, err)
		}
	}
	return nil
}
