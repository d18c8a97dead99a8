// Package placement is a stand-in for what OCM's placement scheduler and the
// ManifestWorkReplicaSet controller do together when a ManagedCluster gets a
// NoSelect taint: every placement that does not tolerate the taint drops the
// cluster from its decisions, and the works it placed there (label
// work.open-cluster-management.io/placementname) are deleted from the
// cluster's namespace. It runs in the test process against the real hub API
// server; the plugins never know it exists.
package placement

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/spokekit/spokekit/internal/api/ocm"
)

// Run removes untolerated placement works until ctx ends. It reconciles on
// every change of a ManagedCluster, Placement or ManifestWork.
func Run(ctx context.Context, client dynamic.Interface) error {
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	kick := make(chan struct{}, 1)
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { nudge(kick) },
		UpdateFunc: func(any, any) { nudge(kick) },
		DeleteFunc: func(any) { nudge(kick) },
	}
	clusters := factory.ForResource(ocm.ManagedClusterResource).Informer()
	placements := factory.ForResource(ocm.PlacementResource).Informer()
	works := factory.ForResource(ocm.ManifestWorkResource).Informer()
	informers := []cache.SharedIndexInformer{clusters, placements, works}
	for _, inf := range informers {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
	}
	factory.Start(ctx.Done())
	for _, inf := range informers {
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return fmt.Errorf("placement stand-in: caches did not sync")
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
		}
		reconcile(ctx, client, clusters.GetStore().List(), placements.GetStore().List(), works.GetStore().List())
	}
}

func nudge(kick chan struct{}) {
	select {
	case kick <- struct{}{}:
	default:
	}
}

func reconcile(ctx context.Context, client dynamic.Interface, clusters, placements, works []any) {
	taints := map[string][]ocm.Taint{}
	for _, o := range clusters {
		var mc ocm.ManagedCluster
		if runtime.DefaultUnstructuredConverter.FromUnstructured(o.(*unstructured.Unstructured).Object, &mc) != nil {
			continue
		}
		for _, t := range mc.Spec.Taints {
			if t.Effect == ocm.TaintEffectNoSelect {
				taints[mc.Name] = append(taints[mc.Name], t)
			}
		}
	}
	var ps []ocm.Placement
	for _, o := range placements {
		var p ocm.Placement
		if runtime.DefaultUnstructuredConverter.FromUnstructured(o.(*unstructured.Unstructured).Object, &p) == nil {
			ps = append(ps, p)
		}
	}
	now := time.Now()
	for _, o := range works {
		w := o.(*unstructured.Unstructured)
		name := w.GetLabels()[ocm.PlacementLabel]
		if name == "" || len(taints[w.GetNamespace()]) == 0 || w.GetDeletionTimestamp() != nil {
			continue
		}
		p, ok := findPlacement(ps, name, w.GetLabels()[ocm.ManifestWorkReplicaSetLabel])
		if !ok || toleratesAll(p, taints[w.GetNamespace()], now) {
			continue
		}
		err := client.Resource(ocm.ManifestWorkResource).Namespace(w.GetNamespace()).Delete(ctx, w.GetName(), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			fmt.Printf("placement stand-in: deleting ManifestWork %s/%s: %v\n", w.GetNamespace(), w.GetName(), err)
		}
	}
}

// findPlacement finds the placement of a work: in the namespace of its
// ManifestWorkReplicaSet ("<namespace>.<name>") when it names one.
func findPlacement(ps []ocm.Placement, name, replicaSet string) (ocm.Placement, bool) {
	ns, _, _ := strings.Cut(replicaSet, ".")
	for _, p := range ps {
		if p.Name == name && (replicaSet == "" || p.Namespace == ns) {
			return p, true
		}
	}
	return ocm.Placement{}, false
}

func toleratesAll(p ocm.Placement, taints []ocm.Taint, now time.Time) bool {
	for _, t := range taints {
		if !ocm.Tolerates(p.Spec.Tolerations, t, now) {
			return false
		}
	}
	return true
}
