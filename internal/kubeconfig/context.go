package kubeconfig

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// A Spoke's spec.kubeconfig.context names the context of its stored
// kubeconfig that FleetConfig uses ("" the current one); what spokekit
// reads and writes for the Spoke must use the same.

// FromSecretContext is FromSecret for the kubeconfig's context named
// context ("" the current one). The chosen context becomes the current one
// before FromSecret checks and loads it, so nothing it refuses gets through.
func FromSecretContext(s *corev1.Secret, key, context string) (*Kubeconfig, error) {
	data, ok := s.Data[key]
	if context == "" || !ok {
		return FromSecret(s, key)
	}
	source := "secret " + s.Namespace + "/" + s.Name
	cfg, err := decode(data, "the data of "+source)
	if err != nil {
		return nil, err
	}
	if c, ok := cfg.Contexts[context]; !ok || c == nil {
		return nil, fmt.Errorf("%s has no context %q, which its spoke's spec.kubeconfig.context names", source, context)
	}
	cfg.CurrentContext = context
	if data, err = clientcmd.Write(*cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	chosen := s.DeepCopy()
	chosen.Data[key] = data
	return FromSecret(chosen, key)
}

// BytesAs is the minified kubeconfig with its one context named context
// ("" keeps its name), to store for a Spoke whose spec.kubeconfig.context
// names it.
func (k *Kubeconfig) BytesAs(context string) ([]byte, error) {
	if context == "" || context == k.Context {
		return k.Bytes()
	}
	c := k.config.DeepCopy()
	c.Contexts[context] = c.Contexts[k.Context]
	delete(c.Contexts, k.Context)
	c.CurrentContext = context
	return clientcmd.Write(*c)
}
