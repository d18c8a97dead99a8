package park

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/spokekit/spokekit/internal/api/capi"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
)

// maxAttempts bounds how often a plan is made again after the Cluster
// changed between reading it and patching it.
const maxAttempts = 5

// FieldManager names kubectl park in the managedFields of what it writes.
const FieldManager = "kubectl-park"

// Platform reads and writes Cluster API objects in one namespace of the
// platform cluster, at the version the server serves.
type Platform struct {
	Dynamic   dynamic.Interface
	Kube      kubernetes.Interface
	Version   string
	Namespace string
	// WorkloadTimeout bounds each request to a workload cluster
	// (0: WorkloadRequestTimeout).
	WorkloadTimeout time.Duration
}

// NewPlatform finds the served Cluster API version and builds the clients.
func NewPlatform(f *cli.Factory, namespace string) (*Platform, error) {
	mapper, err := f.ToRESTMapper()
	if err != nil {
		return nil, fmt.Errorf("discovering the platform's API: %w", err)
	}
	m, err := mapper.RESTMapping(capi.ClusterKind, capi.Versions...)
	if err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("discovering the platform's API: %w", err)
	}
	if err != nil {
		return nil, exitcode.RefusedErrorf("this API server does not serve Cluster API clusters (%s %v): is the context the platform cluster?", capi.ClusterKind, capi.Versions)
	}
	dyn, err := f.DynamicClient()
	if err != nil {
		return nil, err
	}
	kube, err := f.KubernetesClientSet()
	if err != nil {
		return nil, err
	}
	return &Platform{Dynamic: dyn, Kube: kube, Version: m.Resource.Version, Namespace: namespace}, nil
}

// onPlatform runs a command's work with the platform's clients, found as
// its Run starts: discovery is the first request of every park command.
func onPlatform(f *cli.Factory, namespace string, work func(*Platform) error) error {
	p, err := NewPlatform(f, namespace)
	if err != nil {
		return err
	}
	return work(p)
}

func (p *Platform) resource(name string) dynamic.NamespaceableResourceInterface {
	return p.Dynamic.Resource(capi.GVR(p.Version, name))
}

// Cluster reads one Cluster; a missing one is a refusal.
func (p *Platform) Cluster(ctx context.Context, name string) (*capi.Cluster, error) {
	u, err := p.resource(capi.ClusterResource).Namespace(p.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, exitcode.RefusedErrorf("cluster %q not found in namespace %q; nothing was changed (see the clusters with: kubectl park list -n %s)", name, p.Namespace, p.Namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("reading cluster %s/%s: %w", p.Namespace, name, err)
	}
	return capi.FromUnstructured[capi.Cluster](u)
}

// ControlPlanePods lists the pods of a Kamaji control plane on the platform.
// The platform's runbook selects them by the cluster's name in Kamaji's name
// label; Kamaji puts the control plane object's name there, which differs
// when a topology adds a suffix, so that name is the fallback when the
// cluster's finds none.
func (p *Platform) ControlPlanePods(ctx context.Context, c *capi.Cluster) ([]corev1.Pod, error) {
	names := []string{c.Name}
	if ref := capi.ControlPlaneName(c); ref != "" && ref != c.Name {
		names = append(names, ref)
	}
	for _, name := range names {
		pods, err := p.Kube.CoreV1().Pods(p.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{capi.KamajiNameLabel: name}).String()})
		if err != nil {
			return nil, fmt.Errorf("listing the control-plane pods of %s (%s=%s): %w", c.Name, capi.KamajiNameLabel, name, err)
		}
		if len(pods.Items) > 0 {
			return pods.Items, nil
		}
	}
	return nil, nil
}

// Clusters lists the clusters of the namespace ("" for all) that match the
// label selector, in pages of chunkSize (0: one request).
func (p *Platform) Clusters(ctx context.Context, namespace, selector string, chunkSize int64) ([]capi.Cluster, error) {
	list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return p.resource(capi.ClusterResource).Namespace(namespace).List(ctx, opts)
	}
	var clusters []capi.Cluster
	err := cli.EachInChunks(ctx, list, chunkSize, metav1.ListOptions{LabelSelector: selector}, func(u *unstructured.Unstructured) error {
		c, err := capi.FromUnstructured[capi.Cluster](u)
		if err != nil {
			return err
		}
		clusters = append(clusters, *c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing clusters: %w", err)
	}
	return clusters, nil
}

// list reads objects of one Cluster API resource that belong to a cluster.
func list[T any](ctx context.Context, p *Platform, resource, cluster string) ([]T, error) {
	l, err := p.resource(resource).Namespace(p.Namespace).List(ctx, metav1.ListOptions{LabelSelector: capi.ClusterNameLabel + "=" + cluster})
	if err != nil {
		return nil, fmt.Errorf("listing %s of cluster %s/%s: %w", resource, p.Namespace, cluster, err)
	}
	return capi.ListFromUnstructured[T](l)
}

// healthChecks lists the MachineHealthChecks whose spec names the cluster
// (the cluster-name label is only added by Cluster API's webhook).
func (p *Platform) healthChecks(ctx context.Context, cluster string) ([]capi.MachineHealthCheck, error) {
	l, err := p.resource(capi.MachineHealthCheckResource).Namespace(p.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the MachineHealthChecks in %s: %w", p.Namespace, err)
	}
	all, err := capi.ListFromUnstructured[capi.MachineHealthCheck](l)
	if err != nil {
		return nil, err
	}
	var out []capi.MachineHealthCheck
	for _, h := range all {
		if h.Spec.ClusterName == cluster {
			out = append(out, h)
		}
	}
	return out, nil
}

// clusterPlan is a plan made from one read of a Cluster.
type clusterPlan interface {
	patch() Patch
}

// applyPlan reads the cluster, makes the plan and sends its patch. When the
// patch fails because the cluster changed after the read (a test operation
// failed), it reads again and makes a new plan, a bounded number of times.
// With a client dry-run nothing is sent.
func applyPlan[P clusterPlan](ctx context.Context, p *Platform, name string, dryRun cli.DryRun, progress *cli.Progress, makePlan func(*capi.Cluster) (P, error)) (P, error) {
	var plan P
	var last *capi.Cluster
	var patchErr error
	for attempt := 1; ; attempt++ {
		c, err := p.Cluster(ctx, name)
		if err != nil {
			return plan, err
		}
		if last != nil && c.Generation == last.Generation && maps.Equal(c.Annotations, last.Annotations) {
			// The cluster did not change, so the refusal was not a race: a
			// webhook or validation said no, and says why.
			return plan, fmt.Errorf("patching cluster %s/%s: %w; nothing was changed", p.Namespace, name, patchErr)
		}
		if plan, err = makePlan(c); err != nil {
			return plan, err
		}
		if len(plan.patch()) == 0 || dryRun == cli.DryRunClient {
			return plan, nil
		}
		patchErr = p.patchCluster(ctx, name, plan.patch(), dryRun)
		if patchErr == nil {
			return plan, nil
		}
		if !apierrors.IsInvalid(patchErr) && !apierrors.IsConflict(patchErr) {
			return plan, fmt.Errorf("patching cluster %s/%s: %w; nothing was changed", p.Namespace, name, patchErr)
		}
		if attempt == maxAttempts {
			return plan, fmt.Errorf("cluster %s/%s kept changing while it was being patched (%d attempts); nothing was changed, run the command again: %w", p.Namespace, name, attempt, patchErr)
		}
		progress.Update("cluster %s changed since it was read (%v); reading it again", name, patchErr)
		last = c
	}
}

func (p *Platform) patchCluster(ctx context.Context, name string, patch Patch, dryRun cli.DryRun) error {
	data, err := patch.JSON()
	if err != nil {
		return err
	}
	_, err = p.resource(capi.ClusterResource).Namespace(p.Namespace).Patch(ctx, name, types.JSONPatchType, data,
		metav1.PatchOptions{DryRun: cli.DryRunOption(dryRun), FieldManager: FieldManager})
	return err
}

// WhoAmI names the user the kubeconfig authenticates as, for the record.
func (p *Platform) WhoAmI(ctx context.Context) string {
	if u := cli.UserName(ctx, p.Kube.AuthenticationV1()); u != "" {
		return u
	}
	return "unknown"
}

// machineWatch lists and watches the Machines of one cluster.
func (p *Platform) machineWatch(cluster string) cache.ListerWatcher {
	return cli.ListWatch(p.resource(capi.MachineResource).Namespace(p.Namespace), "", capi.ClusterNameLabel+"="+cluster)
}

// clusterWatch lists and watches one Cluster.
func (p *Platform) clusterWatch(name string) cache.ListerWatcher {
	return cli.ListWatch(p.resource(capi.ClusterResource).Namespace(p.Namespace), fields.OneTermEqualSelector("metadata.name", name).String(), "")
}

// workerMachines keeps the Machines a worker pool owns (not the control plane's).
func workerMachines(objs []any) ([]capi.Machine, error) {
	var out []capi.Machine
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		m, err := capi.FromUnstructured[capi.Machine](u)
		if err != nil {
			return nil, err
		}
		if isWorker(m.OwnerReferences) {
			out = append(out, *m)
		}
	}
	return out, nil
}

func isWorker(owners []metav1.OwnerReference) bool {
	for _, o := range owners {
		switch o.Kind {
		case "MachineSet", "MachineDeployment", "MachinePool":
			return true
		}
	}
	return false
}

// ClusterClient connects to the workload cluster itself: with the given
// kubeconfig file (the user's own, with kubectl's meaning), or else with the
// admin kubeconfig the platform keeps in the NAME-kubeconfig secret, read in
// memory and never written anywhere, through the loader for kubeconfigs
// from a cluster (a refusal is exit 3). spokekit-park reads no Secret: the
// secret is read only where the user holds the opt-in Role for it.
// Its errors name no flag: the commands that call it differ in what the
// user can do about it.
func (p *Platform) ClusterClient(ctx context.Context, cluster, kubeconfigFile string) (kubernetes.Interface, string, error) {
	var cfg *rest.Config
	var err error
	source := kubeconfigFile
	if kubeconfigFile != "" {
		cfg, err = kubeconfig.UserRESTConfig(kubeconfigFile)
		if err != nil {
			return nil, source, fmt.Errorf("loading --cluster-kubeconfig %s: %w", kubeconfigFile, err)
		}
	} else {
		var kc *kubeconfig.Kubeconfig
		if kc, source, err = p.secretKubeconfig(ctx, cluster); err != nil {
			return nil, source, err
		}
		if cfg, err = kc.RESTConfig(); err != nil {
			return nil, source, err
		}
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, source, fmt.Errorf("client for the cluster from %s: %w", source, err)
	}
	return kube, source, nil
}

// kubeconfigSecretNotYet says whether the cluster's NAME-kubeconfig Secret is
// missing, as opposed to unreadable: the API server answers NotFound only to
// a user allowed to read it.
func (p *Platform) kubeconfigSecretNotYet(ctx context.Context, cluster string) bool {
	_, err := p.Kube.CoreV1().Secrets(p.Namespace).Get(cli.HideBodies(ctx), capi.KubeconfigSecretName(cluster), metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

// secretKubeconfig loads the kubeconfig of the cluster's NAME-kubeconfig
// secret; its body is never logged, whatever -v says.
func (p *Platform) secretKubeconfig(ctx context.Context, cluster string) (*kubeconfig.Kubeconfig, string, error) {
	s, source, err := p.kubeconfigSecret(ctx, cluster)
	if err != nil {
		if apierrors.IsForbidden(err) {
			return nil, source, fmt.Errorf("no kubeconfig for the cluster: the current user may not read %s (the opt-in Role for it is not bound)", source)
		}
		if apierrors.IsNotFound(err) {
			return nil, source, fmt.Errorf("cannot read %s (%s)", source, apierrors.ReasonForError(err))
		}
		return nil, source, fmt.Errorf("reading %s: %w", source, err)
	}
	kc, err := kubeconfig.FromSecret(s, capi.KubeconfigSecretKey)
	return kc, source, err
}

// kubeconfigSecret reads the cluster's NAME-kubeconfig Secret, whose body
// is never logged, whatever -v says; source names it for messages.
func (p *Platform) kubeconfigSecret(ctx context.Context, cluster string) (*corev1.Secret, string, error) {
	secret := capi.KubeconfigSecretName(cluster)
	s, err := p.Kube.CoreV1().Secrets(p.Namespace).Get(cli.HideBodies(ctx), secret, metav1.GetOptions{})
	return s, "secret " + p.Namespace + "/" + secret, err
}

// RefuseNoClusterAccess is the preflight of a --wait that will reach the
// workload cluster: without a kubeconfig for it (the file given, or the
// NAME-kubeconfig secret the user may read), or with one the loader
// refuses, refuse now (exit 3), before anything is changed, rather than
// leave part of the wait unchecked.
func (p *Platform) RefuseNoClusterAccess(ctx context.Context, cluster, kubeconfigFile string) error {
	_, _, err := p.ClusterClient(ctx, cluster, kubeconfigFile)
	switch {
	case err == nil:
		return nil
	case exitcode.IsRefused(err) || kubeconfigFile != "":
		return exitcode.RefusedErrorf("%w; nothing was changed", err)
	case p.kubeconfigSecretNotYet(ctx, cluster):
		// Cluster API writes NAME-kubeconfig once the control plane is up.
		// NotFound, not Forbidden: the user may read it then, and the wait's
		// node phase says whether it could (exit 4 when it could not).
		return nil
	}
	return exitcode.RefusedErrorf("--wait reads the workload cluster, but %w; nothing was changed: run without --wait, or %s", err, p.clusterAccessHint(ctx, cluster))
}
