package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Env is one test run's set of clusters, all under one kwok workdir.
type Env struct {
	Tools   Tools
	Workdir string

	mu       sync.Mutex
	clusters []*Cluster
	// fronts maps the address of a fault proxy to the cluster behind it.
	fronts    map[string]*Cluster
	processes []*Process
	failures  []error
	// ports reserved for components other than clusters, released at Close.
	ports []int
}

// reservePorts reserves n free ports until the Env closes.
func (e *Env) reservePorts(n int) ([]int, error) {
	ports, err := reservePorts(n)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.ports = append(e.ports, ports...)
	e.mu.Unlock()
	return ports, nil
}

// NewEnv prepares a workdir for a test run's clusters. Under
// SPOKEKIT_E2E_WORKDIR when set, so `make e2e` can sweep up the processes of
// a run that was killed before it could clean up.
func NewEnv() (*Env, error) {
	tools, err := ToolsFromEnv()
	if err != nil {
		return nil, err
	}
	parent := os.Getenv("SPOKEKIT_E2E_WORKDIR")
	if parent != "" {
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return nil, fmt.Errorf("creating the e2e workdir: %w", err)
		}
	}
	dir, err := os.MkdirTemp(parent, "run-")
	if err != nil {
		return nil, fmt.Errorf("creating the e2e workdir: %w", err)
	}
	return &Env{Tools: tools, Workdir: dir}, nil
}

// OpenEnv uses dir as the workdir and keeps it: for `make demo-up`, whose
// clusters outlive the process, and `make demo-down`, which removes them.
func OpenEnv(dir string) (*Env, error) {
	tools, err := ToolsFromEnv()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the workdir %s: %w", dir, err)
	}
	return &Env{Tools: tools, Workdir: dir}, nil
}

// DeleteAll deletes every cluster in the workdir, including those of an
// earlier process.
func (e *Env) DeleteAll(ctx context.Context) error {
	e.stopProcesses()
	e.killLeftProcesses()
	entries, err := os.ReadDir(filepath.Join(e.Workdir, "clusters"))
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, d := range entries {
		if err := e.run(ctx, d.Name(), "delete", "cluster", "--name", d.Name()); err != nil {
			return err
		}
	}
	e.mu.Lock()
	e.clusters = nil
	e.mu.Unlock()
	return nil
}

// Close deletes every cluster of the run and its workdir.
func (e *Env) Close() {
	e.stopProcesses()
	e.mu.Lock()
	clusters, ports := e.clusters, e.ports
	e.clusters, e.ports = nil, nil
	e.mu.Unlock()
	releasePorts(ports)
	for _, c := range clusters {
		if out, err := e.Tools.kwokctl(e.clusterDir(c.Name), "delete", "cluster", "--name", c.Name).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "deleting cluster %s: %v\n%s", c.Name, err, out)
		}
		releasePorts(c.ports)
	}
	_ = os.RemoveAll(e.Workdir)
}

// Cluster is one running control plane.
type Cluster struct {
	Name string
	// Kubeconfig is the path of an admin kubeconfig for the cluster, with
	// the context "kwok-<name>".
	Kubeconfig string
	Config     *rest.Config
	Kube       kubernetes.Interface
	Dynamic    dynamic.Interface
	env        *Env
	ports      []int
}

// Context is the kubeconfig context name of the cluster.
func (c *Cluster) Context() string { return "kwok-" + c.Name }

// StartCluster creates and starts a cluster and waits until it serves.
func (e *Env) StartCluster(ctx context.Context, name string, opts ...ClusterOption) (*Cluster, error) {
	var o clusterOptions
	for _, opt := range opts {
		opt(&o)
	}
	c := &Cluster{Name: name, Kubeconfig: filepath.Join(e.Workdir, name+".kubeconfig"), env: e}
	e.mu.Lock()
	e.clusters = append(e.clusters, c)
	e.mu.Unlock()
	// kwokctl also writes the context into --kubeconfig; point it at a scratch
	// file so the user's ~/.kube/config is never touched.
	scratch := filepath.Join(e.Workdir, "kwokctl-"+name+".kubeconfig")
	ports, err := reservePorts(6)
	if err != nil {
		return nil, err
	}
	c.ports = ports
	config := filepath.Join(e.Workdir, name+".kwokctl.yaml")
	if err := os.WriteFile(config, []byte(o.kwokctlConfig(ports)), 0o644); err != nil {
		return nil, err
	}
	args := []string{"create", "cluster", "--name", name, "--config", config, "--kubeconfig", scratch, "--wait", "5m"}
	if o.auditWrites {
		policy := filepath.Join(e.Workdir, name+".audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditWritesPolicy), 0o644); err != nil {
			return nil, err
		}
		args = append(args, "--kube-audit-policy", policy)
	}
	if err := e.run(ctx, name, args...); err != nil {
		return nil, fmt.Errorf("starting cluster %s: %w", name, err)
	}
	out, err := e.output(ctx, name, "get", "kubeconfig", "--name", name)
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig of cluster %s: %w", name, err)
	}
	if err := os.WriteFile(c.Kubeconfig, out, 0o600); err != nil {
		return nil, fmt.Errorf("writing the kubeconfig of cluster %s: %w", name, err)
	}
	if err := c.loadClients(); err != nil {
		return nil, err
	}
	if err := c.waitServing(ctx, 5*time.Minute); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cluster) loadClients() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return fmt.Errorf("loading the kubeconfig of cluster %s: %w", c.Name, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	c.Config = cfg
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return fmt.Errorf("client for cluster %s: %w", c.Name, err)
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return fmt.Errorf("dynamic client for cluster %s: %w", c.Name, err)
	}
	return nil
}

// componentSettle is how long a control-plane component must have run to be
// past its own wait for the API server: kube-controller-manager exits when
// the API server is not healthy within its first 10 s (on a loaded 2-core
// machine it took 20 s to give up), and kwokctl never restarts it.
var componentSettle = 30 * time.Second

// waitServing waits up to limit until the cluster serves: the default
// service account exists (pods in "default" need it) and every component
// runs and has run for componentSettle. A component that exited is started
// again, as a kubelet restarts a static pod: etcd and the API server at once,
// the others once the API server is ready (before that they would only exit
// again); `kwokctl start cluster` starts only the components not running.
func (c *Cluster) waitServing(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		err := c.serving(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster %s did not become ready: %w", c.Name, err)
		case <-time.After(time.Second):
		}
	}
}

// serving is nil when c serves (see waitServing), or says what it waits for.
func (c *Cluster) serving(ctx context.Context) error {
	var exited []string
	var newest time.Time
	waitsForAPIServer := false
	for _, comp := range c.env.components(c) {
		if !comp.running {
			exited = append(exited, comp.name)
			waitsForAPIServer = waitsForAPIServer || (comp.name != "etcd" && comp.name != "kube-apiserver")
		}
		if comp.started.After(newest) {
			newest = comp.started
		}
	}
	if len(exited) > 0 {
		// etcd and the API server start at once; the others only once the
		// API server is ready, or they give up again.
		if waitsForAPIServer && !slices.Contains(exited, "kube-apiserver") && !c.ready(ctx) {
			return fmt.Errorf("%s exited; the API server is not ready to start it again", strings.Join(exited, ", "))
		}
		fmt.Fprintf(os.Stderr, "cluster %s: %s exited; starting it again\n", c.Name, strings.Join(exited, ", "))
		if err := c.env.run(ctx, c.Name, "start", "cluster", "--name", c.Name); err != nil {
			return err
		}
		return fmt.Errorf("%s started again", strings.Join(exited, ", "))
	}
	if _, err := c.Kube.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1GetOptions); err != nil {
		return err
	}
	if since := time.Since(newest); since < componentSettle {
		return fmt.Errorf("a component started %s ago", since.Round(time.Second))
	}
	return nil
}

// ready says whether the API server reports itself ready (every post-start
// hook done), which is what the other components wait for at their start.
func (c *Cluster) ready(ctx context.Context) bool {
	_, err := c.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err == nil
}

// Stop stops the cluster's control plane: its API server no longer answers.
func (c *Cluster) Stop(ctx context.Context) error {
	if err := c.env.run(ctx, c.Name, "stop", "cluster", "--name", c.Name); err != nil {
		return fmt.Errorf("stopping cluster %s: %w", c.Name, err)
	}
	return nil
}

// Start starts a stopped cluster again and waits until it serves.
func (c *Cluster) Start(ctx context.Context) error {
	if err := c.env.run(ctx, c.Name, "start", "cluster", "--name", c.Name); err != nil {
		return fmt.Errorf("starting cluster %s: %w", c.Name, err)
	}
	return c.waitServing(ctx, 5*time.Minute)
}

// clusterDir is the kwok workdir of one cluster. Each cluster has its own, so
// clusters created in parallel never share (and race on) kwokctl's PKI.
func (e *Env) clusterDir(name string) string {
	return filepath.Join(e.Workdir, "clusters", name)
}

func (e *Env) run(ctx context.Context, cluster string, args ...string) error {
	_, err := e.output(ctx, cluster, args...)
	return err
}

func (e *Env) output(ctx context.Context, cluster string, args ...string) ([]byte, error) {
	cmd := e.Tools.kwokctl(e.clusterDir(cluster), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := runContext(ctx, cmd); err != nil {
		return nil, fmt.Errorf("kwokctl %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// runContext runs cmd, killing it when ctx ends.
func runContext(ctx context.Context, cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done //nolint:errcheck // killed: Wait can only say so
		return ctx.Err()
	}
}

// Env is the test run the cluster belongs to.
func (c *Cluster) Env() *Env { return c.env }

// StallAPIServer freezes the cluster's API server for d (SIGSTOP, then
// SIGCONT), as a machine too busy to schedule it would: requests hang
// instead of failing, and every client's deadline passes. Leases held by the
// cluster's components expire meanwhile.
func (c *Cluster) StallAPIServer(ctx context.Context, d time.Duration) error {
	pidFile := filepath.Join(c.env.clusterDir(c.Name), "clusters", c.Name, "pids", "kube-apiserver.pid")
	pid, err := readPid(pidFile)
	if err != nil {
		return fmt.Errorf("finding the API server of %s: %w", c.Name, err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("stopping the API server of %s: %w", c.Name, err)
	}
	// The stall is the fault itself, so it lasts its time: there is no
	// condition to wait for.
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("resuming the API server of %s: %w", c.Name, err)
	}
	return ctx.Err()
}

// reportStoppedComponents says on stderr which control-plane components of
// the run's clusters are no longer running, with the end of each one's log.
// kwokctl starts them once and never restarts one that exits, and a test
// then fails far from the cause (a CSR never signed, a pod never scheduled):
// this names the cause beside the failure. A cluster a test stopped on
// purpose shows here too.
func (e *Env) reportStoppedComponents() {
	e.mu.Lock()
	clusters := slices.Clone(e.clusters)
	e.mu.Unlock()
	for _, c := range clusters {
		for _, comp := range e.components(c) {
			if comp.running {
				continue
			}
			log := &Process{Log: filepath.Join(e.clusterDir(c.Name), "clusters", c.Name, "logs", comp.name+".log")}
			fmt.Fprintf(os.Stderr, "test bed: cluster %s: %s is not running; its log ends:\n%s\n", c.Name, comp.name, log.Tail(5))
		}
	}
}

// component is one control-plane process kwokctl started for a cluster.
type component struct {
	name    string
	running bool
	// started is when kwokctl last started it (it writes the pid file then).
	started time.Time
}

// components lists the control-plane components kwokctl started for c.
func (e *Env) components(c *Cluster) []component {
	pids, _ := filepath.Glob(filepath.Join(e.clusterDir(c.Name), "clusters", c.Name, "pids", "*.pid"))
	var comps []component
	for _, pidFile := range pids {
		info, err := os.Stat(pidFile)
		if err != nil {
			continue
		}
		pid, err := readPid(pidFile)
		if err != nil { // being written
			continue
		}
		comps = append(comps, component{
			name:    strings.TrimSuffix(filepath.Base(pidFile), ".pid"),
			running: syscall.Kill(pid, 0) == nil,
			started: info.ModTime(),
		})
	}
	return comps
}

// keepLogs moves the run's logs (the processes' and each cluster's
// components') out of the work directory, which Close deletes, into
// os.TempDir()/spokekit-e2e-failed/, keeping the newest five runs there, and
// says where. A failure in CI, which runs on the machine the next session
// gets back, can then be traced to its cause afterwards.
func (e *Env) keepLogs() {
	root := filepath.Join(os.TempDir(), "spokekit-e2e-failed")
	dest := filepath.Join(root, time.Now().UTC().Format("20060102-150405")+"-"+filepath.Base(e.Workdir))
	if err := os.MkdirAll(dest, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "test bed: keeping the logs: %v\n", err)
		return
	}
	e.mu.Lock()
	clusters := slices.Clone(e.clusters)
	e.mu.Unlock()
	moves := map[string]string{filepath.Join(e.Workdir, "logs"): filepath.Join(dest, "processes")}
	for _, c := range clusters {
		moves[filepath.Join(e.clusterDir(c.Name), "clusters", c.Name, "logs")] = filepath.Join(dest, "cluster-"+c.Name)
	}
	for from, to := range moves {
		if err := os.Rename(from, to); err != nil && !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "test bed: keeping %s: %v\n", from, err)
		}
	}
	fmt.Fprintf(os.Stderr, "test bed: the run failed; its logs are kept in %s\n", dest)
	runs, _ := os.ReadDir(root)
	for i := 0; i < len(runs)-5; i++ { // ReadDir sorts by name: oldest first
		_ = os.RemoveAll(filepath.Join(root, runs[i].Name()))
	}
}

// readPid reads a pid file kwokctl writes for each component it starts.
func readPid(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return pid, nil
}

// clusterAt is the cluster the harness started that serves server (a URL),
// directly or behind one of its fault proxies: what a component running
// inside that cluster would reach with its own ServiceAccount.
func (e *Env) clusterAt(server string) (*Cluster, error) {
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("parsing server %q: %w", server, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.fronts[u.Host]; c != nil {
		return c, nil
	}
	for _, c := range e.clusters {
		if c.Config == nil {
			continue
		}
		if h, err := url.Parse(c.Config.Host); err == nil && h.Host == u.Host {
			return c, nil
		}
	}
	return nil, fmt.Errorf("no cluster of this test run serves %s", server)
}
