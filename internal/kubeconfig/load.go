package kubeconfig

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/spokekit/spokekit/internal/clientrate"
	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/localfile"
)

// readFile reads a kubeconfig file the user named, or a file it names:
// bounded, regular files only (localfile.Read).
func readFile(path string) ([]byte, error) {
	data, _, err := localfile.Read(path, localfile.MaxSize)
	return data, err
}

// decode is the one place a kubeconfig's bytes are parsed. The decoder's
// message may quote the input, so it is never echoed.
func decode(data []byte, source string) (*clientcmdapi.Config, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("%s is not a kubeconfig", source)
	}
	return cfg, nil
}

// Load reads a kubeconfig file handed over for a spoke, to be stored in the
// hub's Secret. Its current context may name no local file: whatever a
// file holds (a key meant for something else: ~/.ssh/id_ed25519) would be
// copied into the Secret unseen, so each one is named and refused (exit 3)
// and nothing is read; the user inlines the ones they mean to hand over.
func Load(path string) (*Kubeconfig, error) {
	cfg, err := readUserFile(path)
	if err != nil {
		return nil, err
	}
	k, err := fromConfig(cfg, path)
	if err != nil {
		return nil, err
	}
	if files := fileParts(k.config); len(files) > 0 {
		return nil, exitcode.RefusedErrorf("refusing %s: %s. Its content goes into a Secret on the hub, and only data fields are taken from it, no file is read into it; "+
			"check that these files are the ones to hand over, then inline them with `kubectl config view --flatten --minify --kubeconfig %s > spoke.kubeconfig` and give that file",
			path, strings.Join(files, "; "), path)
	}
	return k, nil
}

// UserRESTConfig is a client configuration from a kubeconfig file the user
// names on the command line for a cluster of their own (park's
// --cluster-kubeconfig). It is the user's file like --kubeconfig, so it has
// kubectl's meaning in full: its current context, exec plugins and
// auth-providers, files it names.
func UserRESTConfig(path string) (*rest.Config, error) {
	cfg, err := readUserFile(path)
	if err != nil {
		return nil, err
	}
	if err := inlineFiles(cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		if errors.Is(err, clientcmd.ErrEmptyConfig) {
			return nil, fmt.Errorf("%s has no current context or cluster", path)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return clientrate.Set(rc), nil
}

// inlineFiles reads the files the kubeconfig names into their data fields,
// with the bounds of every local file (client-go would read them whole,
// and block on a FIFO).
func inlineFiles(cfg *clientcmdapi.Config) error {
	inline := func(path *string, data *[]byte) error {
		if *path == "" {
			return nil
		}
		b, err := readFile(*path)
		if err != nil {
			return err
		}
		*path, *data = "", b
		return nil
	}
	for _, c := range cfg.Clusters {
		if c == nil {
			continue
		}
		if err := inline(&c.CertificateAuthority, &c.CertificateAuthorityData); err != nil {
			return err
		}
	}
	for _, u := range cfg.AuthInfos {
		if u == nil {
			continue
		}
		if err := inline(&u.ClientCertificate, &u.ClientCertificateData); err != nil {
			return err
		}
		if err := inline(&u.ClientKey, &u.ClientKeyData); err != nil {
			return err
		}
		var token []byte
		if err := inline(&u.TokenFile, &token); err != nil {
			return err
		}
		if token != nil {
			u.Token = strings.TrimSpace(string(token))
		}
	}
	return nil
}

// readUserFile reads and decodes a kubeconfig file of the user's, its file
// references made relative to it, as kubectl does.
func readUserFile(path string) (*clientcmdapi.Config, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := decode(data, path)
	if err != nil {
		return nil, err
	}
	for _, c := range cfg.Clusters {
		c.LocationOfOrigin = path
	}
	for _, u := range cfg.AuthInfos {
		u.LocationOfOrigin = path
	}
	if err := clientcmd.ResolveLocalPaths(cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}
