package admissionpolicy

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

var spokes = schema.GroupVersionResource{Group: "fleetconfig.open-cluster-management.io", Version: "v1beta1", Resource: "spokes"}

// spokeWriter holds the roles every kubectl spoke command needs.
var spokeWriter = []binding{
	{Role: "spokekit-spoke"},
	{Role: "spokekit-spoke-release", Namespace: "mural-system"},
}

// addedSpoke is a Spoke as kubectl spoke add writes it (with the CRD's
// defaults filled in, as admission sees it).
const addedSpoke = `
apiVersion: fleetconfig.open-cluster-management.io/v1beta1
kind: Spoke
metadata:
  name: spoke-1
  namespace: mural-system
  annotations: {spoke.spokekit.io/kubeconfig-secret: spoke-1-kubeconfig}
spec:
  createNamespace: true
  hubRef: {name: hub, namespace: mural-system}
  kubeconfig:
    secretReference: {name: spoke-1-kubeconfig, kubeconfigKey: kubeconfig}
  klusterlet:
    annotations: {team: edge}
    featureGates: AddonManagement=true,ClusterClaim=true
    mode: Default
    resources: {qosClass: Default}
  addOns:
  - configName: fleetconfig-controller-agent
  - configName: governance-policy-framework
    deploymentConfig: {agentInstallNamespace: open-cluster-management-agent-addon}
  cleanupConfig: {purgeAgentNamespace: false, purgeKlusterletOperator: true, purgeKubeconfigSecret: false, forceClusterDrain: true}
  timeout: 300
  logVerbosity: 0
`

// newSpoke is what add creates: add-ons carry no deploymentConfig (an
// administrator may have added one to addedSpoke since).
var newSpoke = strings.Replace(addedSpoke, "deploymentConfig: {agentInstallNamespace: open-cluster-management-agent-addon}", "annotations: {a: b}", 1)

func createSpoke(object string) request {
	return request{Operation: admission.Create, Resource: spokes, Namespace: "mural-system", Object: object, User: "alice", Bound: spokeWriter}
}

func updateSpoke(updated string) request {
	return request{Operation: admission.Update, Resource: spokes, Namespace: "mural-system", OldObject: addedSpoke, Object: updated, User: "alice", Bound: spokeWriter}
}

// withSpec puts YAML lines at the end of addedSpoke's spec (two spaces in).
func withSpec(lines string) string { return addedSpoke + lines }

func TestSpokeWriterDoesWhatAddSetAndRotateDo(t *testing.T) {
	for name, r := range map[string]request{
		"add":                       createSpoke(newSpoke),
		"add with more of an entry": createSpoke(newSpoke + "  clusterARN: arn:aws:eks:eu-west-1:1:cluster/edge\n  syncLabels: true\n"),
		"set logVerbosity":          updateSpoke(strings.Replace(addedSpoke, "logVerbosity: 0", "logVerbosity: 4", 1)),
		"set timeout and cleanupConfig": updateSpoke(strings.Replace(strings.Replace(addedSpoke, "timeout: 300", "timeout: 600", 1),
			"purgeAgentNamespace: false", "purgeAgentNamespace: true", 1)),
		"set klusterlet.annotations":              updateSpoke(strings.Replace(addedSpoke, "annotations: {team: edge}", "annotations: {team: core, tier: gold}", 1)),
		"set addOns, keeping a deploymentConfig":  updateSpoke(strings.Replace(addedSpoke, "  - configName: fleetconfig-controller-agent\n", "", 1)),
		"set addOns, dropping a deploymentConfig": updateSpoke(strings.Replace(addedSpoke, "    deploymentConfig: {agentInstallNamespace: open-cluster-management-agent-addon}\n", "", 1)),
		"rotate-kubeconfig --secret":              updateSpoke(strings.Replace(addedSpoke, "{name: spoke-1-kubeconfig, kubeconfigKey", "{name: spoke-1-kubeconfig-2027, kubeconfigKey", 1)),
		"force-remove's annotation":               updateSpoke(strings.Replace(addedSpoke, "annotations: {spoke.spokekit.io", "annotations: {fleetconfig.open-cluster-management.io/force-delete: \"true\", spoke.spokekit.io", 1)),
	} {
		t.Run(name, func(t *testing.T) {
			v := admit(t, r)
			assert.DeepEqual(t, v.Matched, []string{"spokekit-spoke-fields"})
			assert.DeepEqual(t, v.Denied, []string(nil))
		})
	}
}

func TestSpokeWriterMakesTheControllerNoDeputy(t *testing.T) {
	for name, r := range map[string]request{
		"add with klusterlet.values":         createSpoke(strings.Replace(newSpoke, "    mode: Default\n", "    mode: Default\n    values: {images: {registry: evil.example}}\n", 1)),
		"add with klusterlet.valuesFrom":     createSpoke(strings.Replace(newSpoke, "    mode: Default\n", "    mode: Default\n    valuesFrom: {name: cm, key: values}\n", 1)),
		"add with a proxyUrl":                createSpoke(newSpoke + "  proxyUrl: http://proxy.evil.example:3128\n"),
		"add with a proxyCa":                 createSpoke(newSpoke + "  proxyCa: LS0t\n"),
		"add with an image deploymentConfig": createSpoke(strings.Replace(addedSpoke, "{agentInstallNamespace: open-cluster-management-agent-addon}", "{registries: [{source: quay.io/ocm, mirror: evil.example/ocm}]}", 1)),
		"add naming another spoke's Secret":  createSpoke(strings.Replace(newSpoke, "{name: spoke-1-kubeconfig,", "{name: spoke-2-kubeconfig,", 1)),
		"add naming a TLS Secret":            createSpoke(strings.Replace(newSpoke, "{name: spoke-1-kubeconfig,", "{name: webhook-tls,", 1)),
		"add with another key":               createSpoke(strings.Replace(newSpoke, "kubeconfigKey: kubeconfig", "kubeconfigKey: tls.key", 1)),
		"add in-cluster":                     createSpoke(strings.Replace(newSpoke, "    secretReference: {name: spoke-1-kubeconfig, kubeconfigKey: kubeconfig}\n", "    inCluster: true\n", 1)),
		"add with a hosted kubeconfig":       createSpoke(strings.Replace(newSpoke, "    mode: Default\n", "    mode: Hosted\n    managedClusterKubeconfig: {secretReference: {name: hub-kubeconfig}}\n", 1)),
		"add for another Hub's namespace":    createSpoke(strings.Replace(newSpoke, "{name: hub, namespace: mural-system}", "{name: hub, namespace: other-system}", 1)),
		"set klusterlet.values":              updateSpoke(strings.Replace(addedSpoke, "    mode: Default\n", "    mode: Default\n    values: {images: {registry: evil.example}}\n", 1)),
		"set klusterlet.valuesFrom":          updateSpoke(strings.Replace(addedSpoke, "    mode: Default\n", "    mode: Default\n    valuesFrom: {name: cm, key: values}\n", 1)),
		"set klusterlet.mode":                updateSpoke(strings.Replace(addedSpoke, "mode: Default", "mode: Hosted", 1)),
		"set proxyUrl":                       updateSpoke(withSpec("  proxyUrl: http://proxy.evil.example:3128\n")),
		"set proxyCa":                        updateSpoke(withSpec("  proxyCa: LS0t\n")),
		"set syncLabels":                     updateSpoke(withSpec("  syncLabels: true\n")),
		"set a deploymentConfig":             updateSpoke(strings.Replace(addedSpoke, "{agentInstallNamespace: open-cluster-management-agent-addon}", "{registries: [{source: quay.io/ocm, mirror: evil.example/ocm}]}", 1)),
		"add an add-on with a deploymentConfig": updateSpoke(strings.Replace(addedSpoke, "  - configName: fleetconfig-controller-agent\n",
			"  - configName: fleetconfig-controller-agent\n    deploymentConfig: {nodePlacement: {nodeSelector: {a: b}}}\n", 1)),
		"point at another spoke's Secret":        updateSpoke(strings.Replace(addedSpoke, "{name: spoke-1-kubeconfig,", "{name: spoke-2-kubeconfig,", 1)),
		"point at a Secret named like a prefix":  updateSpoke(strings.Replace(addedSpoke, "{name: spoke-1-kubeconfig,", "{name: spoke-1-kubeconfigx,", 1)),
		"point at the Helm release record":       updateSpoke(strings.Replace(addedSpoke, "{name: spoke-1-kubeconfig,", "{name: sh.helm.release.v1.mural.v1,", 1)),
		"point at another key of the Secret":     updateSpoke(strings.Replace(addedSpoke, "kubeconfigKey: kubeconfig", "kubeconfigKey: other", 1)),
		"switch to the controller's credentials": updateSpoke(strings.Replace(addedSpoke, "    secretReference: {name: spoke-1-kubeconfig, kubeconfigKey: kubeconfig}\n", "    inCluster: true\n", 1)),
	} {
		t.Run(name, func(t *testing.T) {
			v := admit(t, r)
			assert.Assert(t, v.deniedBy("spokekit-spoke-fields"), "%+v", v)
		})
	}
}

func TestSpokeFieldsLeaveAdministratorsAlone(t *testing.T) {
	r := updateSpoke(strings.Replace(addedSpoke, "    mode: Default\n", "    mode: Default\n    values: {images: {registry: mirror.example}}\n", 1))
	r.Bound, r.Rules = nil, []rbacv1.PolicyRule{admin}
	v := admit(t, r)
	assert.DeepEqual(t, v.Denied, []string(nil))
	assert.DeepEqual(t, v.Matched, []string(nil))
}
