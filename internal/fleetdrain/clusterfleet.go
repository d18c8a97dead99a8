// What `fleetdrain cluster` reads of the whole hub: the clusters -l selects,
// and the state the placement guard judges.

package fleetdrain

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/spokekit/spokekit/internal/api"
	"github.com/spokekit/spokekit/internal/api/ocm"
	"github.com/spokekit/spokekit/internal/cli"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// listObjects lists a resource in pages, in every namespace, converted.
func listObjects[T any](ctx context.Context, d dynamic.Interface, gvr schema.GroupVersionResource, selector string, raw func(*unstructured.Unstructured)) ([]T, error) {
	list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return d.Resource(gvr).List(ctx, opts)
	}
	var out []T
	err := cli.EachInChunks(ctx, list, cli.DefaultChunkSize, metav1.ListOptions{LabelSelector: selector}, func(u *unstructured.Unstructured) error {
		if raw != nil {
			raw(u)
		}
		obj, err := api.FromUnstructured[T](u)
		if err != nil {
			return err
		}
		out = append(out, *obj)
		return nil
	})
	return out, err
}

// readFleet reads what the guard judges. Anything it cannot read is a check
// that cannot be made: exit 3, nothing changed.
func readFleet(ctx context.Context, d dynamic.Interface) (FleetState, error) {
	s := FleetState{Unreadable: map[string]string{}}
	cannot := func(what string, err error) error {
		return exitcode.RefusedErrorf("the placement guard cannot check what the drain leaves the fleet's Placements: listing %s: %w; nothing was changed", what, err)
	}
	var err error
	if s.Clusters, err = listObjects[ocm.ManagedCluster](ctx, d, ocm.ManagedClusterResource, "", nil); err != nil {
		return s, cannot("ManagedClusters", err)
	}
	if s.Placements, err = listObjects[ocm.Placement](ctx, d, ocm.PlacementResource, "", func(u *unstructured.Unstructured) {
		if why := unknownPlacementFields(u); why != "" {
			s.Unreadable[namespacedName(u.GetNamespace(), u.GetName())] = why
		}
	}); err != nil {
		return s, cannot("Placements", err)
	}
	if s.Decisions, err = listObjects[ocm.PlacementDecision](ctx, d, ocm.PlacementDecisionResource, "", nil); err != nil {
		return s, cannot("PlacementDecisions", err)
	}
	if s.Sets, err = listObjects[ocm.ManagedClusterSet](ctx, d, ocm.ManagedClusterSetResource, "", nil); err != nil {
		return s, cannot("ManagedClusterSets", err)
	}
	if s.Bindings, err = listObjects[ocm.ManagedClusterSetBinding](ctx, d, ocm.ManagedClusterSetBindingResource, "", nil); err != nil {
		return s, cannot("ManagedClusterSetBindings", err)
	}
	return s, nil
}

// The fields of a Placement's spec the guard knows to leave the number of
// clusters it selects as it is (prioritizers and decision groups choose
// among the eligible ones; spreadPolicy is not scheduled by OCM v1.0), and
// those it reads.
var (
	knownPlacementSpec = []string{"clusterSets", "numberOfClusters", "predicates", "tolerations", "prioritizerPolicy", "spreadPolicy", "decisionStrategy"}
	knownSelector      = []string{"labelSelector", "claimSelector", "celSelector"}
)

// unknownPlacementFields says which fields of a Placement's spec, from an
// OCM newer than the guard, could change what it selects ("" when none).
func unknownPlacementFields(u *unstructured.Unstructured) string {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	var unknown []string
	for k := range spec {
		if !slices.Contains(knownPlacementSpec, k) {
			unknown = append(unknown, "spec."+k)
		}
	}
	predicates, _, _ := unstructured.NestedSlice(u.Object, "spec", "predicates")
	for i, p := range predicates {
		sel, _, _ := unstructured.NestedMap(map[string]any{"p": p}, "p", "requiredClusterSelector")
		for k := range sel {
			if !slices.Contains(knownSelector, k) {
				unknown = append(unknown, fmt.Sprintf("spec.predicates[%d].requiredClusterSelector.%s", i, k))
			}
		}
	}
	if len(unknown) == 0 {
		return ""
	}
	slices.Sort(unknown)
	return "it sets " + strings.Join(unknown, ", ") + ", which the guard does not know"
}

// selectClusters resolves -l to the names of the ManagedClusters it matches.
func (o *ClusterOptions) selectClusters(ctx context.Context) error {
	if o.Selector == "" {
		return nil
	}
	clusters, err := listObjects[ocm.ManagedCluster](ctx, o.dynamic, ocm.ManagedClusterResource, o.Selector, nil)
	if err != nil {
		return fmt.Errorf("listing ManagedClusters with selector %q: %w", o.Selector, err)
	}
	if len(clusters) == 0 {
		return exitcode.RefusedErrorf("no ManagedCluster matches selector %q; nothing was changed", o.Selector)
	}
	for _, c := range clusters {
		o.Clusters = append(o.Clusters, c.Name)
	}
	slices.Sort(o.Clusters)
	return nil
}
