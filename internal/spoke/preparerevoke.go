// spoke prepare --revoke: delete what prepare made on a spoke, so that the
// token it wrote stops working.

package spoke

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/authz"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/spoke/hubclient"
)

// stillUsedWarning is what revoking costs while the hub still uses the
// prepared kubeconfig.
const stillUsedWarning = "in unified mode, and in addon mode before the agent took the spoke over (PivotComplete), the hub joins, keeps and unjoins the spoke with the kubeconfig prepare wrote: once its token is revoked, kubectl spoke remove cannot unjoin the cluster (rotate it with kubectl spoke rotate-kubeconfig instead)"

// revokeDelete is one object prepare --revoke deletes, as it was read: its
// UID and resourceVersion are the delete's preconditions, so an object
// replaced or changed since is not deleted.
type revokeDelete struct {
	Kind            string    `json:"kind"`
	Namespace       string    `json:"namespace,omitempty"`
	Name            string    `json:"name"`
	UID             types.UID `json:"uid"`
	ResourceVersion string    `json:"resourceVersion"`
	Why             string    `json:"why"`
}

func (d revokeDelete) what() string {
	if d.Namespace != "" {
		return strings.ToLower(d.Kind) + " " + d.Namespace + "/" + d.Name
	}
	return strings.ToLower(d.Kind) + " " + d.Name
}

// revokePlan is what prepare --revoke deletes on the spoke, in order: the
// token first (the credential ends), then the binding, the ServiceAccount
// (any token asked for it since ends too) and the ClusterRole. Empty when
// nothing of prepare's is left. The namespace stays (see planRevoke).
type revokePlan struct {
	Names  prepareNames   `json:"names"`
	Delete []revokeDelete `json:"delete"`
}

// planRevoke decides the deletes from what exists; it reads and writes
// nothing. Objects of prepare's names that spokekit did not make (no
// hubclient.ManagedByLabel), a token Secret of another ServiceAccount and a binding of
// another role are refused: deleting them would take away what someone
// else set up.
//
// The namespace is kept even when prepare made it: park kubeconfig --role
// puts its accounts in spokekit-system too, telling that it holds nothing
// else would take a list of every kind in it, and an empty namespace grants
// nothing.
func planRevoke(n prepareNames, f prepareFacts) (*revokePlan, error) {
	p := &revokePlan{Names: n, Delete: []revokeDelete{}}
	add := func(kind, ns string, m metav1.ObjectMeta, why string) error {
		d := revokeDelete{Kind: kind, Namespace: ns, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion, Why: why}
		if !madeBySpokekit(m) {
			return exitcode.RefusedErrorf("%s was not made by kubectl spoke prepare (no label %s); nothing was deleted: it is not prepare's to revoke", d.what(), labels.Set(hubclient.ManagedByLabel))
		}
		p.Delete = append(p.Delete, d)
		return nil
	}
	if t := f.Token; t != nil {
		if err := add("Secret", n.Namespace, t.ObjectMeta, "its token stops working"); err != nil {
			return nil, err
		}
		if t.Type != corev1.SecretTypeServiceAccountToken || t.Annotations[corev1.ServiceAccountNameKey] != n.ServiceAccount {
			return nil, exitcode.RefusedErrorf("secret %s/%s is not the token of serviceaccount %s (type %s); nothing was deleted: delete it by hand if it is a leftover", n.Namespace, n.Token, n.ServiceAccount, t.Type)
		}
	}
	if b := f.Binding; b != nil {
		if err := add("ClusterRoleBinding", "", b.ObjectMeta, "the join's rights go"); err != nil {
			return nil, err
		}
		if want := (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: n.Role}); b.RoleRef != want {
			return nil, exitcode.RefusedErrorf("clusterrolebinding %s binds %s %s, not prepare's role; nothing was deleted: delete it by hand if it is a leftover", n.Role, b.RoleRef.Kind, b.RoleRef.Name)
		}
	}
	if sa := f.ServiceAccount; sa != nil {
		if err := add("ServiceAccount", n.Namespace, sa.ObjectMeta, "any other token of it stops working"); err != nil {
			return nil, err
		}
	}
	if r := f.Role; r != nil {
		if err := add("ClusterRole", "", r.ObjectMeta, "prepare makes it again when run again"); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// steps is what the plan did, or under a dry run would do.
func (p *revokePlan) steps(dryRun cli.DryRun) []Step {
	if len(p.Delete) == 0 {
		return []Step{{"namespace " + p.Names.Namespace, "nothing of prepare's left to revoke"}}
	}
	verb := "deleted"
	if dryRun != cli.DryRunNone {
		verb = "would be deleted"
	}
	var out []Step
	for _, d := range p.Delete {
		out = append(out, Step{d.what(), verb + " (" + d.Why + ")"})
	}
	return append(out, Step{"namespace " + p.Names.Namespace, "kept (other tools' objects may live there; delete it by hand when it is empty)"})
}

// subjects are the deleted objects, as -o name prints them.
func (p *revokePlan) subjects() []string {
	var out []string
	for _, d := range p.Delete {
		kind := strings.ToLower(d.Kind)
		if kind == "clusterrole" || kind == "clusterrolebinding" {
			kind += ".rbac.authorization.k8s.io"
		}
		out = append(out, kind+"/"+d.Name)
	}
	return out
}

// access is what the deletes need of the current user.
func (p *revokePlan) access() []authz.Permission {
	var out []authz.Permission
	for _, d := range p.Delete {
		group, resource := "", strings.ToLower(d.Kind)+"s"
		if d.Kind == "ClusterRole" || d.Kind == "ClusterRoleBinding" {
			group = rbacv1.GroupName
		}
		out = append(out, authz.Permission{Verb: "delete", Group: group, Resource: resource, Namespace: d.Namespace, Name: d.Name})
	}
	return out
}

// hubStillUses says why the hub may still use the kubeconfig prepare wrote
// for Spoke s ("" when it does not): only in addon mode after the pivot
// does the agent on the spoke join, keep and unjoin it. s nil is a Spoke
// that is not on the hub (any more): nothing there uses it.
func hubStillUses(s *fleetconfig.Spoke) string {
	switch {
	case s == nil:
		return ""
	case !listsAgent(s):
		return fmt.Sprintf("spoke %s does not run the FleetConfig agent (unified mode, or hub-as-spoke)", s.Name)
	case !pivoted(s):
		return fmt.Sprintf("the agent has not taken spoke %s over yet (PivotComplete is not True)", s.Name)
	}
	return ""
}

// revoke is prepare --revoke: read, check the hub's use, plan, delete.
func (o *PrepareOptions) revoke(ctx context.Context) error {
	facts, err := o.read(ctx, "nothing was deleted")
	if err != nil {
		return err
	}
	plan, err := planRevoke(o.names, *facts)
	if err != nil {
		return err
	}
	p := cli.NewProgress(o.ErrOut)
	if len(plan.Delete) > 0 {
		if err := o.checkHubDoesNotUse(ctx, p); err != nil {
			return err
		}
	}
	if err := o.checkAccess(ctx, plan.access(), "nothing was deleted"); err != nil {
		return err
	}
	if err := o.deleteAll(ctx, plan, p); err != nil {
		return err
	}
	report := &PrepareReport{ReportMeta: o.reportMeta("SpokePrepareRevoke"), DryRun: cli.DryRunName(o.DryRun), Steps: plan.steps(o.DryRun), subjects: plan.subjects()}
	if o.DryRun != cli.DryRunNone && len(plan.Delete) > 0 {
		report.Next = "run again without --dry-run to delete these"
	}
	return o.print(report)
}

// checkHubDoesNotUse refuses (exit 3, unless --force) while the hub may
// still use the prepared kubeconfig: the Spoke --spoke names on the hub of
// --hub-kubeconfig is in unified mode or not past the pivot; or no Spoke
// was named, so that nothing could be checked.
func (o *PrepareOptions) checkHubDoesNotUse(ctx context.Context, p *cli.Progress) error {
	why := "no Spoke was checked (--spoke NAME --hub-kubeconfig FILE names it)"
	if o.Spoke != "" {
		hub, err := NewHubClient(ctx, o.f.ForKubeconfig(o.HubKubeconfig))
		if err != nil {
			return exitcode.RefusedErrorf("the hub of %s: %w; nothing was deleted", o.HubKubeconfig, err)
		}
		s, err := hub.Spoke(ctx, o.Spoke)
		if err != nil {
			return exitcode.RefusedErrorf("reading spoke %s on the hub of %s: %w; nothing was deleted", o.Spoke, o.HubKubeconfig, err)
		}
		if why = hubStillUses(s); why == "" {
			if s == nil {
				p.Done("spoke %s is not on the hub (namespace %s): nothing there uses the prepared kubeconfig", o.Spoke, hub.Namespace)
			} else {
				p.Done("spoke %s runs the FleetConfig agent, which took it over: the hub no longer uses the prepared kubeconfig", o.Spoke)
			}
			return nil
		}
	}
	if o.Force {
		fmt.Fprintf(o.ErrOut, "Warning: %s; revoking anyway (--force): %s\n", why, stillUsedWarning)
		return nil
	}
	return exitcode.RefusedErrorf("%s; nothing was deleted: %s. Pass --force to revoke anyway", why, stillUsedWarning)
}

// deleteAll makes the plan's deletes in order, each under its
// preconditions. With --dry-run=client it sends nothing; with server every
// delete is a server dry run.
func (o *PrepareOptions) deleteAll(ctx context.Context, plan *revokePlan, progress *cli.Progress) error {
	if o.DryRun == cli.DryRunClient {
		return nil
	}
	c := o.client
	for _, d := range plan.Delete {
		progress.Update("deleting %s", d.what())
		opts := metav1.DeleteOptions{DryRun: cli.DryRunOption(o.DryRun), Preconditions: &metav1.Preconditions{UID: &d.UID, ResourceVersion: &d.ResourceVersion}}
		var err error
		switch d.Kind {
		case "Secret":
			err = c.CoreV1().Secrets(d.Namespace).Delete(ctx, d.Name, opts)
		case "ClusterRoleBinding":
			err = c.RbacV1().ClusterRoleBindings().Delete(ctx, d.Name, opts)
		case "ServiceAccount":
			err = c.CoreV1().ServiceAccounts(d.Namespace).Delete(ctx, d.Name, opts)
		case "ClusterRole":
			err = c.RbacV1().ClusterRoles().Delete(ctx, d.Name, opts)
		}
		switch {
		case apierrors.IsNotFound(err):
			// Gone meanwhile: what revoke wanted.
		case apierrors.IsConflict(err):
			return exitcode.RefusedErrorf("%s was changed by someone else while this command ran; it was not deleted: run the same command again", d.what())
		case err != nil:
			return fmt.Errorf("deleting %s: %w; what came before it is deleted: run the same command again", d.what(), err)
		}
	}
	return nil
}
