package api

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// FromUnstructured converts an object read with the dynamic client.
func FromUnstructured[T any](u *unstructured.Unstructured) (*T, error) {
	out := new(T)
	if err := DecodeUnstructured(u, out); err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeUnstructured converts an object read with the dynamic client into
// the typed object into points at. The one conversion of the three plugins.
func DecodeUnstructured(u *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("reading %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// ListFromUnstructured converts every item of a list.
func ListFromUnstructured[T any](l *unstructured.UnstructuredList) ([]T, error) {
	out := make([]T, 0, len(l.Items))
	for i := range l.Items {
		t, err := FromUnstructured[T](&l.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, nil
}
