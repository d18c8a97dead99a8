// Command ocm runs the Open Cluster Management components the end-to-end
// tests need, from the pinned upstream module, as one binary (a single link
// instead of five on a 2-core machine):
//
//	ocm registration controller            upstream `registration controller`
//	ocm registration webhook-server        upstream's ManagedCluster webhooks, see below
//	ocm placement controller               upstream `placement controller`
//	ocm work manager                       upstream `work manager` (ManifestWorkReplicaSets)
//	ocm addon manager                      upstream `addon manager` (add-on templates, install strategies)
//	ocm registration-operator agent        upstream `registration-operator agent` (registration and work agents)
//
// Every command except webhook-server is upstream's cobra command as it is.
// Upstream's webhook server binds a health port (:8000) and a metrics port
// (:8080) with no flag to move them, so two test runs on one machine would
// collide; webhook-server here starts the same webhooks with both turned off.
package main

import (
	"crypto/tls"
	goflag "flag"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	utilflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"
	"k8s.io/klog/v2"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ocmfeature "open-cluster-management.io/api/feature"
	"open-cluster-management.io/ocm/pkg/cmd/hub"
	"open-cluster-management.io/ocm/pkg/cmd/spoke"
	"open-cluster-management.io/ocm/pkg/features"
	webhookv1 "open-cluster-management.io/ocm/pkg/registration/webhook/v1"
	webhookv1beta2 "open-cluster-management.io/ocm/pkg/registration/webhook/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

func main() {
	pflag.CommandLine.SetNormalizeFunc(utilflag.WordSepNormalizeFunc)
	pflag.CommandLine.AddGoFlagSet(goflag.CommandLine)
	logs.AddFlags(pflag.CommandLine)
	logs.InitLogs()
	defer logs.FlushLogs()
	// What upstream's registration and work mains register before their commands.
	utilruntime.Must(features.HubMutableFeatureGate.Add(ocmfeature.DefaultHubRegistrationFeatureGates))
	utilruntime.Must(features.HubMutableFeatureGate.Add(ocmfeature.DefaultHubWorkFeatureGates))
	features.HubMutableFeatureGate.AddFlag(pflag.CommandLine)

	root := &cobra.Command{Use: "ocm", Short: "Open Cluster Management components for the end-to-end tests"}
	root.AddCommand(
		group("registration", hub.NewRegistrationController(), webhookServer()),
		group("placement", hub.NewPlacementController()),
		group("work", hub.NewWorkController()),
		group("addon", hub.NewAddonManager()),
		group("registration-operator", spoke.NewKlusterletAgentCmd()),
	)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func group(name string, cmds ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: name}
	c.AddCommand(cmds...)
	return c
}

// webhookServer serves upstream's ManagedCluster (defaulting: it sets a
// taint's timeAdded; validation) and ManagedClusterSetBinding webhooks.
func webhookServer() *cobra.Command {
	var port int
	var certDir string
	cmd := &cobra.Command{
		Use:   "webhook-server",
		Short: "Serve the registration webhooks (no health or metrics port)",
		RunE: func(*cobra.Command, []string) error {
			scheme := runtime.NewScheme()
			utilruntime.Must(clientgoscheme.AddToScheme(scheme))
			utilruntime.Must(clusterv1.Install(scheme))
			utilruntime.Must(webhookv1beta2.Install(scheme))
			ctrl.SetLogger(klog.Background())
			mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
				Scheme:                 scheme,
				HealthProbeBindAddress: "0",
				Metrics:                metricsserver.Options{BindAddress: "0"},
				WebhookServer: webhook.NewServer(webhook.Options{
					Host: "127.0.0.1", Port: port, CertDir: certDir,
					TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.MinVersion = tls.VersionTLS12 }},
				}),
			})
			if err != nil {
				return err
			}
			if err := (&webhookv1.ManagedClusterWebhook{}).Init(mgr); err != nil {
				return err
			}
			if err := (&webhookv1beta2.ManagedClusterSetBindingWebhook{}).Init(mgr); err != nil {
				return err
			}
			return mgr.Start(ctrl.SetupSignalHandler())
		},
	}
	cmd.Flags().IntVar(&port, "port", 9443, "Port the webhooks are served on (127.0.0.1).")
	cmd.Flags().StringVar(&certDir, "certdir", "", "Directory with tls.crt and tls.key.")
	return cmd
}
