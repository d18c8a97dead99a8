package cli

import (
	"fmt"
	"sync"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	clientversion "k8s.io/client-go/pkg/version"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Factory gives every command of a plugin its clients, REST config and
// namespace from the one set of kubectl global flags. It builds only what a
// command asks for: kubectl's cmdutil.Factory would bring OpenAPI schemas,
// validation and every printer into each binary (see
// docs/performance.md).
type Factory struct {
	ConfigFlags *genericclioptions.ConfigFlags
	// matchServerVersion is kubectl's --match-server-version, checked once.
	matchServerVersion bool
	versionChecked     sync.Once
	versionErr         error
}

func newFactory(configFlags *genericclioptions.ConfigFlags) *Factory {
	return &Factory{ConfigFlags: configFlags}
}

func (f *Factory) addFlags(flags *pflag.FlagSet) {
	f.ConfigFlags.AddFlags(flags)
	flags.BoolVar(&f.matchServerVersion, "match-server-version", false, "Require server version to match client version")
}

// ToRESTConfig is the REST config the global flags select, with the plugins'
// request rate (clientrate).
func (f *Factory) ToRESTConfig() (*rest.Config, error) {
	if err := f.checkServerVersion(); err != nil {
		return nil, err
	}
	return f.ConfigFlags.ToRESTConfig()
}

// checkServerVersion does what kubectl does with --match-server-version:
// the server must report this client's version.
func (f *Factory) checkServerVersion() error {
	f.versionChecked.Do(func() {
		if !f.matchServerVersion {
			return
		}
		dc, err := f.ConfigFlags.ToDiscoveryClient()
		if err != nil {
			f.versionErr = err
			return
		}
		f.versionErr = discovery.MatchesServerVersion(clientversion.Get(), dc)
	})
	return f.versionErr
}

// ToRawKubeConfigLoader is the merged kubeconfig the global flags select.
func (f *Factory) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return f.ConfigFlags.ToRawKubeConfigLoader()
}

// ToDiscoveryClient is a discovery client cached on disk where kubectl
// caches it (--cache-dir).
func (f *Factory) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	if err := f.checkServerVersion(); err != nil {
		return nil, err
	}
	return f.ConfigFlags.ToDiscoveryClient()
}

// ToRESTMapper maps kinds and resources from the disk-cached discovery.
func (f *Factory) ToRESTMapper() (meta.RESTMapper, error) {
	if err := f.checkServerVersion(); err != nil {
		return nil, err
	}
	return f.ConfigFlags.ToRESTMapper()
}

// DynamicClient is a client for any resource.
func (f *Factory) DynamicClient() (dynamic.Interface, error) {
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the dynamic client: %w", err)
	}
	return c, nil
}

// KubernetesClientSet is the typed client of the built-in resources.
func (f *Factory) KubernetesClientSet() (*kubernetes.Clientset, error) {
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the client: %w", err)
	}
	return c, nil
}

// MetadataClient reads only the metadata of objects (names, labels): what
// completion needs, without decoding whole objects.
func (f *Factory) MetadataClient() (metadata.Interface, error) {
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	c, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the metadata client: %w", err)
	}
	return c, nil
}

// ForKubeconfig is a Factory of another cluster: the current context of the
// kubeconfig file at path, its requests wrapped as this one's are (request
// rate, the end of the run). A command that reads a second cluster (spoke
// prepare --revoke reads the hub) names it with a file flag.
func (f *Factory) ForKubeconfig(path string) *Factory {
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig = &path
	flags.WrapConfigFn = f.ConfigFlags.WrapConfigFn
	return newFactory(flags)
}
