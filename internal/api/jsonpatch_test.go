package api

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestAnnotationPathEscapesTheKey(t *testing.T) {
	assert.Equal(t, PointerToken("a/b~c"), "a~1b~0c")
	assert.Equal(t, AnnotationPath("fleetdrain.spokekit.io/cordoned-by"), "/metadata/annotations/fleetdrain.spokekit.io~1cordoned-by")
}
