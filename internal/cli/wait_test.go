package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/spokekit/spokekit/internal/exitcode"
)

// plainListWatch is a list and watch without watch-list streaming, which a
// fake watcher cannot serve.
type plainListWatch struct{ *cache.ListWatch }

func (plainListWatch) IsWatchListSemanticsUnSupported() bool { return true }

// listWatch serves one list and then the events sent on the returned watcher.
func listWatch(initial ...corev1.ConfigMap) (cache.ListerWatcher, *watch.FakeWatcher) {
	w := watch.NewFakeWithChanSize(10, false)
	return plainListWatch{&cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: initial}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return w, nil },
	}}, w
}

func phaseCheck(want string) Check {
	return func(objs []any) (bool, string, error) {
		if len(objs) == 0 {
			return false, "absent", nil
		}
		phase := objs[0].(*corev1.ConfigMap).Data["phase"]
		return phase == want, "phase " + phase, nil
	}
}

func cm(phase, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", ResourceVersion: rv}, Data: map[string]string{"phase": phase}}
}

func TestWaitForEndsWhenTheCheckPasses(t *testing.T) {
	lw, w := listWatch(*cm("Joining", "1"))
	var once sync.Once
	check := func(objs []any) (bool, string, error) {
		done, state, err := phaseCheck("Running")(objs)
		// The object changes only once the wait has seen its first state.
		once.Do(func() { go w.Modify(cm("Running", "2")) })
		return done, state, err
	}
	var buf bytes.Buffer
	err := WaitFor(context.Background(), "spoke x", lw, &corev1.ConfigMap{}, time.Minute, NewProgress(&buf), check)
	assert.NilError(t, err)
	assert.Assert(t, bytes.Contains(buf.Bytes(), []byte("spoke x: phase Joining\n")), buf.String())
	assert.Assert(t, bytes.Contains(buf.Bytes(), []byte("spoke x: phase Running\n")), buf.String())
}

func TestWaitForTimesOutWithExit4AndLastState(t *testing.T) {
	lw, _ := listWatch(*cm("Joining", "1"))
	err := WaitFor(context.Background(), "spoke x", lw, &corev1.ConfigMap{}, time.Second, nil, phaseCheck("Running"))
	assert.Equal(t, exitcode.Of(err), exitcode.TimedOut)
	assert.ErrorContains(t, err, "last state: phase Joining")
}

func TestWaitForPassesCheckErrors(t *testing.T) {
	lw, _ := listWatch(*cm("Joining", "1"))
	var buf bytes.Buffer
	p := NewProgress(&buf)
	p.live = true
	err := WaitFor(context.Background(), "spoke x", lw, &corev1.ConfigMap{}, time.Minute, p, func([]any) (bool, string, error) {
		return false, "", errors.New("spoke x is owned by a Compute Pool")
	})
	assert.ErrorContains(t, err, "Compute Pool")
	assert.Equal(t, exitcode.Of(err), exitcode.Failed)
	// The live line is ended: the error the command prints next starts a line of its own.
	assert.Check(t, strings.HasSuffix(buf.String(), "\n"), "%q", buf.String())
}

// A list or watch the server denies ends the wait at once, as a failure
// (exit 1), naming the denial: the reflector would retry it until
// --timeout, and exit 4 would say that running the command again finishes
// the wait. (A CI run's resume --wait, as a user whose role lacked watch
// on MachineDeployments, logged the denial and timed out.)
func TestWaitForEndsAtADeniedListOrWatch(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "cluster.x-k8s.io", Resource: "machinedeployments"}, "", errors.New("cannot watch"))
	unauthorized := apierrors.NewUnauthorized("token expired")
	for _, tc := range []struct {
		name        string
		list, watch error
		want        string
	}{
		{"watch forbidden", nil, forbidden, "machinedeployments.cluster.x-k8s.io is forbidden"},
		{"list forbidden", forbidden, nil, "machinedeployments.cluster.x-k8s.io is forbidden"},
		{"list unauthorized", unauthorized, nil, "token expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lw := plainListWatch{&cache.ListWatch{
				ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
					if tc.list != nil {
						return nil, tc.list
					}
					return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []corev1.ConfigMap{*cm("Joining", "1")}}, nil
				},
				WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
					if tc.watch != nil {
						return nil, tc.watch
					}
					return watch.NewFake(), nil
				},
			}}
			logs := verbose(t, "0")
			var buf bytes.Buffer
			err := WaitFor(context.Background(), "pools of app", lw, &corev1.ConfigMap{}, 20*time.Second, NewProgress(&buf), phaseCheck("Ready"))
			assert.Equal(t, exitcode.Of(err), exitcode.Failed, "%v", err)
			assert.ErrorContains(t, err, "cannot follow pools of app")
			assert.ErrorContains(t, err, tc.want)
			assert.Check(t, bytes.Contains(buf.Bytes(), []byte("pools of app: cannot follow\n")), buf.String())
			// The error names the denial once: no client-go log line beside it.
			klog.Flush()
			assert.Check(t, is.Equal(logs.String(), ""))
		})
	}
}

func TestDeadlineSharedBySteps(t *testing.T) {
	assert.Equal(t, NewDeadline(0).Left(), time.Duration(0), "no timeout: no limit")
	d := NewDeadline(time.Hour)
	assert.Check(t, d.Left() > 59*time.Minute && d.Left() <= time.Hour)
	spent := Deadline{end: time.Now().Add(-time.Second), timeout: time.Minute}
	assert.Equal(t, spent.Left(), time.Nanosecond, "time is up: the next step times out at once, it does not wait forever")
}

// A list or watch that fails for another reason (an overloaded server's
// handler timeout) is retried, and the wait says why it has seen nothing:
// a CI run's resume --wait showed "nothing observed yet" for four minutes
// and then timed out without naming the server's answer. A later success
// clears it. The wait says it once: client-go logs none of it.
func TestWaitForSaysWhyItHasSeenNothing(t *testing.T) {
	overloaded := apierrors.NewTimeoutError("the server was unable to return a response in the time allotted", 1)
	for _, tc := range []struct {
		name      string
		failLists int
		want      []string
		not       string
	}{
		{"every list fails", 1 << 30, []string{"last state: nothing observed yet", "the last list failed: Timeout: the server was unable to return a response"}, ""},
		{"a list fails, the next succeeds", 1, []string{"last state: phase Joining"}, "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			lists := 0
			lw := plainListWatch{&cache.ListWatch{
				ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
					mu.Lock()
					defer mu.Unlock()
					lists++
					if lists <= tc.failLists {
						return nil, overloaded
					}
					return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []corev1.ConfigMap{*cm("Joining", "1")}}, nil
				},
				WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
			}}
			logs := verbose(t, "0")
			var buf bytes.Buffer
			err := WaitFor(context.Background(), "machines of app", lw, &corev1.ConfigMap{}, 3*time.Second, NewProgress(&buf), phaseCheck("Running"))
			assert.Equal(t, exitcode.Of(err), exitcode.TimedOut, "%v", err)
			// Said on the progress line, the failure is not client-go's to log again.
			klog.Flush()
			assert.Check(t, is.Equal(logs.String(), ""))
			for _, w := range tc.want {
				assert.Check(t, strings.Contains(err.Error(), w), "%v", err)
			}
			if tc.not != "" {
				assert.Check(t, !strings.Contains(err.Error(), tc.not), "%v", err)
			} else {
				assert.Check(t, strings.Contains(buf.String(), "machines of app: nothing observed yet (list failed, retrying: Timeout: the server was unable"), buf.String())
			}
		})
	}
}

// stalledStream is a resource whose list answers at once and whose watch
// opens but, asked to stream the initial state (watch-list), never sends
// the bookmark that ends it: an API server whose watch cache lags etcd
// under load. A plain watch works.
type stalledStream struct {
	dynamic.ResourceInterface
	lists []string // the resourceVersion each list asked for
}

func (s *stalledStream) List(_ context.Context, o metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	s.lists = append(s.lists, o.ResourceVersion)
	l := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMapList"}}
	l.SetResourceVersion("7")
	item := unstructured.Unstructured{}
	item.SetAPIVersion("v1")
	item.SetKind("ConfigMap")
	item.SetName("x")
	item.SetResourceVersion("7")
	item.Object["data"] = map[string]any{"phase": "Running"}
	l.Items = append(l.Items, item)
	return l, nil
}

func (*stalledStream) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil // no event, no bookmark, for either kind of watch
}

// A wait lists, then watches: it does not wait for a streamed initial state
// (client-go's watch-list, on by default), which a lagging API server holds
// back for the watch's whole timeout, 5 to 10 minutes. Two CI runs' resume
// --wait saw "nothing observed yet" for 4 and 10 minutes that way, with no
// error to show. The first list is a consistent read (resourceVersion ""),
// not the watch cache's possibly older copy ("0").
func TestWaitForListsFirstAndReadsTheLatest(t *testing.T) {
	s := &stalledStream{}
	check := func(objs []any) (bool, string, error) {
		if len(objs) == 0 {
			return false, "absent", nil
		}
		phase, _, _ := unstructured.NestedString(objs[0].(*unstructured.Unstructured).Object, "data", "phase")
		return phase == "Running", "phase " + phase, nil
	}
	err := WaitFor(context.Background(), "spoke x", ListWatch(s, "", ""), &unstructured.Unstructured{}, 10*time.Second, nil, check)
	assert.NilError(t, err)
	assert.DeepEqual(t, s.lists, []string{""})
}
