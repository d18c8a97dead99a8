// park kubeconfig --role: a ServiceAccount token bound to a ClusterRole of
// the workload cluster, made with the admin kubeconfig.

package park

import (
	"context"
	"fmt"
	"maps"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
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
// reuses only objects that carry it.
var managedByPark = map[string]string{"app.kubernetes.io/managed-by": FieldManager}

// The actions on an object of the workload cluster.
const (
	ActionCreate = "create"
	ActionReuse  = "reuse"
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
// of a --role credential: whether the ClusterRole exists, and the
// namespace, ServiceAccount and ClusterRoleBinding of that name (nil when
// there is none).
type RoleAccess struct {
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

func desiredRoleObjects(role string) roleObjects {
	name := roleObjectName(role)
	meta := func(namespace, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: maps.Clone(managedByPark)}
	}
	return roleObjects{
		Namespace:      &corev1.Namespace{ObjectMeta: meta("", KubeconfigNamespace)},
		ServiceAccount: &corev1.ServiceAccount{ObjectMeta: meta(KubeconfigNamespace, name)},
		Binding: &rbacv1.ClusterRoleBinding{ObjectMeta: meta("", name),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: KubeconfigNamespace, Name: name}}},
	}
}

// PlanRoleAccess says which objects a --role credential makes and which it
// reuses. It refuses (exit 3) when the ClusterRole is missing, or when an
// object of that name exists that is not park's or binds something else:
// taking it over would hand out what its owner set up.
func PlanRoleAccess(role string, have RoleAccess) ([]WorkloadObject, error) {
	want := desiredRoleObjects(role)
	if !have.RoleExists {
		return nil, exitcode.RefusedErrorf("the workload cluster has no ClusterRole %q; nothing was changed (name one it has, e.g. view)", role)
	}
	notOurs := func(kind, name string) error {
		return exitcode.RefusedErrorf("%s %s exists in the workload cluster and is not kubectl-park's (no label app.kubernetes.io/managed-by=%s); nothing was changed: delete it, or ask for another --role", kind, name, FieldManager)
	}
	plan := []WorkloadObject{{Action: ActionReuse, Kind: "Namespace", Name: KubeconfigNamespace}}
	switch ns := have.Namespace; {
	case ns == nil:
		plan[0].Action = ActionCreate
	// Whoever acts in a namespace spokekit did not make would reach the
	// privileged ServiceAccount put there (spoke prepare's is spokekit's too).
	case !ours(ns.Labels) && ns.Labels["app.kubernetes.io/managed-by"] != "kubectl-spoke":
		return nil, notOurs("Namespace", KubeconfigNamespace)
	}
	sa := WorkloadObject{Action: ActionReuse, Kind: "ServiceAccount", Namespace: KubeconfigNamespace, Name: want.ServiceAccount.Name}
	switch {
	case have.ServiceAccount == nil:
		sa.Action = ActionCreate
	case !ours(have.ServiceAccount.Labels):
		return nil, notOurs("ServiceAccount", KubeconfigNamespace+"/"+sa.Name)
	}
	binding := WorkloadObject{Action: ActionReuse, Kind: "ClusterRoleBinding", Name: want.Binding.Name, Detail: "ClusterRole " + role + " to ServiceAccount " + KubeconfigNamespace + "/" + sa.Name}
	switch b := have.Binding; {
	case b == nil:
		binding.Action = ActionCreate
	case !ours(b.Labels):
		return nil, notOurs("ClusterRoleBinding", b.Name)
	case b.RoleRef != want.Binding.RoleRef || len(b.Subjects) != 1 || b.Subjects[0] != want.Binding.Subjects[0]:
		return nil, exitcode.RefusedErrorf("ClusterRoleBinding %s in the workload cluster no longer binds only ClusterRole %s to ServiceAccount %s/%s; nothing was changed: delete it and run again", b.Name, role, KubeconfigNamespace, sa.Name)
	}
	return append(plan, sa, binding), nil
}

func ours(labels map[string]string) bool {
	for k, v := range managedByPark {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// roleKubeconfig makes (or reuses) the ServiceAccount and binding of --role
// in the workload cluster with the admin kubeconfig, asks a token of
// --duration for it and returns the kubeconfig that holds it. Under a dry
// run it returns no kubeconfig: client sends nothing, server sends the
// creations as dry runs and asks no token.
func (o *KubeconfigOptions) roleKubeconfig(ctx context.Context, p *Platform, admin *kubeconfig.Kubeconfig, report *KubeconfigReport) ([]byte, error) {
	cfg, err := admin.RESTConfig()
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for the cluster from %s: %w", report.Source, err)
	}
	failed := func(doing string, err error) error {
		return fmt.Errorf("%s in cluster %s/%s (with the kubeconfig from %s): %s", doing, o.Namespace, o.Name, report.Source, notChecked(ctx, err))
	}
	have, err := readRoleAccess(ctx, p, kube, o.Role)
	if err != nil {
		return nil, failed("reading what --role needs", fmt.Errorf("%w; nothing was changed", err))
	}
	plan, err := PlanRoleAccess(o.Role, have)
	if err != nil {
		return nil, err
	}
	want := desiredRoleObjects(o.Role)
	report.Credential, report.Role, report.ServiceAccount, report.Objects = CredentialToken, o.Role, KubeconfigNamespace+"/"+want.ServiceAccount.Name, plan
	if o.DryRun == cli.DryRunClient {
		return nil, nil
	}
	if err := createRoleObjects(ctx, p, kube, want, plan, o.DryRun); err != nil {
		return nil, failed("making what --role needs", fmt.Errorf("%w; run the same command again: it reuses what was made", err))
	}
	if o.DryRun == cli.DryRunServer {
		return nil, nil
	}
	seconds := int64(o.Duration / time.Second)
	var tok *authnv1.TokenRequest
	err = bounded(ctx, p, func(ctx context.Context) (err error) {
		tok, err = kube.CoreV1().ServiceAccounts(KubeconfigNamespace).CreateToken(cli.HideBodies(ctx), want.ServiceAccount.Name,
			&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, failed("asking a token for ServiceAccount "+report.ServiceAccount, fmt.Errorf("%w; %s was not written", err, o.OutputFile))
	}
	report.Expires = &tok.Status.ExpirationTimestamp
	if asked := time.Now().Add(o.Duration); tok.Status.ExpirationTimestamp.Before(&metav1.Time{Time: asked.Add(-time.Minute)}) {
		o.progress.Printf("the workload cluster's API server gives tokens a shorter life than asked: this one expires %s", tok.Status.ExpirationTimestamp.UTC().Format(time.RFC3339))
	}
	return admin.WithToken(o.Name+"-"+o.Role, want.ServiceAccount.Name, tok.Status.Token)
}

// readRoleAccess reads what PlanRoleAccess decides on, each request bounded.
func readRoleAccess(ctx context.Context, p *Platform, kube kubernetes.Interface, role string) (RoleAccess, error) {
	var have RoleAccess
	want := desiredRoleObjects(role)
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
