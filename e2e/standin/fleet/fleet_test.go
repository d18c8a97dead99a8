package fleet

import (
	"testing"

	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A Spoke left at the defaults takes the Hub's timeout and log verbosity;
// one that set its own keeps them.
func TestHubDefaults(t *testing.T) {
	hub := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"timeout": int64(120), "logVerbosity": int64(3)}}}
	s := &spoke{}
	s.Spec.Timeout = 300
	assert.DeepEqual(t, hubDefaults(s, hub), map[string]any{"timeout": int64(120), "logVerbosity": int64(3)})
	s.Spec.Timeout, s.Spec.LogVerbosity = 60, 1
	assert.DeepEqual(t, hubDefaults(s, hub), map[string]any{})
	assert.Assert(t, hubDefaults(s, nil) == nil, "no Hub")
}
