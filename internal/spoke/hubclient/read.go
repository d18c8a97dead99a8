package hubclient

import (
	"context"
	"fmt"
	"strconv"
	"time"

	jsoniter "github.com/json-iterator/go"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
)

// resource is gvr in namespace ns ("": cluster-scoped or every namespace).
func (c *Client) resource(gvr schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return c.dyn.Resource(gvr)
	}
	return c.dyn.Resource(gvr).Namespace(ns)
}

// getInto reads one object; found is false when it does not exist.
func getInto(ctx context.Context, ri dynamic.ResourceInterface, name string, into any) (found bool, err error) {
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
func (c *Client) Spoke(ctx context.Context, name string) (*fleetconfig.Spoke, error) {
	var s fleetconfig.Spoke
	found, err := getInto(ctx, c.resource(fleetconfig.SpokeResource, c.Namespace), name, &s)
	if err != nil || !found {
		return nil, wrapRead(err, "Spoke", c.Namespace, name)
	}
	return &s, nil
}

// SpokeObject reads a Spoke of the release namespace as it is stored, every
// field kept, for a change that must see fields the typed Spoke lacks.
func (c *Client) SpokeObject(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	u, err := c.resource(fleetconfig.SpokeResource, c.Namespace).Get(ctx, name, metav1.GetOptions{})
	return u, wrapRead(err, "Spoke", c.Namespace, name)
}

// ExistingSpoke reads a Spoke that must exist.
func (c *Client) ExistingSpoke(ctx context.Context, name string) (*fleetconfig.Spoke, error) {
	s, err := c.Spoke(ctx, name)
	if err == nil && s == nil {
		err = c.SpokeNotFound(name)
	}
	return s, err
}

// SpokeNotFound is the error for a Spoke the release namespace lacks.
func (c *Client) SpokeNotFound(name string) error {
	return fmt.Errorf("spoke %q not found in namespace %s: see kubectl spoke list", name, c.Namespace)
}

// SpokeNamespaces lists the namespaces that hold a Spoke called name: a
// Spoke's name is its cluster's, whatever its namespace.
func (c *Client) SpokeNamespaces(ctx context.Context, name string) ([]string, error) {
	l, err := c.dyn.Resource(fleetconfig.SpokeResource).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		return nil, err
	}
	out := make([]string, len(l.Items))
	for i := range l.Items {
		out[i] = l.Items[i].GetNamespace()
	}
	return out, nil
}

// ManagedCluster reads a ManagedCluster; nil when it does not exist.
func (c *Client) ManagedCluster(ctx context.Context, name string) (*ocm.ManagedCluster, error) {
	var mc ocm.ManagedCluster
	found, err := getInto(ctx, c.resource(ocm.ManagedClusterResource, ""), name, &mc)
	if err != nil || !found {
		return nil, wrapRead(err, "ManagedCluster", "", name)
	}
	return &mc, nil
}

// Secret reads a Secret; nil when it does not exist. Secrets hold
// kubeconfigs and tokens: request logs never show their bodies, whatever
// -v says. A Forbidden read is returned as such (apierrors.IsForbidden).
func (c *Client) Secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	s, err := c.kube.CoreV1().Secrets(ns).Get(cli.HideBodies(ctx), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, wrapRead(err, "Secret", ns, name)
	}
	return s, nil
}

// Secrets lists the Secrets of namespace ns that match a label selector,
// never logging their bodies.
func (c *Client) Secrets(ctx context.Context, ns, selector string) ([]corev1.Secret, error) {
	l, err := c.kube.CoreV1().Secrets(ns).List(cli.HideBodies(ctx), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// Hubs lists the fleet Hubs of the release namespace.
func (c *Client) Hubs(ctx context.Context) ([]fleetconfig.Hub, error) {
	l, err := c.resource(fleetconfig.HubResource, c.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Hubs in %s: %w", c.Namespace, err)
	}
	out := make([]fleetconfig.Hub, len(l.Items))
	for i := range l.Items {
		if err := api.DecodeUnstructured(&l.Items[i], &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// HoldsHub tells whether namespace ns holds a fleet Hub: New has usually
// looked already; otherwise (-n given) this asks. No Hub kind, or no right
// to see it, is no Hub.
func (c *Client) HoldsHub(ctx context.Context, ns string) (bool, error) {
	if c.hubNamespaces != nil {
		return c.hubNamespaces[ns], nil
	}
	l, err := c.resource(fleetconfig.HubResource, ns).List(ctx, metav1.ListOptions{Limit: 1})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("looking for a fleet Hub in namespace %s: %w", ns, err)
	}
	return len(l.Items) > 0, nil
}

// HasClusterManagementAddOn tells whether the hub registers the add-on
// name; an error is any other answer than the object or its absence.
func (c *Client) HasClusterManagementAddOn(ctx context.Context, name string) (bool, error) {
	_, err := c.resource(ocm.ClusterManagementAddOnResource, "").Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// Object reads one object of any kind, as stored (a Flux HelmRelease, for
// one); the API's error when it cannot, NotFound included.
func (c *Client) Object(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	return c.resource(gvr, ns).Get(ctx, name, metav1.GetOptions{})
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

// List lists every object of a resource in namespace ns ("": every
// namespace) matching selector ("": all), page by page, decoding each page
// straight into typed items (no unstructured detour: on thousands of
// spokes the conversion costs more than the requests). json-iterator skips
// the fields T does not have (managedFields above all) several times faster
// than encoding/json, so a T with only the fields a command reads lists
// fastest.
//
// A page's request can only go out with the continue token of the page
// before, so List reads that token first (it comes before the items) and
// sends the next request while it decodes the page in hand: the pages'
// decoding overlaps the server's work instead of adding to it.
func List[T any](ctx context.Context, c *Client, gvr schema.GroupVersionResource, ns, selector string) ([]T, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a request in flight when decoding fails
	path := []string{"/apis", gvr.Group, gvr.Version}
	if ns != "" {
		path = append(path, "namespaces", ns)
	}
	path = append(path, gvr.Resource)
	var out []T
	next := c.fetchPage(ctx, path, selector, "")
	for {
		page := <-next
		if page.err != nil {
			return nil, page.err
		}
		token, err := continueToken(page.raw)
		if err != nil {
			return nil, fmt.Errorf("decoding the list of %s: %w", gvr.Resource, err)
		}
		if token != "" {
			next = c.fetchPage(ctx, path, selector, token)
		}
		var items struct {
			Items []T `json:"items"`
		}
		if err := listJSON.Unmarshal(page.raw, &items); err != nil {
			return nil, fmt.Errorf("decoding the list of %s: %w", gvr.Resource, err)
		}
		out = append(out, items.Items...)
		if token == "" {
			return out, nil
		}
	}
}

type rawPage struct {
	raw []byte
	err error
}

// fetchPage sends the request for one page, the one after token ("": the
// first), and delivers its body on the channel it returns.
func (c *Client) fetchPage(ctx context.Context, path []string, selector, token string) <-chan rawPage {
	req := c.kube.CoreV1().RESTClient().Get().AbsPath(path...).SetHeader("Accept", "application/json")
	if c.ChunkSize > 0 {
		req = req.Param("limit", strconv.FormatInt(c.ChunkSize, 10))
	}
	if token != "" {
		req = req.Param("continue", token)
	}
	if selector != "" {
		req = req.Param("labelSelector", selector)
	}
	done := make(chan rawPage, 1) // never blocks: List may have returned
	go func() {
		raw, err := req.DoRaw(ctx)
		done <- rawPage{raw, err}
	}()
	return done
}

// continueToken reads metadata.continue of a list without decoding its
// items: the API server writes metadata first, so the read stops at the
// first metadata.
func continueToken(raw []byte) (string, error) {
	it := listJSON.BorrowIterator(raw)
	defer listJSON.ReturnIterator(it)
	token := ""
	for field := it.ReadObject(); field != "" && it.Error == nil; field = it.ReadObject() {
		if field != "metadata" {
			it.Skip()
			continue
		}
		for m := it.ReadObject(); m != "" && it.Error == nil; m = it.ReadObject() {
			if m == "continue" {
				token = it.ReadString()
			} else {
				it.Skip()
			}
		}
		break
	}
	return token, it.Error
}

// Spokes lists the Spokes of namespace ns ("": every namespace) whose labels
// match selector ("": all).
func (c *Client) Spokes(ctx context.Context, ns, selector string) ([]fleetconfig.Spoke, error) {
	out, err := List[fleetconfig.Spoke](ctx, c, fleetconfig.SpokeResource, ns, selector)
	if err != nil {
		return nil, fmt.Errorf("listing Spokes in %s: %w", NamespaceOrAll(ns), err)
	}
	return out, nil
}

// ManifestWorks lists the ManifestWorks in a cluster's namespace, with the
// API's error as it is. A ManifestWork carries the manifests it applies,
// Secrets among them, so request logs never show the bodies (-v=8 would).
func (c *Client) ManifestWorks(ctx context.Context, cluster string) ([]ocm.ManifestWork, error) {
	return List[ocm.ManifestWork](cli.HideBodies(ctx), c, ocm.ManifestWorkResource, cluster, "")
}

// Placements lists the Placements of every namespace.
func (c *Client) Placements(ctx context.Context) ([]ocm.Placement, error) {
	out, err := List[ocm.Placement](ctx, c, ocm.PlacementResource, "", "")
	if err != nil {
		return nil, fmt.Errorf("listing Placements: %w", err)
	}
	return out, nil
}

// LeaseRenewals lists the Leases called name in every namespace: when each
// was last renewed, by namespace.
func (c *Client) LeaseRenewals(ctx context.Context, name string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	leases := c.kube.CoordinationV1().Leases("")
	err := cli.EachInChunks(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return leases.List(ctx, opts)
	},
		c.ChunkSize, metav1.ListOptions{FieldSelector: "metadata.name=" + name}, func(l *coordinationv1.Lease) error {
			if t := l.Spec.RenewTime; t != nil {
				out[l.Namespace] = t.Time
			}
			return nil
		})
	return out, err
}

// CSR reads a CertificateSigningRequest.
func (c *Client) CSR(ctx context.Context, name string) (*certificatesv1.CertificateSigningRequest, error) {
	return c.kube.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
}

// WatchNamed lists and watches the one object of a resource called name
// in namespace ns ("": cluster-scoped).
func (c *Client) WatchNamed(gvr schema.GroupVersionResource, ns, name string) cache.ListerWatcher {
	return cli.ListWatch(c.resource(gvr, ns), fields.OneTermEqualSelector("metadata.name", name).String(), "")
}

// WatchLabelled lists and watches the objects of a cluster-scoped resource
// whose labels match selector.
func (c *Client) WatchLabelled(gvr schema.GroupVersionResource, selector string) cache.ListerWatcher {
	return cli.ListWatch(c.resource(gvr, ""), "", selector)
}

// NamespaceOrAll names namespace ns in messages ("": every namespace).
func NamespaceOrAll(ns string) string {
	if ns == "" {
		return "every namespace"
	}
	return "namespace " + ns
}
