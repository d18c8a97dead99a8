package fleet

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Upstream's validating webhooks (fleetconfig-controller
// internal/webhook/v1beta1): their names, paths and messages.
const (
	spokeWebhookName = "vspoke-v1beta1.kb.io"
	spokeWebhookPath = "/validate-fleetconfig-open-cluster-management-io-v1beta1-spoke"
	hubWebhookName   = "vhub-v1beta1.kb.io"
	hubWebhookPath   = "/validate-fleetconfig-open-cluster-management-io-v1beta1-hub"

	warnHubNotFound = "hub not found, cannot validate spoke addons"
	// ErrAllowedSpokeUpdate is upstream's refusal of a Spoke update that
	// changes a field outside the allow-list. Its list is upstream's, stale
	// as upstream's is: the code allows all of spec.cleanupConfig.
	ErrAllowedSpokeUpdate = "spoke contains changes which are not allowed; only changes to spec.klusterlet.annotations, spec.klusterlet.values, spec.klusterlet.valuesFrom, spec.kubeconfig, spec.addOns, spec.purgeAgentNamespace, spec.cleanupConfig.purgeKubeconfigSecret, spec.timeout, and spec.logVerbosity are allowed when updating a spoke"
	errAllowedHubUpdate   = "only changes to spec.apiServer, spec.clusterManager.source.*, spec.hubAddOns, spec.addOnConfigs, spec.logVerbosity, spec.timeout, spec.registrationAuth, and spec.kubeconfig are allowed when updating the hub"
	// ErrAgentAddOnMissing refuses, in addon mode, a Spoke (not hub-as-spoke)
	// without the agent add-on.
	ErrAgentAddOnMissing = "Spoke must enable fleetconfig-controller-agent addon"
	// ErrAgentAddOnForbidden refuses the agent add-on on hub-as-spoke and in unified mode.
	ErrAgentAddOnForbidden = "fleetconfig-controller-agent addon must not be enabled for hub-as-spoke Spokes, or when using Unified mode"
	errUnknownAddOn        = "no matching HubAddOn or AddOnConfig found for AddOn"
)

var (
	spokeKind = schema.GroupKind{Group: spokeGVR.Group, Kind: "Spoke"}
	hubKind   = schema.GroupKind{Group: hubGVR.Group, Kind: "Hub"}
)

// hubView is what the webhook reads of the hub cluster.
type hubView interface {
	// hubState finds a Hub and tells whether it is initialized.
	hubState(ctx context.Context, namespace, name string) (found, initialized bool, err error)
	// addOns names the ClusterManagementAddOns.
	addOns(ctx context.Context) ([]string, error)
}

func (f *Fleet) hubState(ctx context.Context, namespace, name string) (bool, bool, error) {
	h, err := f.dyn.Resource(hubGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	return true, conditionTrue(h, conditionHubInitialized), nil
}

func (f *Fleet) addOns(ctx context.Context) ([]string, error) {
	l, err := f.dyn.Resource(clusterAddOnGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	names := make([]string, len(l.Items))
	for i := range l.Items {
		names[i] = l.Items[i].GetName()
	}
	return names, nil
}

// serveWebhook serves the Spoke and Hub webhooks on 127.0.0.1 until ctx
// ends, with a certificate of a CA made here, and registers them with the
// hub's API server as upstream's chart does (failurePolicy Fail).
func (f *Fleet) serveWebhook(ctx context.Context) error {
	dir, caPEM, err := f.hub.Env().ServingCert(f.hub.Name + "-fleetconfig-webhook")
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(spokeWebhookPath, admit(func(ctx context.Context, r *admissionv1.AdmissionRequest) ([]string, error) {
		return validateSpoke(ctx, f.mode, f, r)
	}))
	mux.Handle(hubWebhookPath, admit(func(_ context.Context, r *admissionv1.AdmissionRequest) ([]string, error) {
		return nil, validateHub(r)
	}))
	srv := &http.Server{
		Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}
	go func() {
		if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			f.fail(ctx, fmt.Errorf("webhook server: %w", err))
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	hook := func(name, path, resource string) string {
		// timeoutSeconds: upstream's 5 s leaves no room on a loaded test machine.
		return fmt.Sprintf(`- name: %s
  failurePolicy: Fail
  sideEffects: None
  timeoutSeconds: 10
  admissionReviewVersions: [v1]
  clientConfig: {url: "https://%s%s", caBundle: %s}
  rules:
  - {operations: [CREATE, UPDATE], apiGroups: [%s], apiVersions: [v1beta1], resources: [%s]}
`, name, ln.Addr(), path, base64.StdEncoding.EncodeToString(caPEM), spokeGVR.Group, resource)
	}
	return f.hub.ApplyYAML(ctx, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: fleetconfig-controller-validating-webhook-configuration}
webhooks:
`+hook(spokeWebhookName, spokeWebhookPath, "spokes")+hook(hubWebhookName, hubWebhookPath, "hubs"))
}

// admit answers AdmissionReviews with validate's verdict, as
// controller-runtime's validating webhooks do: an API status error is
// returned as it is (422 Invalid), any other error as 403 Forbidden.
func admit(validate func(context.Context, *admissionv1.AdmissionRequest) ([]string, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		warnings, err := validate(r.Context(), review.Request)
		resp.Warnings = warnings
		if err != nil {
			resp.Allowed = false
			var st apierrors.APIStatus
			if errors.As(err, &st) {
				s := st.Status()
				resp.Result = &s
			} else {
				resp.Result = &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: err.Error()}
			}
		}
		review.Response, review.Request = resp, nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&review)
	})
}

// decodeSpoke reads an admitted Spoke both typed and as a map (for the
// update allow-list, which must see every field).
func decodeSpoke(raw []byte) (*spoke, map[string]any, error) {
	var s spoke
	var m map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil, err
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, nil, err
	}
	spec, _ := m["spec"].(map[string]any)
	return &s, spec, nil
}

// validateSpoke is upstream's Spoke validation, on create and update.
func validateSpoke(ctx context.Context, mode Mode, v hubView, r *admissionv1.AdmissionRequest) ([]string, error) {
	s, spec, err := decodeSpoke(r.Object.Raw)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	var errs field.ErrorList
	switch r.Operation {
	case admissionv1.Create:
		if s.Spec.Klusterlet.Mode == "Hosted" {
			path := field.NewPath("spec", "klusterlet", "managedClusterKubeconfig", "secretReference")
			if s.Spec.Klusterlet.ManagedClusterKubeconfig.SecretReference == nil {
				errs = append(errs, field.Invalid(path, s.Name, "managedClusterKubeconfig.secretReference is required in hosted mode"))
			} else if msg := kubeconfigProblem(s.Spec.Klusterlet.ManagedClusterKubeconfig); msg != "" {
				errs = append(errs, field.Invalid(path, s.Name, msg))
			}
		}
	case admissionv1.Update:
		_, oldSpec, err := decodeSpoke(r.OldObject.Raw)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if !sameExcept(oldSpec, spec, spokeMutable) {
			return nil, errors.New(ErrAllowedSpokeUpdate)
		}
	default:
		return nil, nil
	}
	if msg := kubeconfigProblem(s.Spec.Kubeconfig); msg != "" {
		errs = append(errs, field.Invalid(field.NewPath("spec", "kubeconfig"), spec["kubeconfig"], msg))
	}
	if auth := strings.ToLower(s.Spec.Klusterlet.AddonKubeClientRegistrationAuth); auth != "" && auth != "csr" && auth != "token" {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "klusterlet", "addonKubeClientRegistrationAuth"),
			s.Spec.Klusterlet.AddonKubeClientRegistrationAuth, []string{"csr", "token"}))
	}
	warnings, addOnErrs := validateAddOns(ctx, mode, v, s)
	if errs = append(errs, addOnErrs...); len(errs) > 0 {
		return warnings, apierrors.NewInvalid(spokeKind, s.Name, errs)
	}
	return warnings, nil
}

// kubeconfigProblem is upstream's isKubeconfigValid: exactly one of
// secretReference and inCluster.
func kubeconfigProblem(k kubeconfigRef) string {
	switch {
	case k.SecretReference == nil && !k.InCluster:
		return "either secretReference or inCluster must be specified for the kubeconfig"
	case k.SecretReference != nil && k.InCluster:
		return "either secretReference or inCluster can be specified for the kubeconfig, not both"
	}
	return ""
}

// validateAddOns is upstream's add-on rules: the agent add-on required on
// every Spoke but hub-as-spoke in addon mode, forbidden on hub-as-spoke and
// in unified mode; and once the Hub is initialized every add-on must name a
// ClusterManagementAddOn.
func validateAddOns(ctx context.Context, mode Mode, v hubView, s *spoke) ([]string, field.ErrorList) {
	path := field.NewPath("spec", "addOns")
	var names []string
	for _, a := range s.Spec.AddOns {
		names = append(names, a.ConfigName)
	}
	var errs field.ErrorList
	switch agent := slices.Contains(names, AgentAddOn); {
	case (s.hubAsSpoke() || mode == ModeUnified) && agent:
		errs = append(errs, field.Invalid(path, names, ErrAgentAddOnForbidden))
	case !s.hubAsSpoke() && mode == ModeAddon && !agent:
		errs = append(errs, field.Invalid(path, names, ErrAgentAddOnMissing))
	}
	found, initialized, err := v.hubState(ctx, s.Spec.HubRef.Namespace, s.Spec.HubRef.Name)
	if err != nil {
		return nil, append(errs, field.InternalError(path, err))
	}
	if !found || !initialized {
		// A warning, so a Hub and its Spokes may be created together.
		return []string{warnHubNotFound}, errs
	}
	known, err := v.addOns(ctx)
	if err != nil {
		return nil, append(errs, field.InternalError(path, err))
	}
	for i, n := range names {
		if !slices.Contains(known, n) {
			errs = append(errs, field.Invalid(path.Index(i), n, errUnknownAddOn))
		}
	}
	return nil, errs
}

// spokeMutable is upstream's Spoke update allow-list.
var spokeMutable = [][]string{
	{"klusterlet", "annotations"},
	{"klusterlet", "values"},
	{"klusterlet", "valuesFrom"},
	{"kubeconfig"},
	{"addOns"},
	{"timeout"},
	{"logVerbosity"},
	{"cleanupConfig"},
}

// hubMutable is upstream's Hub update allow-list.
var hubMutable = [][]string{
	{"apiServer"},
	{"clusterManager", "source"},
	{"hubAddOns"},
	{"addOnConfigs"},
	{"logVerbosity"},
	{"timeout"},
	{"registrationAuth"},
	{"kubeconfig"},
}

// sameExcept tells whether two specs are equal once the mutable fields are
// dropped, comparing as upstream's typed structs do: a field at its zero
// value is the same as no field.
func sameExcept(old, updated map[string]any, mutable [][]string) bool {
	a, b := withoutZero(old), withoutZero(updated)
	for _, p := range mutable {
		drop(a, p)
		drop(b, p)
	}
	return reflect.DeepEqual(withoutZero(a), withoutZero(b))
}

func drop(m map[string]any, path []string) {
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			return
		}
		m = next
	}
	delete(m, path[len(path)-1])
}

// withoutZero copies a JSON map leaving out false, 0, "", null and empty
// maps and lists (after their own zero values are left out).
func withoutZero(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if v = pruned(v); v != nil {
			out[k] = v
		}
	}
	return out
}

func pruned(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if m := withoutZero(x); len(m) > 0 {
			return m
		}
	case []any:
		if len(x) > 0 {
			l := make([]any, len(x))
			for i, e := range x {
				l[i] = pruned(e)
			}
			return l
		}
	case bool:
		if x {
			return x
		}
	case float64:
		if x != 0 {
			return x
		}
	case string:
		if x != "" {
			return x
		}
	}
	return nil
}

// validateHub is upstream's Hub validation: on create a kubeconfig source
// and a cluster manager (or singleton control plane), on update the
// allow-list. (Its add-on checks need the add-on ConfigMaps the test bed
// does not install.)
func validateHub(r *admissionv1.AdmissionRequest) error {
	var h struct {
		metav1.ObjectMeta `json:"metadata"`
		Spec              map[string]any `json:"spec"`
	}
	if err := json.Unmarshal(r.Object.Raw, &h); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	switch r.Operation {
	case admissionv1.Create:
		var k struct {
			Spec struct {
				Kubeconfig kubeconfigRef `json:"kubeconfig"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(r.Object.Raw, &k); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		var errs field.ErrorList
		if msg := kubeconfigProblem(k.Spec.Kubeconfig); msg != "" {
			errs = append(errs, field.Invalid(field.NewPath("hub"), h.Spec["kubeconfig"], msg))
		}
		if h.Spec["clusterManager"] == nil && h.Spec["singletonControlPlane"] == nil {
			errs = append(errs, field.Invalid(field.NewPath("hub"), h.Spec, "either hub.clusterManager or hub.singletonControlPlane must be specified"))
		}
		if len(errs) > 0 {
			return apierrors.NewInvalid(hubKind, h.Name, errs)
		}
	case admissionv1.Update:
		var old struct {
			Spec map[string]any `json:"spec"`
		}
		if err := json.Unmarshal(r.OldObject.Raw, &old); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		if !sameExcept(old.Spec, h.Spec, hubMutable) {
			return errors.New(errAllowedHubUpdate)
		}
	}
	return nil
}
