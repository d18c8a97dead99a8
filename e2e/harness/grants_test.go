package harness

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
)

// The question a Role grant answers is read from the line the plugins
// print, flags spelled either way; a binding of that Role asks nothing more.
func TestGrantQuestion(t *testing.T) {
	stderr := `error: may not read secret mural-system/least-kubeconfig
  kubectl create role spokekit-spoke:least-kubeconfig -n mural-system --verb get,update --resource secrets --resource-name least-kubeconfig
  kubectl create rolebinding spokekit-spoke:least-kubeconfig -n mural-system --role spokekit-spoke:least-kubeconfig --user ops
  kubectl create role r -n ns --verb=list --resource=pods`
	grants := Grants(stderr)
	assert.Equal(t, len(grants), 3)
	var cmd Command // a Role grant is answered without asking the API server
	for i, want := range [][]string{
		{"get", "secrets/least-kubeconfig", "-n", "mural-system"},
		nil,
		{"list", "pods", "-n", "ns"},
	} {
		got, err := cmd.grantQuestion(context.Background(), grants[i])
		assert.NilError(t, err)
		assert.DeepEqual(t, got, want)
	}
}
