package fleetdrain

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"
)

// eachInChunks lists in pages of size objects (0: all at once), as kubectl's
// --chunk-size does, and calls each with every item, of type T.
func eachInChunks[T any](ctx context.Context, list func(context.Context, metav1.ListOptions) (runtime.Object, error), size int64, opts metav1.ListOptions, each func(*T)) error {
	p := pager.New(list)
	p.PageSize = size
	return p.EachListItem(ctx, opts, func(obj runtime.Object) error {
		item, ok := any(obj).(*T)
		if !ok {
			return fmt.Errorf("listed a %T, not a %T", obj, item)
		}
		each(item)
		return nil
	})
}
