package spoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	jsoniter "github.com/json-iterator/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
)

// FieldManager is the server-side apply field manager of kubectl spoke.
const FieldManager = "kubectl-spoke"

// HubClient is the hub cluster as the commands use it: clients and the release
// namespace where Spokes and their kubeconfig secrets live.
type HubClient struct {
	Dynamic   dynamic.Interface
	Kube      kubernetes.Interface
	Namespace string
	// ChunkSize is the page size of list requests.
	ChunkSize int64
	// hubNamespaces are the namespaces that hold a fleet Hub, as NewHubClient
	// found them; nil when it did not look (-n given) or could not.
	hubNamespaces map[string]bool
}

// NewHubClient builds the clients and resolves the namespace: -n when given;
// otherwise the namespace of the fleet's Hub when there is exactly one;
// otherwise the context's namespace.
func NewHubClient(ctx context.Context, f *cli.Factory) (*HubClient, error) {
	dyn, err := f.DynamicClient()
	if err != nil {
		return nil, fmt.Errorf("connecting to the hub: %w", err)
	}
	kube, err := f.KubernetesClientSet()
	if err != nil {
		return nil, fmt.Errorf("connecting to the hub: %w", err)
	}
	h := &HubClient{Dynamic: dyn, Kube: kube, ChunkSize: cli.DefaultChunkSize}
	ns, explicit, err := f.Namespace()
	if err != nil {
		return nil, err
	}
	h.Namespace = ns
	if explicit {
		return h, nil
	}
	hubs, err := dyn.Resource(fleetconfig.HubResource).List(ctx, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("looking for the fleet's Hub to find the release namespace: %w", err)
	}
	if err == nil {
		h.hubNamespaces = map[string]bool{}
		for i := range hubs.Items {
			h.hubNamespaces[hubs.Items[i].GetNamespace()] = true
		}
		if len(hubs.Items) == 1 {
			h.Namespace = hubs.Items[0].GetNamespace()
		}
	}
	return h, nil
}

// getInto reads one object; found is false when it does not exist.
func (*HubClient) getInto(ctx context.Context, ri dynamic.ResourceInterface, name string, into any) (found bool, err error) {
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, api.DecodeUnstructured(u, into)
}

// Spoke reads a Spoke of the release namespace; nil when it does not exist.
func (h *HubClient) Spoke(ctx context.Context, name string) (*fleetconfig.Spoke, error) {
	var s fleetconfig.Spoke
	found, err := h.getInto(ctx, h.Dynamic.Resource(fleetconfig.SpokeResource).Namespace(h.Namespace), name, &s)
	if err != nil || !found {
		return nil, wrapRead(err, "Spoke", h.Namespace, name)
	}
	return &s, nil
}

// ExistingSpoke reads a Spoke that must exist.
func (h *HubClient) ExistingSpoke(ctx context.Context, name string) (*fleetconfig.Spoke, error) {
	s, err := h.Spoke(ctx, name)
	if err == nil && s == nil {
		err = h.spokeNotFound(name)
	}
	return s, err
}

func (h *HubClient) spokeNotFound(name string) error {
	return fmt.Errorf("spoke %q not found in namespace %s: see kubectl spoke list", name, h.Namespace)
}

// errNoSecret is a Spoke's kubeconfig secret not existing: in addon mode
// the normal state once the agent took over and cleanupConfig
// .purgeKubeconfigSecret had it deleted. It proves nothing either way.
var errNoSecret = errors.New("the kubeconfig secret does not exist")

// StoredKubeconfig reads the kubeconfig a Spoke's secret holds (its
// spec.kubeconfig.context, as FleetConfig reads it), and the secret. Anyone
// who may write the secret wrote the kubeconfig: the loader refuses (exit
// 3) one that would run a program or read a local file. A secret that does
// not exist is errNoSecret; one that cannot be read, the API's error.
func (h *HubClient) StoredKubeconfig(ctx context.Context, s *fleetconfig.Spoke) (*kubeconfig.Kubeconfig, *corev1.Secret, error) {
	ref := s.Spec.Kubeconfig.SecretReference
	if ref == nil {
		return nil, nil, fmt.Errorf("spoke %s uses in-cluster credentials, not a kubeconfig secret", s.Name)
	}
	sec, err := h.Secret(ctx, secretGrantFor{Spoke: s.Name, NamedBy: s}, ref.Name)
	if err != nil {
		return nil, nil, err
	}
	if sec == nil {
		return nil, nil, fmt.Errorf("%w: spoke %s names secret %s/%s", errNoSecret, s.Name, h.Namespace, ref.Name)
	}
	key := ref.KubeconfigKey
	if key == "" {
		key = fleetconfig.DefaultKubeconfigKey
	}
	kc, err := kubeconfig.FromSecretContext(sec, key, s.Spec.Kubeconfig.Context)
	return kc, sec, err
}

// ManagedCluster reads a ManagedCluster; nil when it does not exist.
func (h *HubClient) ManagedCluster(ctx context.Context, name string) (*ocm.ManagedCluster, error) {
	var mc ocm.ManagedCluster
	found, err := h.getInto(ctx, h.Dynamic.Resource(ocm.ManagedClusterResource), name, &mc)
	if err != nil || !found {
		return nil, wrapRead(err, "ManagedCluster", "", name)
	}
	return &mc, nil
}

// Secret reads a secret of the release namespace, a kubeconfig of g's
// spoke; nil when it does not exist. Its body is never logged, whatever -v
// says. One the user may not read is a refusal that names the Role
// granting it alone, when grantRefusal allows that.
func (h *HubClient) Secret(ctx context.Context, g secretGrantFor, name string) (*corev1.Secret, error) {
	s, err := h.Kube.CoreV1().Secrets(h.Namespace).Get(cli.HideBodies(ctx), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if apierrors.IsForbidden(err) {
		return nil, h.secretForbidden(ctx, g, name, err)
	}
	if err != nil {
		return nil, wrapRead(err, "Secret", h.Namespace, name)
	}
	return s, nil
}

// Hubs lists the fleet Hubs of the release namespace.
func (h *HubClient) Hubs(ctx context.Context) ([]fleetconfig.Hub, error) {
	l, err := h.Dynamic.Resource(fleetconfig.HubResource).Namespace(h.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Hubs in %s: %w", h.Namespace, err)
	}
	out := make([]fleetconfig.Hub, len(l.Items))
	for i := range l.Items {
		if err := api.DecodeUnstructured(&l.Items[i], &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func wrapRead(err error, kind, ns, name string) error {
	if err == nil {
		return nil
	}
	if ns != "" {
		return fmt.Errorf("reading %s %s/%s: %w", kind, ns, name, err)
	}
	return fmt.Errorf("reading %s %s: %w", kind, name, err)
}

// listJSON decodes lists as the API machinery does, matching keys by their
// exact case (encoding/json's case-insensitive matching let a "Phase" key
// overwrite "phase"). It is also faster: jsoniter decodes a struct matched
// without case through a slower general path, lowering every key it reads.
var listJSON = jsoniter.Config{CaseSensitive: true}.Froze()

// listAll lists every object of a resource (matching selector, "": all), page by page, decoding each
// page straight into typed items (no unstructured detour: on thousands of
// spokes the conversion costs more than the requests). json-iterator
// skips the fields T does not have (managedFields above all) several times
// faster than encoding/json.
func listAll[T any](ctx context.Context, h *HubClient, gvr schema.GroupVersionResource, ns, selector string) ([]T, error) {
	path := []string{"/apis", gvr.Group, gvr.Version}
	if ns != "" {
		path = append(path, "namespaces", ns)
	}
	path = append(path, gvr.Resource)
	var out []T
	token := ""
	for {
		req := h.Kube.CoreV1().RESTClient().Get().AbsPath(path...).SetHeader("Accept", "application/json")
		if h.ChunkSize > 0 {
			req = req.Param("limit", strconv.FormatInt(h.ChunkSize, 10))
		}
		if token != "" {
			req = req.Param("continue", token)
		}
		if selector != "" {
			req = req.Param("labelSelector", selector)
		}
		raw, err := req.DoRaw(ctx)
		if err != nil {
			return nil, err
		}
		var page struct {
			Metadata metav1.ListMeta `json:"metadata"`
			Items    []T             `json:"items"`
		}
		if err := listJSON.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("decoding the list of %s: %w", gvr.Resource, err)
		}
		out = append(out, page.Items...)
		if token = page.Metadata.Continue; token == "" {
			return out, nil
		}
	}
}

// Spokes lists the Spokes of namespace ns ("": every namespace) whose labels
// match selector ("": all).
func (h *HubClient) Spokes(ctx context.Context, ns, selector string) ([]fleetconfig.Spoke, error) {
	out, err := listAll[fleetconfig.Spoke](ctx, h, fleetconfig.SpokeResource, ns, selector)
	if err != nil {
		return nil, fmt.Errorf("listing Spokes in %s: %w", namespaceOrAll(ns), err)
	}
	return out, nil
}

// ManifestWorks lists the ManifestWorks in a cluster's namespace; where the
// user may not, it refuses, naming the binding that grants them there. They
// are what would block the spoke's removal, so a list that fails is a check
// that cannot be made (exit 3), never no works: also a 404, which says the
// hub does not serve ManifestWorks (a list in a namespace that does not
// exist is an empty one).
//
// A ManifestWork carries the manifests it applies, Secrets among them, so
// request logs never show the bodies (-v=8 would).
func (h *HubClient) ManifestWorks(ctx context.Context, cluster string) ([]ocm.ManifestWork, error) {
	out, err := listAll[ocm.ManifestWork](cli.HideBodies(ctx), h, ocm.ManifestWorkResource, cluster, "")
	switch {
	case apierrors.IsForbidden(err):
		return nil, h.worksForbidden(ctx, cluster)
	case apierrors.IsNotFound(err):
		return nil, exitcode.RefusedErrorf("cannot check the ManifestWorks that would block the removal of spoke %s: the hub does not serve ManifestWorks (%s): %w; nothing was changed",
			cluster, ocm.ManifestWorkResource.GroupVersion(), err)
	case err != nil:
		return nil, exitcode.RefusedErrorf("cannot check the ManifestWorks that would block the removal of spoke %s: listing ManifestWorks in namespace %s: %w; nothing was changed", cluster, cluster, err)
	}
	return out, nil
}

// createSpoke creates a Spoke; one that exists already is not touched.
func (h *HubClient) createSpoke(ctx context.Context, s *fleetconfig.Spoke, dryRun cli.DryRun) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		return err
	}
	_, err = h.Dynamic.Resource(fleetconfig.SpokeResource).Namespace(s.Namespace).Create(ctx, &unstructured.Unstructured{Object: obj},
		metav1.CreateOptions{FieldManager: FieldManager, DryRun: cli.DryRunOption(dryRun)})
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("spoke %s/%s was created by someone else while this command ran; it was not changed", s.Namespace, s.Name)
	}
	if err != nil {
		return fmt.Errorf("creating Spoke %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// patchSpoke sends a JSON patch (guarded by its own test operations) to
// the Spoke name of the release namespace.
func (h *HubClient) patchSpoke(ctx context.Context, name string, ops []api.PatchOp, dryRun cli.DryRun) error {
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	_, err = h.Dynamic.Resource(fleetconfig.SpokeResource).Namespace(h.Namespace).Patch(ctx, name, types.JSONPatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager, DryRun: cli.DryRunOption(dryRun)})
	return err
}

// Placements lists the Placements of every namespace.
func (h *HubClient) Placements(ctx context.Context) ([]ocm.Placement, error) {
	out, err := listAll[ocm.Placement](ctx, h, ocm.PlacementResource, "", "")
	if err != nil {
		return nil, fmt.Errorf("listing Placements: %w", err)
	}
	return out, nil
}

// namespaceOrAll names namespace ns in messages ("": every namespace).
func namespaceOrAll(ns string) string {
	if ns == "" {
		return "every namespace"
	}
	return "namespace " + ns
}
