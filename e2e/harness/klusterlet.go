package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// What `clusteradm join` installs on a spoke: OCM's klusterlet chart
// (shipped in OCMComponents) rendered as release "klusterlet" into the
// operator's namespace, with the klusterlet in Default mode.
const (
	klusterletChart             = "deploy/klusterlet/chart/klusterlet"
	klusterletOperatorNamespace = "open-cluster-management"
)

// joinKind is a kind the klusterlet chart renders, and where the API serves it.
type joinKind struct {
	kind       string
	gvr        schema.GroupVersionResource
	namespaced bool
}

// joinKinds are the kinds the klusterlet chart renders, in the order they
// are applied (a namespace and the CRD before what needs them).
var joinKinds = []joinKind{
	{"Namespace", schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, false},
	{"CustomResourceDefinition", crdGVR, false},
	{"ServiceAccount", schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, true},
	{"ClusterRole", schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, false},
	{"ClusterRoleBinding", schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}, false},
	{"Secret", schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, true},
	{"Deployment", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, true},
	{"Klusterlet", schema.GroupVersionResource{Group: "operator.open-cluster-management.io", Version: "v1", Resource: "klusterlets"}, false},
}

// RenderKlusterletChart is what `clusteradm join` renders for a cluster
// that bootstraps with the kubeconfig bootstrap: the operator's namespace,
// the chart's CRD, then its templates (operator, its RBAC, the image pull
// and bootstrap Secrets, the agent's namespace, the Klusterlet), in the
// order joinKinds applies them. A kind the chart gains that joinKinds does
// not know is an error, so a new object is never skipped unseen.
func RenderKlusterletChart(ctx context.Context, cluster string, bootstrap []byte) ([]*unstructured.Unstructured, error) {
	dir, err := ModuleFiles(ctx, OCMComponents, []string{klusterletChart})
	if err != nil {
		return nil, err
	}
	ch, err := loader.Load(dir[0])
	if err != nil {
		return nil, fmt.Errorf("loading the klusterlet chart: %w", err)
	}
	values := map[string]any{
		"bootstrapHubKubeConfig": string(bootstrap),
		"images":                 map[string]any{"imageCredentials": map[string]any{"createImageCredentials": true}},
		"klusterlet":             map[string]any{"clusterName": cluster, "mode": "Default"},
	}
	rv, err := chartutil.ToRenderValues(ch, values, common.ReleaseOptions{Name: "klusterlet", Namespace: klusterletOperatorNamespace, IsInstall: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("the klusterlet chart's values: %w", err)
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return nil, fmt.Errorf("rendering the klusterlet chart: %w", err)
	}
	objs := []*unstructured.Unstructured{{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": klusterletOperatorNamespace},
	}}}
	for _, crd := range ch.CRDObjects() {
		o, err := decodeYAMLObjects(strings.NewReader(string(crd.File.Data)))
		if err != nil {
			return nil, fmt.Errorf("the klusterlet chart's %s: %w", crd.Filename, err)
		}
		objs = append(objs, o...)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if filepath.Ext(name) != ".yaml" {
			continue
		}
		o, err := decodeYAMLObjects(strings.NewReader(files[name]))
		if err != nil {
			return nil, fmt.Errorf("the klusterlet chart's %s: %w", name, err)
		}
		objs = append(objs, o...)
	}
	for _, o := range objs {
		if joinRank(o) < 0 {
			return nil, fmt.Errorf("the klusterlet chart renders a %s (%s), which the test bed's join does not know how to apply", o.GetKind(), o.GetName())
		}
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return joinRank(a) - joinRank(b) })
	return objs, nil
}

// joinRank is the place of o's kind in joinKinds, -1 for another kind.
func joinRank(o *unstructured.Unstructured) int {
	return slices.IndexFunc(joinKinds, func(k joinKind) bool { return k.kind == o.GetKind() })
}

// applyAsClusteradm applies objs to c with c's identity as clusteradm's
// applier does: each object read, created when missing, else patched; a
// CRD read again until it is served. Each of those requests needs a right
// of its own (get, create, patch), so an identity that lacks one fails here
// as a real join would.
func applyAsClusteradm(ctx context.Context, c *Cluster, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		i := joinRank(o)
		if i < 0 {
			return fmt.Errorf("applying %s %s: not a kind of the klusterlet chart", o.GetKind(), o.GetName())
		}
		k := joinKinds[i]
		client := c.Dynamic.Resource(k.gvr).Namespace("")
		what := fmt.Sprintf("%s %s", o.GetKind(), o.GetName())
		if k.namespaced {
			client = c.Dynamic.Resource(k.gvr).Namespace(o.GetNamespace())
			what = fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
		}
		_, err := client.Get(ctx, o.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = client.Create(ctx, o, metav1.CreateOptions{FieldManager: "clusteradm"})
		case err == nil:
			var data []byte
			if data, err = json.Marshal(o.Object); err == nil {
				_, err = client.Patch(ctx, o.GetName(), types.MergePatchType, data, metav1.PatchOptions{FieldManager: "clusteradm"})
			}
		}
		if err != nil {
			return fmt.Errorf("applying %s: %w", what, err)
		}
		if k.kind == "CustomResourceDefinition" {
			if err := waitServedCRD(ctx, c, o.GetName()); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitServedCRD reads the CRD until it is established, as clusteradm does
// (a get, where the test bed's own installs watch).
func waitServedCRD(ctx context.Context, c *Cluster, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd, err := c.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return conditionTrue(crd, "Established"), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be served: %w", name, err)
	}
	return nil
}
