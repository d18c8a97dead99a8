package spoke

import (
	"context"

	"k8s.io/client-go/rest"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/kubeconfig"
)

// hubEndpoints are the addresses this hub is known at: the one this command
// reaches it at, and the Hub's spec.apiServer and spec.ca, which FleetConfig
// hands to the join (the address spokes reach it at).
func hubEndpoints(cfg *rest.Config, hub *fleetconfig.Hub) []kubeconfig.HubEndpoint {
	out := []kubeconfig.HubEndpoint{{Server: cfg.Host, CA: cfg.CAData}}
	if hub.Spec.APIServer != "" || hub.Spec.Ca != "" {
		out = append(out, kubeconfig.HubEndpoint{Server: hub.Spec.APIServer, CA: []byte(hub.Spec.Ca)})
	}
	return out
}

// refuseOtherHub refuses a cluster whose klusterlet is still registered with
// another hub: joining it here would point its one agent at this hub while
// the old hub still counts it as its own. The seed's way is to remove it
// from the old hub first. A registration that cannot be read refuses too.
func (o *AddOptions) refuseOtherHub(ctx context.Context, hub *fleetconfig.Hub) error {
	kc := o.Kubeconfig.kc
	reg, err := kc.RegisteredHub(ctx)
	if err != nil {
		return exitcode.RefusedErrorf("cannot tell whether %s is still registered with another hub: %w; nothing was changed", kc.Server, err)
	}
	if reg == nil {
		return nil
	}
	cfg, err := o.f.ToRESTConfig()
	if err != nil {
		return err
	}
	// A CA given as a file is compared by its content.
	cfg = rest.CopyConfig(cfg)
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return exitcode.RefusedErrorf("cannot tell whether %s is still registered with another hub: reading this hub's CA: %w; nothing was changed", kc.Server, err)
	}
	if reg.SameHub(hubEndpoints(cfg, hub)...) {
		return nil
	}
	return exitcode.RefusedErrorf("%s is still registered with another hub: its klusterlet's bootstrap kubeconfig (secret open-cluster-management-agent/bootstrap-hub-kubeconfig) names the hub at %s, which is neither this hub's address nor signed by its CA; nothing was changed: remove it from that hub first (there: kubectl spoke remove NAME), then add it here. If %s is this hub as the spokes reach it, set it as the Hub's spec.apiServer (kubectl patch hub %s -n %s --type merge -p '{\"spec\":{\"apiServer\":\"URL\"}}') and run this again",
		o.Name, reg.Server, reg.Server, hub.Name, hub.Namespace)
}
