package kubeconfig

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// MaxFileSize bounds a kubeconfig file read from the local disk. The
// kubeconfig of a spoke ends up in a Secret, and a Secret holds at most 1 MiB.
const MaxFileSize = 1 << 20

// readFile reads a kubeconfig file the user named: a regular file of at most
// MaxFileSize bytes. A device (/dev/zero), FIFO or socket would be read
// forever, or block the open itself.
func readFile(path string) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO without a writer returns at once instead
	// of waiting; for a regular file it changes nothing.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) //nolint:gosec // the kubeconfig the user named
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	defer f.Close() //nolint:errcheck // read only: closing loses nothing
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, not a regular file: give the path of a kubeconfig file", path, fileKind(info.Mode()))
	}
	tooBig := fmt.Errorf("%s is larger than %d bytes, the most a kubeconfig file may have here", path, MaxFileSize)
	if info.Size() > MaxFileSize {
		return nil, tooBig
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, tooBig
	}
	return data, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
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

// Load reads a kubeconfig file the user gave (relative paths resolved
// against it, the files it names inlined).
func Load(path string) (*Kubeconfig, error) {
	cfg, err := readUserFile(path)
	if err != nil {
		return nil, err
	}
	k, err := fromConfig(cfg, path)
	if err != nil {
		return nil, err
	}
	// The hub has none of the files a kubeconfig may point at.
	if err := clientcmdapi.FlattenConfig(k.config); err != nil {
		return nil, fmt.Errorf("%s: inlining the files it references: %w", path, err)
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
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		if errors.Is(err, clientcmd.ErrEmptyConfig) {
			return nil, fmt.Errorf("%s has no current context or cluster", path)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rc, nil
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
