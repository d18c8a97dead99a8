package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"
)

// DefaultChunkSize is kubectl's page size for lists.
const DefaultChunkSize int64 = 500

// AddChunkSizeFlag registers kubectl's --chunk-size on cmd, into size.
func AddChunkSizeFlag(cmd *cobra.Command, size *int64) {
	cmd.Flags().Int64Var(size, "chunk-size", *size, "Return large lists in chunks of this many objects rather than all at once; 0 disables chunking.")
}

// ValidateChunkSize refuses a negative --chunk-size as a usage error.
func ValidateChunkSize(size int64) error {
	if size < 0 {
		return UsageErrorf("--chunk-size must be 0 or more, got %d", size)
	}
	return nil
}

// EachInChunks lists in pages of size objects (0: all at once), as kubectl's
// --chunk-size does, and calls each with every item, of type T, until each
// returns an error.
func EachInChunks[T any](ctx context.Context, list func(context.Context, metav1.ListOptions) (runtime.Object, error), size int64, opts metav1.ListOptions, each func(*T) error) error {
	p := pager.New(list)
	p.PageSize = size
	return p.EachListItem(ctx, opts, func(obj runtime.Object) error {
		item, ok := any(obj).(*T)
		if !ok {
			return fmt.Errorf("listed a %T, not a %T", obj, item)
		}
		return each(item)
	})
}
