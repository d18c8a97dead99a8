package harness

import (
	"testing"

	"gotest.tools/v3/assert"
	"sigs.k8s.io/yaml"
)

// kwokctlFile is the part of kwokctl's KwokctlConfiguration the options write.
type kwokctlFile struct {
	APIVersion        string         `json:"apiVersion"`
	Kind              string         `json:"kind"`
	Options           map[string]any `json:"options"`
	ComponentsPatches []struct {
		Name      string `json:"name"`
		ExtraArgs []struct {
			Key      string `json:"key"`
			Value    string `json:"value"`
			Override bool   `json:"override"`
		} `json:"extraArgs"`
	} `json:"componentsPatches"`
}

// flags reads the rendered configuration back: component -> flag -> value,
// failing on a key written twice (a second componentsPatches would replace
// the first) or a component patched in two entries.
func flags(t *testing.T, config string) map[string]map[string]string {
	t.Helper()
	var f kwokctlFile
	assert.NilError(t, yaml.UnmarshalStrict([]byte(config), &f), config)
	got := map[string]map[string]string{}
	for _, p := range f.ComponentsPatches {
		assert.Check(t, got[p.Name] == nil, "component %s patched twice:\n%s", p.Name, config)
		got[p.Name] = map[string]string{}
		for _, a := range p.ExtraArgs {
			got[p.Name][a.Key] = a.Value
		}
	}
	return got
}

func TestEveryClusterRunsWithoutLeaderElection(t *testing.T) {
	for name, opts := range map[string][]ClusterOption{
		"plain":                  nil,
		"kwok on annotated only": {KwokManagesAnnotatedNodesOnly()},
	} {
		t.Run(name, func(t *testing.T) {
			var o clusterOptions
			for _, opt := range opts {
				opt(&o)
			}
			got := flags(t, o.kwokctlConfig([]int{1, 2, 3, 4, 5, 6}))
			assert.Equal(t, got["kube-controller-manager"]["leader-elect"], "false")
			assert.Equal(t, got["kube-scheduler"]["leader-elect"], "false")
		})
	}
}

func TestOptionsPatchingOneComponentMerge(t *testing.T) {
	var o clusterOptions
	KwokManagesAnnotatedNodesOnly()(&o)
	o.args = append(o.args, componentArg{component: "kube-controller-manager", key: "cluster-signing-cert-file", value: "/pki/ca.crt"})
	got := flags(t, o.kwokctlConfig([]int{1, 2, 3, 4, 5, 6}))
	assert.Equal(t, got["kube-controller-manager"]["cluster-signing-cert-file"], "/pki/ca.crt")
	assert.Equal(t, got["kube-controller-manager"]["leader-elect"], "false")
	assert.Equal(t, got["kwok-controller"]["manage-nodes-with-annotation-selector"], "kwok.x-k8s.io/node=fake")
}
