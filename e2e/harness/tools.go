package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Tools are the binaries the tests run, built by `make e2e-tools` (control
// plane, kubectl, kwok) and `make build` (the plugins).
type Tools struct {
	// Bin holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler, kubectl, kwok and kwokctl.
	Bin string
	// Plugins holds kubectl-spoke, kubectl-fleetdrain, kubectl-park and
	// their kubectl_complete-* scripts.
	Plugins string
}

// ToolsFromEnv reads SPOKEKIT_TOOLS_BIN and SPOKEKIT_PLUGINS_BIN (the Makefile
// sets both) and checks every binary is there.
func ToolsFromEnv() (Tools, error) {
	t := Tools{Bin: os.Getenv("SPOKEKIT_TOOLS_BIN"), Plugins: os.Getenv("SPOKEKIT_PLUGINS_BIN")}
	if t.Bin == "" || t.Plugins == "" {
		return t, errors.New("SPOKEKIT_TOOLS_BIN and SPOKEKIT_PLUGINS_BIN must name the tool and plugin directories: run the end-to-end tests with `make e2e`")
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok", "kwokctl"} {
		if _, err := os.Stat(filepath.Join(t.Bin, name)); err != nil {
			return t, fmt.Errorf("tool %s missing (run `make e2e-tools`): %w", name, err)
		}
	}
	for _, name := range []string{"kubectl-spoke", "kubectl-fleetdrain", "kubectl-park"} {
		if _, err := os.Stat(filepath.Join(t.Plugins, name)); err != nil {
			return t, fmt.Errorf("plugin %s missing (run `make build`): %w", name, err)
		}
	}
	return t, nil
}

// Path is a PATH holding the plugins and the tools first, then the system
// directories (for sh), so plugin discovery finds exactly these binaries.
func (t Tools) Path() string {
	return t.Plugins + string(os.PathListSeparator) + t.Bin + string(os.PathListSeparator) + "/usr/local/bin:/usr/bin:/bin"
}

// Kwokctl runs kwokctl with the workdir and binaries of this test run.
func (t Tools) kwokctl(workdir string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(t.Bin, "kwokctl"), args...)
	cmd.Env = append(os.Environ(),
		"KWOK_WORKDIR="+workdir,
		"KWOK_RUNTIME=binary",
		"KWOK_KUBE_VERSION=v1.37.2",
		"KWOK_ETCD_BINARY="+filepath.Join(t.Bin, "etcd"),
		"KWOK_KUBE_APISERVER_BINARY="+filepath.Join(t.Bin, "kube-apiserver"),
		"KWOK_KUBE_CONTROLLER_MANAGER_BINARY="+filepath.Join(t.Bin, "kube-controller-manager"),
		"KWOK_KUBE_SCHEDULER_BINARY="+filepath.Join(t.Bin, "kube-scheduler"),
		"KWOK_CONTROLLER_BINARY="+filepath.Join(t.Bin, "kwok"),
		"KWOK_KUBECTL_BINARY="+filepath.Join(t.Bin, "kubectl"),
	)
	return cmd
}
