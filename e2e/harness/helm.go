package harness

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"
)

// SpokesJobManager is the spec.managedBy of the test bed's apply-spokes
// hook Jobs: kwok runs no pods, so the harness's SpokesJob plays them.
const SpokesJobManager = "spokekit.e2e/apply-spokes"

// SpokesJobRevisionAnnotation names the release revision a hook Job was
// made for (set by e2e/charts/mural).
const SpokesJobRevisionAnnotation = "mural.example.com/revision"

var spokeGVR = schema.GroupVersionResource{Group: "fleetconfig.open-cluster-management.io", Version: "v1beta1", Resource: "spokes"}

// Helm is the Helm SDK's configuration for the releases of one namespace of
// the cluster: the same SDK the plugins upgrade with.
func (c *Cluster) Helm(namespace string) (*action.Configuration, error) {
	// As the helm CLI sets it: the test bed's release is one `helm install` made.
	kube.ManagedFieldsManager = "helm"
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig, flags.Namespace = &c.Kubeconfig, &namespace
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	if err := cfg.Init(flags, namespace, "secret"); err != nil {
		return nil, err
	}
	return cfg, nil
}

// HelmInstall installs the chart in chartDir as release name, with values,
// and waits for its hooks, as `helm install --wait=hookOnly` does.
func (c *Cluster) HelmInstall(ctx context.Context, chartDir, namespace, name string, values map[string]any) (*release.Release, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	cfg, err := c.Helm(namespace)
	if err != nil {
		return nil, err
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace = name, namespace
	in.WaitStrategy, in.Timeout = kube.HookOnlyStrategy, 2*time.Minute
	r, err := in.RunWithContext(ctx, ch, values)
	if err != nil {
		return nil, fmt.Errorf("helm install %s: %w", name, err)
	}
	rel, ok := r.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("helm install %s: a release of kind %T", name, r)
	}
	return rel, nil
}

// HelmUninstall uninstalls a release (what a test installed).
func (c *Cluster) HelmUninstall(namespace, name string) error {
	cfg, err := c.Helm(namespace)
	if err != nil {
		return err
	}
	u := action.NewUninstall(cfg)
	u.WaitStrategy, u.Timeout = kube.HookOnlyStrategy, time.Minute
	_, err = u.Run(name)
	return err
}

// HelmRevision reads revision v of a release (0: the latest).
func (c *Cluster) HelmRevision(namespace, name string, v int) (*release.Release, error) {
	cfg, err := c.Helm(namespace)
	if err != nil {
		return nil, err
	}
	g := action.NewGet(cfg)
	g.Version = v
	r, err := g.Run(name)
	if err != nil {
		return nil, err
	}
	rel, ok := r.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("release %s: a record of kind %T", name, r)
	}
	return rel, nil
}

// SpokesJob plays the post-install and post-upgrade job of the test bed's
// chart, whose pod kwok cannot run: for each hook Job handed to it
// (spec.managedBy SpokesJobManager), it reads the release revision the Job
// was made for, server-side applies the Spokes of that revision's
// <release>-spokes ConfigMap, as the job's kubectl would, and completes the
// Job, so that Helm's wait for its hooks ends as on a real cluster.
type SpokesJob struct {
	cluster   *Cluster
	namespace string
	release   string
	errs      chan error
}

// StartSpokesJob plays release's apply-spokes Jobs in namespace until ctx
// ends. Errors reports what it could not do.
func (c *Cluster) StartSpokesJob(ctx context.Context, namespace, releaseName string) *SpokesJob {
	j := &SpokesJob{cluster: c, namespace: namespace, release: releaseName, errs: make(chan error, 16)}
	go func() {
		done := map[types.UID]bool{}
		// A poll, not a watch: the Job exists for as long as Helm waits on it.
		_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			jobs, err := c.Kube.BatchV1().Jobs(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=apply-spokes"})
			if err != nil {
				return false, nil
			}
			for i := range jobs.Items {
				job := &jobs.Items[i]
				if done[job.UID] || job.Spec.ManagedBy == nil || *job.Spec.ManagedBy != SpokesJobManager {
					continue
				}
				if err := j.run(ctx, job); err != nil {
					select {
					case j.errs <- fmt.Errorf("job %s: %w", job.Name, err):
					default:
					}
					continue
				}
				done[job.UID] = true
			}
			return false, nil
		})
	}()
	return j
}

// Errors is what the job could not do, so far.
func (j *SpokesJob) Errors() []error {
	var out []error
	for {
		select {
		case err := <-j.errs:
			out = append(out, err)
		default:
			return out
		}
	}
}

func (j *SpokesJob) run(ctx context.Context, job *batchv1.Job) error {
	rev, err := strconv.Atoi(job.Annotations[SpokesJobRevisionAnnotation])
	if err != nil {
		return fmt.Errorf("annotation %s: %w", SpokesJobRevisionAnnotation, err)
	}
	rel, err := j.cluster.HelmRevision(j.namespace, j.release, rev)
	if err != nil {
		return err
	}
	spokes, err := spokesOf(rel, j.release+"-spokes")
	if err != nil {
		return err
	}
	for _, s := range spokes {
		data, err := s.MarshalJSON()
		if err != nil {
			return err
		}
		force := false
		if _, err := j.cluster.Dynamic.Resource(spokeGVR).Namespace(j.namespace).Patch(ctx, s.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: j.release + "-apply-spokes", Force: &force}); err != nil {
			return fmt.Errorf("applying Spoke %s: %w", s.GetName(), err)
		}
	}
	return j.complete(ctx, job)
}

// spokesOf reads the Spokes out of the ConfigMap the revision rendered.
func spokesOf(rel *release.Release, configMap string) ([]*unstructured.Unstructured, error) {
	for _, doc := range releaseutil.SplitManifests(rel.Manifest) {
		var cm corev1.ConfigMap
		if err := yaml.Unmarshal([]byte(doc), &cm); err != nil || cm.Kind != "ConfigMap" || cm.Name != configMap {
			continue
		}
		var out []*unstructured.Unstructured
		for _, s := range releaseutil.SplitManifests(cm.Data["spokes.yaml"]) {
			if strings.TrimSpace(s) == "" {
				continue
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
				return nil, fmt.Errorf("a Spoke of revision %d: %w", rel.Version, err)
			}
			if len(u.Object) > 0 {
				out = append(out, u)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("revision %d of %s renders no ConfigMap %s", rel.Version, rel.Name, configMap)
}

// complete writes the status a Job's controller writes when its one pod
// succeeded.
func (j *SpokesJob) complete(ctx context.Context, job *batchv1.Job) error {
	now := metav1.Now()
	job.Status.StartTime, job.Status.CompletionTime, job.Status.Succeeded = &now, &now, 1
	job.Status.Conditions = append(job.Status.Conditions,
		batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now, Reason: "CompletionsReached"},
		batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now, Reason: "CompletionsReached"})
	_, err := j.cluster.Kube.BatchV1().Jobs(j.namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
	return err
}
