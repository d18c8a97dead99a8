package spoke

import (
	"fmt"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	"sigs.k8s.io/yaml"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/values"
)

// renderValues sets every key of a spokes entry that upstream's chart
// template (templates/fleetconfig.yaml, v1beta1) reads, and the release-wide
// spokeAnnotations and spokeFeatureGates; spoke-3 is the chart's own
// placeholder entry, all empty.
const renderValues = `fleetConfig:
  spokeAnnotations: {team: ml, tier: gold}
  spokeFeatureGates: {ClusterClaim: true, RawFeedbackJsonString: false}
  spokes:
  - name: spoke-2
    hubRef: {name: hub, namespace: ""}
    createNamespace: true
    syncLabels: true
    clusterARN: arn:aws:eks:eu-west-1:111122223333:cluster/spoke-2
    timeout: 600
    logVerbosity: 4
    cleanupConfig: {purgeKubeconfigSecret: true, purgeAgentNamespace: true}
    kubeconfig: {context: "", inCluster: false, secretReference: {name: spoke-2-kubeconfig, kubeconfigKey: kubeconfig}}
    proxyCa: LS0tLS1CRUdJTi
    proxyUrl: https://proxy.example.com:3128
    klusterlet:
      annotations: {tier: silver}
      mode: Hosted
      forceInternalEndpointLookup: true
      managedClusterKubeconfig: {context: admin, inCluster: false, secretReference: {name: spoke-2-managed, kubeconfigKey: value}}
      forceInternalEndpointLookupManaged: true
      resources:
        limits: {cpu: 500m, memory: ""}
        requests: {cpu: "", memory: 128Mi}
        qosClass: ResourceRequirement
      singleton: true
      values: {replicaCount: 2}
      valuesFrom: {name: klusterlet-values, key: values.yaml}
    addOns:
    - configName: argocd
      annotations: {owner: platform}
    ociRegistry: {endpoint: oci://registry.example.com/mural}
  - name: spoke-3
    hubRef: {name: hub, namespace: ""}
    createNamespace: true
    syncLabels: false
    clusterARN: ""
    kubeconfig: {context: "", inCluster: false, secretReference: {name: spoke-3-kubeconfig, kubeconfigKey: kubeconfig}}
    proxyCa: ""
    proxyUrl: ""
    klusterlet:
      annotations: {}
      mode: Default
      forceInternalEndpointLookup: false
      managedClusterKubeconfig: {context: "", inCluster: false, secretReference: {name: "", kubeconfigKey: kubeconfig}}
      forceInternalEndpointLookupManaged: false
      resources:
        limits: {cpu: "", memory: ""}
        requests: {cpu: "", memory: ""}
        qosClass: Default
      singleton: false
      values: {}
    addOns: []
    ociRegistry: {endpoint: oci://registry.example.com/mural}
`

// The Spoke add --apply makes for an entry is the one the chart renders
// from it: every field the template renders (klusterlet.resources cleaned of
// its empty placeholders, managedClusterKubeconfig, valuesFrom, the
// release-wide annotations merged under the entry's own), none it does not
// (timeout, logVerbosity, ociRegistry).
func TestRenderSpokeRendersWhatTheChartRenders(t *testing.T) {
	file := &values.File{Path: "values.yaml", Kind: values.HelmValues, Data: []byte(renderValues)}
	var out strings.Builder
	for _, name := range []string{"spoke-2", "spoke-3"} {
		o := AddOptions{Apply: true, Cleanup: fleetconfig.ChartCleanupDefaults}
		o.Name = name
		// A release whose chart renders Spokes itself, as upstream's does.
		p, err := planAdd(&o, addFacts{Namespace: "mural-system", Hub: planHub(), Kubeconfig: []byte("new"), File: file, HelmOwned: true})
		assert.NilError(t, err)
		data, err := yaml.Marshal(p.Spoke)
		assert.NilError(t, err)
		fmt.Fprintf(&out, "== %s\n%s", name, data)
	}
	golden.Assert(t, out.String(), "render-spokes.golden")
}
