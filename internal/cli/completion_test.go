package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"gotest.tools/v3/assert"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestKubeconfigNamesComplete(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "config")
	assert.NilError(t, os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: prod, cluster: {server: "https://127.0.0.1:1"}}, {name: dev, cluster: {server: "https://127.0.0.1:2"}}]
users: [{name: admin, user: {token: t}}]
contexts: [{name: prod-hub, context: {cluster: prod, user: admin}}, {name: prod-platform, context: {cluster: prod, user: admin}}, {name: dev, context: {cluster: dev, user: admin}}]
current-context: dev
`), 0o600))
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	root, _ := NewRoot(Plugin{Name: "sample"}, streams)
	assert.NilError(t, root.PersistentFlags().Set("kubeconfig", kc))
	for flag, want := range map[string][]string{"context": {"prod-hub", "prod-platform"}, "cluster": {"prod"}, "user": nil} {
		complete, ok := root.GetFlagCompletionFunc(flag)
		assert.Assert(t, ok, flag)
		got, directive := complete(root, nil, "pro")
		assert.DeepEqual(t, got, want)
		assert.Equal(t, directive, cobra.ShellCompDirectiveNoFileComp)
	}
}
