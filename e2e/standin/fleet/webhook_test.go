package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// fakeHub is a hub whose Hub "hub" in "fleet" exists (initialized or not)
// with the named ClusterManagementAddOns.
type fakeHub struct {
	missing, uninitialized bool
	cmas                   []string
}

func (h fakeHub) hubState(_ context.Context, ns, name string) (bool, bool, error) {
	if h.missing || ns != "fleet" || name != "hub" {
		return false, false, nil
	}
	return true, !h.uninitialized, nil
}

func (h fakeHub) addOns(context.Context) ([]string, error) { return h.cmas, nil }

// spokeJSON is a Spoke joining the Hub through a secret, with mutate's changes to its spec.
func spokeJSON(t *testing.T, name string, mutate func(spec map[string]any)) []byte {
	t.Helper()
	spec := map[string]any{
		"hubRef":        map[string]any{"name": "hub", "namespace": "fleet"},
		"kubeconfig":    map[string]any{"secretReference": map[string]any{"name": name + "-kubeconfig", "kubeconfigKey": "kubeconfig"}},
		"cleanupConfig": map[string]any{"purgeKlusterletOperator": true},
		"klusterlet":    map[string]any{"mode": "Default", "featureGates": "AddonManagement=true,ClusterClaim=true"},
		"timeout":       float64(300),
		"addOns":        []any{map[string]any{"configName": AgentAddOn}},
	}
	if mutate != nil {
		mutate(spec)
	}
	data, err := json.Marshal(map[string]any{
		"apiVersion": "fleetconfig.open-cluster-management.io/v1beta1", "kind": "Spoke",
		"metadata": map[string]any{"name": name, "namespace": "fleet"}, "spec": spec,
	})
	assert.NilError(t, err)
	return data
}

func create(obj []byte) *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: obj}}
}

func update(old, obj []byte) *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{Operation: admissionv1.Update, Object: runtime.RawExtension{Raw: obj}, OldObject: runtime.RawExtension{Raw: old}}
}

func noAddOns(spec map[string]any) { delete(spec, "addOns") }

func TestValidateSpokeCreate(t *testing.T) {
	initialized := fakeHub{cmas: []string{AgentAddOn, "argocd"}}
	cases := []struct {
		name    string
		mode    Mode
		hub     fakeHub
		spoke   []byte
		wantErr string
		warning bool
	}{
		{"addon mode with the agent", ModeAddon, initialized, spokeJSON(t, "s", nil), "", false},
		{"addon mode without the agent", ModeAddon, initialized, spokeJSON(t, "s", noAddOns), ErrAgentAddOnMissing, false},
		{"addon mode without the agent, no hub yet", ModeAddon, fakeHub{missing: true}, spokeJSON(t, "s", noAddOns), ErrAgentAddOnMissing, true},
		{"unified mode with the agent", ModeUnified, initialized, spokeJSON(t, "s", nil), ErrAgentAddOnForbidden, false},
		{"unified mode without add-ons", ModeUnified, initialized, spokeJSON(t, "s", noAddOns), "", false},
		{"hub-as-spoke by name, with the agent", ModeAddon, initialized, spokeJSON(t, "hub-as-spoke", nil), ErrAgentAddOnForbidden, false},
		{"hub-as-spoke in cluster, without add-ons", ModeAddon, initialized, spokeJSON(t, "local", func(s map[string]any) {
			noAddOns(s)
			s["kubeconfig"] = map[string]any{"inCluster": true}
		}), "", false},
		{"both kubeconfig sources", ModeUnified, initialized, spokeJSON(t, "s", func(s map[string]any) {
			noAddOns(s)
			s["kubeconfig"].(map[string]any)["inCluster"] = true
		}), "either secretReference or inCluster can be specified for the kubeconfig, not both", false},
		{"no kubeconfig source", ModeUnified, initialized, spokeJSON(t, "s", func(s map[string]any) {
			noAddOns(s)
			s["kubeconfig"] = map[string]any{"context": "x"}
		}), "either secretReference or inCluster must be specified for the kubeconfig", false},
		{"hosted without the managed cluster's kubeconfig", ModeAddon, initialized, spokeJSON(t, "s", func(s map[string]any) {
			s["klusterlet"].(map[string]any)["mode"] = "Hosted"
		}), "managedClusterKubeconfig.secretReference is required in hosted mode", false},
		{"unknown add-on, hub initialized", ModeAddon, initialized, spokeJSON(t, "s", func(s map[string]any) {
			s["addOns"] = append(s["addOns"].([]any), map[string]any{"configName": "nope"})
		}), `spec.addOns[1]: Invalid value: "nope": no matching HubAddOn or AddOnConfig found for AddOn`, false},
		{"unknown add-on, hub not initialized", ModeAddon, fakeHub{uninitialized: true}, spokeJSON(t, "s", func(s map[string]any) {
			s["addOns"] = append(s["addOns"].([]any), map[string]any{"configName": "nope"})
		}), "", true},
		{"add-on client registration", ModeAddon, initialized, spokeJSON(t, "s", func(s map[string]any) {
			s["klusterlet"].(map[string]any)["addonKubeClientRegistrationAuth"] = "password"
		}), `Unsupported value: "password"`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			warnings, err := validateSpoke(context.Background(), tc.mode, tc.hub, create(tc.spoke))
			if tc.wantErr == "" {
				assert.NilError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.wantErr)
				assert.Check(t, apierrors.IsInvalid(err), "an Invalid status: %v", err)
			}
			assert.Equal(t, len(warnings) > 0, tc.warning, "%v", warnings)
		})
	}
}

func TestValidateSpokeUpdate(t *testing.T) {
	hub := fakeHub{cmas: []string{AgentAddOn}}
	old := spokeJSON(t, "s", nil)
	cases := []struct {
		name    string
		mutate  func(map[string]any)
		allowed bool
	}{
		{"metadata only", nil, true},
		{"timeout, log verbosity, cleanup config", func(s map[string]any) {
			s["timeout"], s["logVerbosity"] = float64(60), float64(3)
			s["cleanupConfig"] = map[string]any{"purgeKubeconfigSecret": true}
		}, true},
		{"kubeconfig, annotations, values", func(s map[string]any) {
			s["kubeconfig"] = map[string]any{"secretReference": map[string]any{"name": "other"}, "context": "c"}
			s["klusterlet"].(map[string]any)["annotations"] = map[string]any{"a": "b"}
			s["klusterlet"].(map[string]any)["values"] = map[string]any{"replicaCount": float64(2)}
		}, true},
		{"a false field written out", func(s map[string]any) { s["syncLabels"] = false }, true},
		{"hubRef", func(s map[string]any) { s["hubRef"].(map[string]any)["name"] = "other" }, false},
		{"klusterlet feature gates", func(s map[string]any) { s["klusterlet"].(map[string]any)["featureGates"] = "ClusterClaim=true" }, false},
		{"syncLabels", func(s map[string]any) { s["syncLabels"] = true }, false},
		{"proxyUrl", func(s map[string]any) { s["proxyUrl"] = "http://proxy" }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := validateSpoke(context.Background(), ModeAddon, hub, update(old, spokeJSON(t, "s", tc.mutate)))
			if tc.allowed {
				assert.NilError(t, err)
				return
			}
			assert.Error(t, err, ErrAllowedSpokeUpdate)
		})
	}
	t.Run("the add-on rules hold on update too", func(t *testing.T) {
		_, err := validateSpoke(context.Background(), ModeAddon, hub, update(old, spokeJSON(t, "s", noAddOns)))
		assert.ErrorContains(t, err, ErrAgentAddOnMissing)
	})
}

func TestValidateHub(t *testing.T) {
	hub := func(spec map[string]any) []byte {
		data, err := json.Marshal(map[string]any{"metadata": map[string]any{"name": "hub"}, "spec": spec})
		assert.NilError(t, err)
		return data
	}
	valid := map[string]any{"kubeconfig": map[string]any{"inCluster": true}, "clusterManager": map[string]any{"featureGates": "AddonManagement=true"}}
	assert.NilError(t, validateHub(create(hub(valid))))
	assert.ErrorContains(t, validateHub(create(hub(map[string]any{"kubeconfig": map[string]any{"inCluster": true}}))),
		"either hub.clusterManager or hub.singletonControlPlane must be specified")
	assert.NilError(t, validateHub(update(hub(valid), hub(map[string]any{
		"kubeconfig": map[string]any{"inCluster": true}, "apiServer": "https://x",
		"clusterManager": map[string]any{"featureGates": "AddonManagement=true", "source": map[string]any{"bundleVersion": "v1.0.0"}},
	}))))
	assert.Error(t, validateHub(update(hub(valid), hub(map[string]any{
		"kubeconfig": map[string]any{"inCluster": true}, "createNamespace": true,
		"clusterManager": map[string]any{"featureGates": "AddonManagement=true"},
	}))), errAllowedHubUpdate)
}

func TestAdmitAnswersAsControllerRuntime(t *testing.T) {
	srv := httptest.NewServer(admit(func(ctx context.Context, r *admissionv1.AdmissionRequest) ([]string, error) {
		return validateSpoke(ctx, ModeAddon, fakeHub{missing: true}, r)
	}))
	defer srv.Close()
	review := func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		req.UID = "u-1"
		body, err := json.Marshal(admissionv1.AdmissionReview{Request: req})
		assert.NilError(t, err)
		resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
		assert.NilError(t, err)
		defer func() { assert.Check(t, resp.Body.Close()) }()
		var out admissionv1.AdmissionReview
		assert.NilError(t, json.NewDecoder(resp.Body).Decode(&out))
		assert.Equal(t, out.Response.UID, req.UID)
		return out.Response
	}
	r := review(create(spokeJSON(t, "s", nil)))
	assert.Check(t, r.Allowed)
	assert.Check(t, is.DeepEqual(r.Warnings, []string{warnHubNotFound}))

	r = review(create(spokeJSON(t, "s", noAddOns)))
	assert.Check(t, !r.Allowed)
	assert.Equal(t, r.Result.Code, int32(http.StatusUnprocessableEntity))
	assert.Check(t, is.Contains(r.Result.Message, ErrAgentAddOnMissing))

	r = review(update(spokeJSON(t, "s", nil), spokeJSON(t, "s", func(s map[string]any) { s["hubRef"].(map[string]any)["name"] = "x" })))
	assert.Check(t, !r.Allowed)
	assert.Equal(t, r.Result.Code, int32(http.StatusForbidden))
	assert.Equal(t, r.Result.Message, ErrAllowedSpokeUpdate)
}
