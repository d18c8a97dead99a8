package spoke

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/exitcode"
)

// fleetMode is how the hub's FleetConfig controller runs.
type fleetMode string

const (
	// modeAddon is the chart's default (addonMode: true): the
	// fleetconfig-controller-agent add-on runs on every spoke but
	// hub-as-spoke, takes over from the hub once joined (PivotComplete) and
	// unjoins the spoke when its Spoke is deleted; the hub may then delete
	// the stored kubeconfig (cleanupConfig.purgeKubeconfigSecret).
	modeAddon fleetMode = "addon"
	// modeUnified is the hub doing everything with the stored kubeconfig.
	modeUnified fleetMode = "unified"
)

// readFleetMode reads the mode from the hub: addon mode registers the agent
// add-on's ClusterManagementAddOn. Any other failure than its absence
// refuses (exit 3): a guess would write a Spoke the FleetConfig webhook
// rejects, or one without the agent that unjoins it.
func (h *HubClient) readFleetMode(ctx context.Context) (fleetMode, error) {
	addon, err := h.HasClusterManagementAddOn(ctx, fleetconfig.AgentAddOn)
	switch {
	case err == nil && addon:
		return modeAddon, nil
	case err == nil:
		return modeUnified, nil
	}
	return "", exitcode.RefusedErrorf("cannot tell whether the hub's FleetConfig controller runs in addon mode (reading ClusterManagementAddOn %s: %w); nothing was changed: a Spoke must list the agent add-on in addon mode and must not in unified mode",
		fleetconfig.AgentAddOn, err)
}

// agentAddOns are the add-ons a new remote Spoke lists in mode m.
func agentAddOns(m fleetMode) []string {
	if m == modeAddon {
		return []string{fleetconfig.AgentAddOn}
	}
	return nil
}

// checkAddOns refuses a Spoke whose add-ons do not fit the mode, by the
// FleetConfig webhook's rule: in addon mode every Spoke but hub-as-spoke
// lists the agent add-on; hub-as-spoke and unified-mode Spokes do not.
func checkAddOns(s *fleetconfig.Spoke, m fleetMode) error {
	lists := listsAgent(s)
	switch {
	case m == modeAddon && !s.IsHubAsSpoke() && !lists:
		return fmt.Errorf("the hub runs FleetConfig in addon mode, where every spoke but hub-as-spoke must list addOns: [{configName: %s}], and spoke %s does not", fleetconfig.AgentAddOn, s.Name)
	case lists && s.IsHubAsSpoke():
		return fmt.Errorf("spoke %s is hub-as-spoke, which must not list the %s add-on", s.Name, fleetconfig.AgentAddOn)
	case lists && m == modeUnified:
		return fmt.Errorf("the hub runs FleetConfig in unified mode (no %s ClusterManagementAddOn), where no spoke may list that add-on, and spoke %s does", fleetconfig.AgentAddOn, s.Name)
	}
	return nil
}

// chartSpokeFeatureGates is the chart's default fleetConfig.spokeFeatureGates.
var chartSpokeFeatureGates = map[string]any{"ClusterClaim": true, "RawFeedbackJsonString": true}

// featureGates renders spokeFeatureGates as the chart does into
// klusterlet.featureGates: NAME=true|false, sorted by name, joined by
// commas. The field cannot change once the Spoke exists, so a Spoke made
// with other gates would make the next helm upgrade fail.
func featureGates(gates map[string]any) (string, error) {
	names := make([]string, 0, len(gates))
	for n := range gates {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, n := range names {
		b, ok := gates[n].(bool)
		if !ok {
			return "", fmt.Errorf("spokeFeatureGates.%s is %v, not true or false", n, gates[n])
		}
		out = append(out, fmt.Sprintf("%s=%t", n, b))
	}
	return strings.Join(out, ","), nil
}
