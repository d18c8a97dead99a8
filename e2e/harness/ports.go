package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// kwokctl scans for free ports downward from the same number in every
// process, so clusters created at once (by parallel test packages) would pick
// the same ones; and a stopped cluster's ports look free to the next. The
// harness picks random ports instead and reserves each with a file created
// exclusively in a machine-wide directory until the cluster is deleted.
var portDir = filepath.Join(os.TempDir(), "spokekit-ports")

// The range stays below 19000 and 20000-30000, which Cluster API's in-memory
// provider takes for its simulated workload API servers, and below the
// kernel's ephemeral ports.
const (
	portMin   = 10000
	portRange = 9000
)

// reservePorts reserves n free TCP ports on the loopback interface.
func reservePorts(n int) ([]int, error) {
	if err := os.MkdirAll(portDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", portDir, err)
	}
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			releasePorts(ports)
			return nil, fmt.Errorf("no free ports found in %d-%d", portMin, portMin+portRange)
		}
		p := portMin + rand.IntN(portRange)
		f, err := os.OpenFile(filepath.Join(portDir, strconv.Itoa(p)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			continue
		}
		_ = f.Close()
		if !portFree(p) {
			releasePorts([]int{p})
			continue
		}
		ports = append(ports, p)
	}
	return ports, nil
}

func releasePorts(ports []int) {
	for _, p := range ports {
		_ = os.Remove(filepath.Join(portDir, strconv.Itoa(p)))
	}
}

func portFree(p int) bool {
	for _, host := range []string{"127.0.0.1", ""} {
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			return false
		}
		_ = l.Close()
	}
	return true
}

// kwokctlConfig is a kwokctl configuration that pins every port the binary
// runtime opens, and names sans in the API server's certificate.
func kwokctlConfig(ports []int, sans []string) string {
	config := fmt.Sprintf(`apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  etcdPeerPort: %d
  etcdPort: %d
  kubeApiserverPort: %d
  kwokControllerPort: %d
  kubeControllerManagerPort: %d
  kubeSchedulerPort: %d
`, ports[0], ports[1], ports[2], ports[3], ports[4], ports[5])
	if len(sans) > 0 {
		config += "  kubeApiserverCertSANs: [" + strings.Join(sans, ", ") + "]\n"
	}
	return config
}

// lockMachineWide takes the machine-wide lock called name (a file beside the
// reserved ports), waiting while another test process holds it: for what
// listens on fixed ports, which two runs at once would both want. Closing
// the file, or the process's exit, releases it.
func lockMachineWide(ctx context.Context, name, why string) (*os.File, error) {
	if err := os.MkdirAll(portDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", portDir, err)
	}
	path := filepath.Join(portDir, name+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	told := false
	err = waitFor(ctx, "the machine-wide lock "+path, func(context.Context) (bool, error) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			if !told {
				fmt.Fprintf(os.Stderr, "waiting for another test process on this machine to release %s (%s)\n", path, why)
				told = true
			}
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}
