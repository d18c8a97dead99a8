package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"

	"github.com/spokekit/spokekit/internal/exitcode"
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
		return exitcode.UsageErrorf("--chunk-size must be 0 or more, got %d", size)
	}
	return nil
}

// Bounds of one listing: a server (or whatever answers in its place) that
// hands out continue tokens forever must not keep a command listing, nor
// fill its memory. No fleet comes near them.
const (
	MaxListItems = 1_000_000
	MaxListPages = 100_000
)

// EachInChunks lists in pages of size objects (0: all at once), as kubectl's
// --chunk-size does, and calls each with every item, of type T, until each
// returns an error. It stops with an error at a continue token the server
// gave before, and past MaxListPages pages or MaxListItems objects.
func EachInChunks[T any](ctx context.Context, list func(context.Context, metav1.ListOptions) (runtime.Object, error), size int64, opts metav1.ListOptions, each func(*T) error) error {
	seen := map[string]bool{}
	pages := 0
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		pages++
		if pages > MaxListPages {
			return nil, fmt.Errorf("the list went on for more than %d pages: stopped (a larger --chunk-size makes fewer)", MaxListPages)
		}
		obj, err := list(ctx, opts)
		if err != nil {
			return nil, err
		}
		m, err := meta.ListAccessor(obj)
		if err != nil {
			return nil, err
		}
		if token := m.GetContinue(); token != "" {
			if seen[token] {
				return nil, fmt.Errorf("the server returned the continue token %q a second time: stopped a list that would never end", token)
			}
			seen[token] = true
		}
		return obj, nil
	})
	p.PageSize = size
	items := 0
	return p.EachListItem(ctx, opts, func(obj runtime.Object) error {
		items++
		if items > MaxListItems {
			return fmt.Errorf("the list holds more than %d objects: stopped", MaxListItems)
		}
		item, ok := any(obj).(*T)
		if !ok {
			return fmt.Errorf("listed a %T, not a %T", obj, item)
		}
		return each(item)
	})
}
