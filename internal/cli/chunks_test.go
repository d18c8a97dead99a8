package cli

import (
	"context"
	"strconv"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// pages is a list whose every page holds one node and the continue token
// next(page) names (none when it returns "").
func pages(next func(page int) string) func(context.Context, metav1.ListOptions) (runtime.Object, error) {
	page := 0
	return func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		page++
		return &corev1.NodeList{ListMeta: metav1.ListMeta{Continue: next(page)}, Items: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n" + strconv.Itoa(page)}}}}, nil
	}
}

func TestEachInChunksPagesThrough(t *testing.T) {
	var names []string
	err := EachInChunks(context.Background(), pages(func(p int) string {
		if p == 3 {
			return ""
		}
		return "after-" + strconv.Itoa(p)
	}), 1, metav1.ListOptions{}, func(n *corev1.Node) error { names = append(names, n.Name); return nil })
	assert.NilError(t, err)
	assert.DeepEqual(t, names, []string{"n1", "n2", "n3"})
}

// A server that hands back a continue token it gave before, or never stops
// giving new ones, must not keep a command listing forever.
func TestEachInChunksStopsEndlessLists(t *testing.T) {
	count := func(*corev1.Node) error { return nil }
	for name, tc := range map[string]struct {
		next func(int) string
		want string
	}{
		"the same token again": {func(int) string { return "same" }, `the server returned the continue token "same" a second time`},
		"a token seen before":  {func(p int) string { return "t" + strconv.Itoa(p%3) }, "a second time"},
		"new tokens forever":   {func(p int) string { return "t" + strconv.Itoa(p) }, "more than 100000 pages"},
	} {
		t.Run(name, func(t *testing.T) {
			err := EachInChunks(context.Background(), pages(tc.next), 1, metav1.ListOptions{}, count)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestEachInChunksCapsItems(t *testing.T) {
	huge := &corev1.NodeList{Items: make([]corev1.Node, MaxListItems+1)}
	err := EachInChunks(context.Background(), func(context.Context, metav1.ListOptions) (runtime.Object, error) { return huge, nil },
		0, metav1.ListOptions{}, func(*corev1.Node) error { return nil })
	assert.ErrorContains(t, err, "more than 1000000 objects")
}
