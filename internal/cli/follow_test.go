package cli

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// A followed informer ends at the server's first denial, before or after it
// has listed, or once access is revoked mid-watch, and the denial is the
// caller's to name: client-go logs none of a denied list or watch.
func TestAFollowedInformerEndsAtTheFirstDenial(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}, "", errors.New("cannot watch"))
	for _, tc := range []struct {
		name        string
		list, watch error
		stream      bool // the watch opens, its stream says the denial, and the relist meets it
		synced      bool
	}{
		{"list denied", forbidden, nil, false, false},
		{"watch denied once listed", nil, forbidden, false, true},
		{"access revoked while watching", nil, forbidden, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := verbose(t, "0")
			listed := make(chan struct{}) // the watch answers once the test saw the informer synced
			var revoked atomic.Bool
			f, err := Follow(plainListWatch{&cache.ListWatch{
				ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
					if tc.list != nil {
						return nil, tc.list
					}
					if revoked.Load() {
						return nil, forbidden
					}
					return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
				},
				WatchFuncWithContext: func(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
					select {
					case <-listed:
					case <-ctx.Done():
					}
					if tc.stream {
						revoked.Store(true)
						w := watch.NewFakeWithChanSize(1, false)
						w.Error(&forbidden.ErrStatus)
						return w, nil
					}
					return nil, tc.watch
				},
			}}, &corev1.ConfigMap{})
			assert.NilError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			go f.Informer().RunWithContext(ctx)

			err = f.Synced(ctx)
			if tc.synced {
				assert.NilError(t, err)
				close(listed)
			} else {
				assert.Check(t, apierrors.IsForbidden(err), "%v", err)
			}
			select {
			case <-f.Lost():
			case <-ctx.Done():
				t.Fatal("the denial never ended the informer")
			}
			assert.Check(t, apierrors.IsForbidden(f.Denied()), "%v", f.Denied())
			klog.Flush()
			if !tc.stream {
				assert.Check(t, is.Equal(logs.String(), ""))
			}
			// A stream that ends in a denial is logged by the reflector itself
			// ("watch ended with error"), before any handler: the relist then
			// meets the denial and ends the informer.
		})
	}
}
