package cli

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Shell completion as kubectl's, built on the plugin's own Factory: kubectl's
// completion package runs `kubectl get -o template` internally, and the
// go-template printer alone keeps every method of every type in the binary.

func registerGlobalCompletions(root *cobra.Command, f *Factory) {
	_ = root.RegisterFlagCompletionFunc("namespace", ResourceNames(f, "namespaces"))
	_ = root.RegisterFlagCompletionFunc("context", kubeconfigNames(f, func(c kubeconfigLists) []string { return c.contexts }))
	_ = root.RegisterFlagCompletionFunc("cluster", kubeconfigNames(f, func(c kubeconfigLists) []string { return c.clusters }))
	_ = root.RegisterFlagCompletionFunc("user", kubeconfigNames(f, func(c kubeconfigLists) []string { return c.users }))
}

// ResourceNames completes the names of objects of one resource type
// (e.g. "nodes", "spokes.fleetconfig.open-cluster-management.io"), in the
// namespace of the flags for a namespaced type. It reads only metadata.
func ResourceNames(f *Factory, resource string) cobra.CompletionFunc {
	return func(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return withPrefix(resourceNames(c.Context(), f, resource), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// resourceNames lists the names; on any error there is nothing to offer,
// as with kubectl.
func resourceNames(ctx context.Context, f *Factory, resource string) []string { //nolint:contextcheck // cobra gives no context to a command run without ExecuteContext (a completion test); Execute always gives one
	if ctx == nil {
		ctx = context.Background()
	}
	mapper, err := f.ToRESTMapper()
	if err != nil {
		return nil
	}
	gvr, err := mapper.ResourceFor(schema.ParseGroupResource(resource).WithVersion(""))
	if err != nil {
		return nil
	}
	gvk, err := mapper.KindFor(gvr)
	if err != nil {
		return nil
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil
	}
	client, err := f.MetadataClient()
	if err != nil {
		return nil
	}
	ri := client.Resource(gvr)
	var l *metav1.PartialObjectMetadataList
	if mapping.Scope.Name() == "namespace" {
		ns, _, err := f.Namespace()
		if err != nil {
			return nil
		}
		l, err = ri.Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil
		}
	} else if l, err = ri.List(ctx, metav1.ListOptions{}); err != nil {
		return nil
	}
	names := make([]string, 0, len(l.Items))
	for _, o := range l.Items {
		names = append(names, o.Name)
	}
	return names
}

type kubeconfigLists struct{ contexts, clusters, users []string }

// kubeconfigNames completes names from the merged kubeconfig.
func kubeconfigNames(f *Factory, pick func(kubeconfigLists) []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		raw, err := f.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var l kubeconfigLists
		for name := range raw.Contexts {
			l.contexts = append(l.contexts, name)
		}
		for name := range raw.Clusters {
			l.clusters = append(l.clusters, name)
		}
		for name := range raw.AuthInfos {
			l.users = append(l.users, name)
		}
		names := pick(l)
		slices.Sort(names)
		return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func withPrefix(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}
