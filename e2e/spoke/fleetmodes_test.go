//go:build e2e

package spoke

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"

	"github.com/spokekit/spokekit/e2e/harness"
	"github.com/spokekit/spokekit/e2e/standin/fleet"
	"github.com/spokekit/spokekit/internal/api/fleetconfig"
)

// The tests here show the FleetConfig modes the test bed models, with
// Spokes written as a chart install or a user with kubectl writes them:
// what upstream's webhook refuses in each mode, and the addon-mode pivot
// after which the hub's kubeconfig Secret may be purged.

// kubectlApply applies a Spoke with kubectl as a user would.
func kubectlApply(t *testing.T, u *unstructured.Unstructured, extra ...string) (string, int) {
	t.Helper()
	data, err := yaml.Marshal(u.Object)
	assert.NilError(t, err)
	r := harness.Kubectl(t, hub.For(t.TempDir()), append([]string{"apply", "-f", writeFile(t, "spoke.yaml", string(data))}, extra...)...)
	return r.Stdout + r.Stderr, r.ExitCode
}

// The add-on rules of upstream's webhook, per mode, as a user meets them:
// the Spoke `kubectl spoke add` writes lists the agent add-on in addon mode
// and none in unified mode, and the webhook accepts it; `kubectl spoke
// set` of add-ons the mode forbids exits 1 with the webhook's reason and
// changes nothing; hub-as-spoke is no name add takes. Then, with kubectl
// alone, the webhook's other refusals, so the stand-in is seen to serve
// them in both modes.
func TestWebhookAddOnRulesPerMode(t *testing.T) {
	// What add writes, through the webhook (a server-side dry run is
	// admitted as the write would be) and then for real.
	r := spoke(t, "add", "rules", "--spoke-kubeconfig", spoke1.Kubeconfig, "--apply", "--dry-run=server", "-o", "json")
	assert.Equal(t, r.ExitCode, 0, r)
	var report struct {
		Spoke struct {
			Spec struct {
				AddOns []map[string]any `json:"addOns"`
			} `json:"spec"`
		} `json:"spoke"`
	}
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &report), r.Stdout)
	var want []map[string]any
	if mode == fleet.ModeAddon {
		want = []map[string]any{{"configName": fleet.AgentAddOn}}
	}
	assert.Check(t, is.DeepEqual(report.Spoke.Spec.AddOns, want), "add's Spoke in %s mode", mode)
	assert.Check(t, spokeObject(t, "rules") == nil, "a dry run creates nothing")

	addAndJoin(t, "rules", spoke1)
	written := func() []any {
		addOns, _, _ := unstructured.NestedSlice(spokeObject(t, "rules").Object, "spec", "addOns")
		return addOns
	}
	assert.Check(t, is.DeepEqual(written(), agentAddOns()), "the Spoke add created")

	// set of add-ons the mode forbids: the webhook's refusal, exit 1.
	refusedSets := map[string]string{}
	if mode == fleet.ModeAddon {
		refusedSets["addOns=null"] = fleet.ErrAgentAddOnMissing
		refusedSets["addOns=[{configName: "+fleet.AgentAddOn+"}, {configName: no-such-addon}]"] = "no matching HubAddOn or AddOnConfig found for AddOn"
	} else {
		refusedSets["addOns=[{configName: "+fleet.AgentAddOn+"}]"] = fleet.ErrAgentAddOnForbidden
		refusedSets["addOns=[{configName: no-such-addon}]"] = "no matching HubAddOn or AddOnConfig found for AddOn"
	}
	for arg, reason := range refusedSets {
		r := spoke(t, "set", "rules", arg)
		assert.Check(t, is.Equal(r.ExitCode, 1), "%s: %s", arg, r)
		assert.Check(t, is.Contains(r.Stderr, "error: changing Spoke "+releaseNamespace+"/rules: admission webhook"), "%s: %s", arg, r)
		assert.Check(t, is.Contains(r.Stderr, reason), "%s: %s", arg, r)
		assert.Check(t, is.Contains(r.Stderr, "; nothing was changed"), "%s: %s", arg, r)
		assert.Check(t, is.DeepEqual(written(), agentAddOns()), "%s changed nothing", arg)
	}

	r = spoke(t, "add", fleetconfig.HubAsSpokeName, "--spoke-kubeconfig", spoke1.Kubeconfig, "--apply")
	assert.Check(t, is.Equal(r.ExitCode, 3), r)
	assert.Check(t, is.Contains(r.Stderr, "hub-as-spoke is the name FleetConfig gives the hub's own cluster"), r)

	r = spoke(t, "remove", "rules", "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)

	withAgent := func(spec map[string]any) { spec["addOns"] = []any{map[string]any{"configName": fleet.AgentAddOn}} }
	noAddOns := func(spec map[string]any) { delete(spec, "addOns") }
	inCluster := func(spec map[string]any) { spec["kubeconfig"] = map[string]any{"inCluster": true} }
	type refusal struct {
		name   string
		spoke  *unstructured.Unstructured
		reason string
	}
	refused := []refusal{
		{"both kubeconfig sources", newSpoke("both", func(spec map[string]any) {
			spec["kubeconfig"].(map[string]any)["inCluster"] = true
		}), "either secretReference or inCluster can be specified for the kubeconfig, not both"},
		{"hosted without the managed cluster's kubeconfig", newSpoke("hosted", func(spec map[string]any) {
			spec["klusterlet"] = map[string]any{"mode": "Hosted"}
		}), "managedClusterKubeconfig.secretReference is required in hosted mode"},
		{"an add-on the hub does not have", newSpoke("unknown-addon", func(spec map[string]any) {
			spec["addOns"] = append(agentAddOns(), map[string]any{"configName": "no-such-addon"})
		}), "no matching HubAddOn or AddOnConfig found for AddOn"},
		{"the agent add-on on hub-as-spoke", newSpoke("hub-as-spoke", func(spec map[string]any) { inCluster(spec); withAgent(spec) }), fleet.ErrAgentAddOnForbidden},
	}
	accepted := []*unstructured.Unstructured{newSpoke("hub-as-spoke", func(spec map[string]any) { inCluster(spec); noAddOns(spec) })}
	switch mode {
	case fleet.ModeAddon:
		refused = append(refused, refusal{"no agent add-on", newSpoke("no-agent", noAddOns), fleet.ErrAgentAddOnMissing})
		accepted = append(accepted, newSpoke("with-agent", withAgent))
	case fleet.ModeUnified:
		refused = append(refused, refusal{"the agent add-on", newSpoke("with-agent", withAgent), fleet.ErrAgentAddOnForbidden})
		accepted = append(accepted, newSpoke("no-agent", noAddOns))
	}
	for _, tc := range refused {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			out, code := kubectlApply(t, tc.spoke)
			assert.Equal(t, code, 1, out)
			assert.Check(t, is.Contains(out, tc.reason))
			assert.Check(t, spokeObject(t, tc.spoke.GetName()) == nil, "nothing was created")
		})
	}
	for _, s := range accepted {
		t.Run("accepted: "+s.GetName(), func(t *testing.T) {
			out, code := kubectlApply(t, s, "--dry-run=server")
			assert.Equal(t, code, 0, out)
		})
	}
}

func TestWebhookRefusesImmutableChange(t *testing.T) {
	createSpoke(t, "immutable", spoke1, nil)
	waitSpoke(t, "immutable", "Running", func(u *unstructured.Unstructured) bool {
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		return phase == "Running"
	})
	spokes := hub.Dynamic.Resource(fleetconfig.SpokeResource).Namespace(releaseNamespace)
	for _, patch := range []string{
		`{"spec":{"hubRef":{"name":"other-hub"}}}`,
		`{"spec":{"klusterlet":{"featureGates":"AddonManagement=true,ClusterClaim=true,RawFeedbackJsonString=true"}}}`,
		`{"spec":{"createNamespace":false}}`,
	} {
		_, err := spokes.Patch(ctx(t), "immutable", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		assert.ErrorContains(t, err, fleet.ErrAllowedSpokeUpdate, patch)
		assert.Check(t, apierrors.IsForbidden(err), "%s: %v", patch, err)
	}
	// The plugin refuses such a change itself, before the webhook would.
	r := spoke(t, "set", "immutable", "hubRef.name=other-hub")
	assert.Equal(t, r.ExitCode, 3, r)
	// The allow-list, through the plugin: timeout, log verbosity, the cleanup config.
	r = spoke(t, "set", "immutable", "timeout=120", "logVerbosity=2", "cleanupConfig.forceClusterDrain=true")
	assert.Equal(t, r.ExitCode, 0, r)
	spec, _, _ := unstructured.NestedMap(spokeObject(t, "immutable").Object, "spec")
	assert.Check(t, is.Equal(spec["timeout"], int64(120)), "%v", spec)
	assert.Check(t, is.Equal(spec["logVerbosity"], int64(2)), "%v", spec)
	hubRef, _, _ := unstructured.NestedString(spec, "hubRef", "name")
	assert.Check(t, is.Equal(hubRef, "hub"))
	assert.NilError(t, spokes.Delete(ctx(t), "immutable", metav1.DeleteOptions{}))
	waitSpoke(t, "immutable", "gone", func(u *unstructured.Unstructured) bool { return u == nil })
	waitManagedClusterGone(t, "immutable")
}

// waitPurged waits until the hub deleted the kubeconfig Secret of Spoke name.
func waitPurged(t *testing.T, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx(t), 300*time.Millisecond, 2*time.Minute, true, func(cx context.Context) (bool, error) {
		return secretKubeconfigIn(cx, t, name+"-kubeconfig") == nil, nil
	})
	assert.NilError(t, err, "the kubeconfig Secret is purged after the pivot")
}

// purgedSpoke creates a Spoke of cluster c with
// cleanupConfig.purgeKubeconfigSecret and waits until it pivoted and is
// available and, in addon mode, until the hub deleted its kubeconfig Secret.
func purgedSpoke(t *testing.T, name string, c *harness.Cluster) {
	t.Helper()
	createSpoke(t, name, c, func(spec map[string]any) {
		spec["cleanupConfig"] = map[string]any{"purgeKubeconfigSecret": true}
	})
	waitSpoke(t, name, "PivotComplete", pivoted)
	waitAvailable(t, name)
	if mode == fleet.ModeAddon {
		waitPurged(t, name)
	}
}

// A spoke added with --purge-kubeconfig-secret, through the plugin. In
// addon mode the hub deletes the kubeconfig Secret once the spoke's agent
// has taken over: status says so, and remove --wait needs no Secret (the
// agent unjoins the spoke with its own credential). In unified mode the
// option does nothing (the hub needs the Secret to unjoin), and a Secret
// deleted anyway leaves the Spoke Running (unified mode does not dial the
// spoke after the join) but makes remove refuse, naming the add that
// stores it again; after that add, remove --wait unjoins the spoke.
func TestPurgeKubeconfigSecretAfterPivot(t *testing.T) {
	addAndJoin(t, "purged", spoke2, "--purge-kubeconfig-secret")
	waitSpoke(t, "purged", "PivotComplete", pivoted)
	if mode == fleet.ModeAddon {
		waitPurged(t, "purged")
		assert.Check(t, standin.AgentRunning("purged"))
		r := spoke(t, "status", "purged")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Regexp(`credential\s+purged: the agent on the spoke manages it`, r.Stdout), r)
	} else {
		// A reconcile after the pivot would have purged it.
		assert.NilError(t, standin.WaitReconcile(ctx(t), "purged"))
		assert.Check(t, secretExists(t, "purged"), "unified mode keeps the Secret")
		assert.NilError(t, hub.Kube.CoreV1().Secrets(releaseNamespace).Delete(ctx(t), "purged-kubeconfig", metav1.DeleteOptions{}))
		assert.NilError(t, standin.WaitReconcile(ctx(t), "purged"))
		r := spoke(t, "get", "purged")
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, is.Regexp(`(?m)^purged\s+Running\s`, r.Stdout), "Running without the Secret: %s", r)

		r = spoke(t, "remove", "purged", "--wait", "--timeout", "2m")
		assert.Equal(t, r.ExitCode, 3, r)
		assert.Check(t, is.Contains(r.Stderr, "the hub unjoins spoke purged itself, with its stored kubeconfig, and cannot use it"), r)
		assert.Check(t, is.Contains(r.Stderr, "store one with kubectl spoke add purged --spoke-kubeconfig FILE"), r)
		assert.Check(t, spokeObject(t, "purged") != nil, "remove changed nothing")

		r = spoke(t, "add", "purged", "--spoke-kubeconfig", spoke2.Kubeconfig)
		assert.Equal(t, r.ExitCode, 0, r)
		assert.Check(t, secretExists(t, "purged"), "add stored the Secret again")
	}

	r := spoke(t, "remove", "purged", "--wait", "--timeout", "2m")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, spokeObject(t, "purged") == nil)
	waitManagedClusterGone(t, "purged")
	_, err := spoke2.Kube.CoreV1().Secrets("open-cluster-management-agent").Get(ctx(t), "hub-kubeconfig-purged", metav1.GetOptions{})
	assert.Check(t, apierrors.IsNotFound(err), "the klusterlet's hub credential left the spoke: %v", err)
}

// A Spoke deleted before it ever joined goes at once in addon mode: no
// spoke-side finalizer was ever added, so there is nothing to unjoin and no
// deletion step fails and waits for the controller's retry. The plugin's
// remove --wait sees it go; every state the Spoke passes through on the way
// is watched, and none says a step failed.
func TestNeverJoinedSpokeDeletedAtOnce(t *testing.T) {
	if mode != fleet.ModeAddon {
		t.Skip("addon mode: in unified mode the hub adds spoke-cleanup up front and must unjoin")
	}
	s := newSpoke("never-joined", nil)
	spokes := hub.Dynamic.Resource(fleetconfig.SpokeResource).Namespace(releaseNamespace)
	_, err := spokes.Create(ctx(t), s, metav1.CreateOptions{})
	assert.NilError(t, err)
	waitSpoke(t, "never-joined", "hub finalizers", func(u *unstructured.Unstructured) bool {
		return u != nil && len(u.GetFinalizers()) == 2 && !strings.Contains(strings.Join(u.GetFinalizers(), ","), "spoke-cleanup")
	})
	w, err := spokes.Watch(ctx(t), metav1.ListOptions{FieldSelector: "metadata.name=never-joined", ResourceVersion: spokeObject(t, "never-joined").GetResourceVersion()})
	assert.NilError(t, err)
	defer w.Stop()

	r := spoke(t, "remove", "never-joined", "--wait")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, !strings.Contains(r.Stderr, "retries"), "no step failed and waited for a retry: %s", r.Stderr)
	assert.Check(t, spokeObject(t, "never-joined") == nil)
	for ev := range w.ResultChan() {
		u, ok := ev.Object.(*unstructured.Unstructured)
		assert.Assert(t, ok, "watch event %s: %v", ev.Type, ev.Object)
		assert.Check(t, spokeCondition(u, fleetconfig.SpokeConditionCleanupFailed) != "True", "a deletion step failed: %v", u.Object["status"])
		if ev.Type == watch.Deleted {
			break
		}
	}
}

// waitManagedClusterGone waits for the ManagedCluster to go: the hub's
// finalizers hold it a moment after the Spoke went.
func waitManagedClusterGone(t *testing.T, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx(t), 300*time.Millisecond, 2*time.Minute, true, func(cx context.Context) (bool, error) {
		return managedClusterIn(cx, t, name) == nil, nil
	})
	assert.NilError(t, err, "ManagedCluster %s gone", name)
}
