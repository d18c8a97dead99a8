package harness

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// capiClusters are Cluster API's Clusters, as the harness reads them.
var capiClusters = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}

// CAPITestModule holds Cluster API's Docker provider, whose in-memory backend
// simulates each workload cluster's API server and etcd in process.
const CAPITestModule = "sigs.k8s.io/cluster-api/test@v1.14.2"

// A capiManager is one Cluster API manager: its binary (built by
// hack/tools/build.sh from e2e/tools/cluster-api) and the config/ directory of
// its module that holds its CRDs and webhook configurations.
type capiManager struct {
	name, module, config string
	env                  []string
}

var capiManagers = []capiManager{
	{name: "capi-core", module: CAPIModule, config: "core/config"},
	{name: "capi-kubeadm-bootstrap", module: CAPIModule, config: "bootstrap/kubeadm/config"},
	{name: "capi-kubeadm-control-plane", module: CAPIModule, config: "controlplane/kubeadm/config"},
	// The simulated workload API servers listen on POD_IP, on ports the
	// provider picks from 20000-30000 (and 19000 for debugging), which no
	// flag changes: one provider process per machine (StartClusterAPI takes
	// a machine-wide lock for it).
	{name: "capi-docker", module: CAPITestModule, config: "infrastructure/docker/config", env: []string{"POD_IP=127.0.0.1"}},
}

// ClusterAPI is Cluster API's managers running as local processes against a
// platform cluster, their webhooks served on 127.0.0.1.
type ClusterAPI struct {
	// Dir holds the serving certificate and each manager's log.
	Dir      string
	platform *Cluster
	procs    []*Process
	ports    []int
	// lock is the machine-wide one of the in-memory provider's fixed ports.
	lock *os.File
}

// Stop stops the managers and lets another test process on this machine
// start its own (their ports are released when the Env closes).
func (a *ClusterAPI) Stop() {
	for _, p := range a.procs {
		if p != nil {
			p.Stop()
		}
	}
	_ = a.lock.Close() // closing the file releases the lock
}

// InstallClusterAPICRDs installs only Cluster API's core CRDs, without their
// conversion webhooks and with no controller: for a benchmark that counts
// one command's writes to Clusters nothing else acts on.
func (c *Cluster) InstallClusterAPICRDs(ctx context.Context) error {
	files, err := ModuleGlob(ctx, CAPIModule, "core/config/crd/bases/*.yaml")
	if err != nil {
		return err
	}
	return c.InstallCRDs(ctx, files...)
}

// StartClusterAPI installs Cluster API's CRDs and webhook configurations
// into the platform cluster, starts the core, kubeadm bootstrap, kubeadm
// control plane and Docker (in-memory) managers, and waits until each is
// ready. They stop when the Env closes.
func (c *Cluster) StartClusterAPI(ctx context.Context) (_ *ClusterAPI, err error) {
	for _, m := range capiManagers {
		if _, err := os.Stat(filepath.Join(c.env.Tools.Bin, m.name)); err != nil {
			return nil, fmt.Errorf("tool %s missing (run `make e2e-tools`): %w", m.name, err)
		}
	}
	// A second process's provider would fail to listen (hack/e2e.sh runs
	// e2e/fleetdrain and e2e/park at once): it waits instead.
	lock, err := lockMachineWide(ctx, "capi-docker", "Cluster API's in-memory provider listens on fixed ports 19000 and 20000-30000")
	if err != nil {
		return nil, err
	}
	a := &ClusterAPI{Dir: filepath.Join(c.env.Workdir, "cluster-api"), platform: c, lock: lock}
	defer func() {
		if err != nil {
			a.Stop()
		}
	}()
	caPEM, err := writeServingCert(filepath.Join(a.Dir, "certs"))
	if err != nil {
		return nil, err
	}
	// Per manager: webhook, health and diagnostics (metrics) ports.
	if a.ports, err = c.env.reservePorts(3 * len(capiManagers)); err != nil {
		return nil, err
	}
	for i, m := range capiManagers {
		if err := a.install(ctx, m, a.ports[3*i], caPEM); err != nil {
			return nil, err
		}
	}
	a.procs = make([]*Process, len(capiManagers))
	for i := range capiManagers {
		if err := a.start(i); err != nil {
			return nil, err
		}
	}
	for i := range capiManagers {
		if err := a.waitReady(ctx, i); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// install applies a manager's CRDs (kustomized, as its release does) and
// webhook configurations, pointed at url https://127.0.0.1:port.
func (a *ClusterAPI) install(ctx context.Context, m capiManager, port int, caPEM []byte) error {
	dirs, err := ModuleFiles(ctx, m.module, []string{m.config})
	if err != nil {
		return err
	}
	config := dirs[0]
	crds, err := a.kustomize(ctx, filepath.Join(config, "crd"))
	if err != nil {
		return err
	}
	webhooks, err := os.ReadFile(filepath.Join(config, "webhook", "manifests.yaml"))
	if err != nil {
		return err
	}
	objs, err := decodeYAMLObjects(bytes.NewReader(append(append(crds, "\n---\n"...), webhooks...)))
	if err != nil {
		return fmt.Errorf("reading the manifests of %s: %w", m.name, err)
	}
	var crdDocs, webhookObjs []*unstructured.Unstructured
	for _, o := range objs {
		if err := pointAt(o, port, caPEM); err != nil {
			return fmt.Errorf("%s %s of %s: %w", o.GetKind(), o.GetName(), m.name, err)
		}
		switch o.GetKind() {
		case "CustomResourceDefinition":
			crdDocs = append(crdDocs, o)
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			// Every provider names its configurations alike.
			o.SetName(m.name + "-" + o.GetName())
			webhookObjs = append(webhookObjs, o)
		}
	}
	file := filepath.Join(a.Dir, m.name+"-crds.yaml")
	if err := writeYAML(file, crdDocs); err != nil {
		return err
	}
	if err := a.platform.InstallCRDs(ctx, file); err != nil {
		return err
	}
	for _, o := range webhookObjs {
		if err := a.platform.Apply(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// kustomize builds a kustomization with the pinned kubectl.
func (a *ClusterAPI) kustomize(ctx context.Context, dir string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(a.platform.env.Tools.Bin, "kubectl"), "kustomize", dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := runContext(ctx, cmd); err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w\n%s", dir, err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// pointAt replaces every in-cluster service reference of a CRD's conversion
// webhook or of a webhook configuration with the local URL and the CA.
func pointAt(o *unstructured.Unstructured, port int, caPEM []byte) error {
	point := func(cc map[string]any) {
		svc, ok := cc["service"].(map[string]any)
		if !ok {
			return
		}
		path, _ := svc["path"].(string)
		delete(cc, "service")
		cc["url"] = fmt.Sprintf("https://127.0.0.1:%d%s", port, path)
		cc["caBundle"] = base64.StdEncoding.EncodeToString(caPEM)
	}
	switch o.GetKind() {
	case "CustomResourceDefinition":
		cc, found, err := unstructured.NestedMap(o.Object, "spec", "conversion", "webhook", "clientConfig")
		if err != nil || !found {
			return err
		}
		point(cc)
		return unstructured.SetNestedField(o.Object, cc, "spec", "conversion", "webhook", "clientConfig")
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		hooks, _, err := unstructured.NestedSlice(o.Object, "webhooks")
		if err != nil {
			return err
		}
		for _, h := range hooks {
			if hm, ok := h.(map[string]any); ok {
				if cc, ok := hm["clientConfig"].(map[string]any); ok {
					point(cc)
				}
			}
		}
		return unstructured.SetNestedSlice(o.Object, hooks, "webhooks")
	}
	return nil
}

// start runs manager i with its ports: webhook, health, diagnostics.
func (a *ClusterAPI) start(i int) error {
	m, ports := capiManagers[i], a.ports[3*i:3*i+3]
	p, err := a.platform.env.StartProcess(m.name, m.env, filepath.Join(a.platform.env.Tools.Bin, m.name),
		"--kubeconfig="+a.platform.Kubeconfig,
		"--leader-elect=false",
		"--feature-gates=ClusterTopology=true",
		"--webhook-cert-dir="+filepath.Join(a.Dir, "certs"),
		fmt.Sprintf("--webhook-port=%d", ports[0]),
		fmt.Sprintf("--health-addr=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("--diagnostics-address=127.0.0.1:%d", ports[2]),
		"--insecure-diagnostics",
	)
	a.procs[i] = p
	return err
}

// waitReady waits until manager i answers /readyz (its webhook server is
// serving then).
func (a *ClusterAPI) waitReady(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", a.ports[3*i+1])
	err := waitFor(ctx, capiManagers[i].name+" to be ready", func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close() // the status is all that is read
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("%w; the end of %s:\n%s", err, a.procs[i].Log, a.procs[i].Tail(20))
	}
	return nil
}

// PointWorkload makes a Cluster's NAME-kubeconfig Secret hold the kubeconfig
// in path and restarts the core manager, whose cluster cache then connects
// there: to move a workload cluster to another API server. The restart
// stops the shared webhooks for about a second, so only tests that run
// alone (not t.Parallel) may call it.
func (a *ClusterAPI) PointWorkload(ctx context.Context, ns, cluster, path string) error {
	if err := a.writeWorkloadKubeconfig(ctx, ns, cluster, path); err != nil {
		return err
	}
	return a.Restart(ctx, "capi-core")
}

// writeWorkloadKubeconfig makes a Cluster's NAME-kubeconfig Secret hold the
// kubeconfig in path, flattened: a Secret names no local files.
func (a *ClusterAPI) writeWorkloadKubeconfig(ctx context.Context, ns, cluster, path string) error {
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return err
	}
	if err := clientcmdapi.FlattenConfig(kc); err != nil {
		return err
	}
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	secrets := a.platform.Kube.CoreV1().Secrets(ns)
	secret, err := secrets.Get(ctx, cluster+"-kubeconfig", metav1.GetOptions{})
	if err != nil {
		return err
	}
	secret.Data["value"] = data
	_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{})
	return err
}

// WorkloadThroughProxy puts a fault proxy in front of a Cluster's workload
// API server and points the Cluster's kubeconfig Secret at it, so the
// plugins reach the workload cluster through it. The core manager is not
// restarted: parallel tests share its webhooks, and a restart refused
// their writes (2026-12-05); its cluster cache keeps the connection it has,
// which a fault aimed at the plugins' user agent would not touch anyway.
func (a *ClusterAPI) WorkloadThroughProxy(ctx context.Context, ns, cluster string) (*FaultProxy, error) {
	secret, err := a.platform.Kube.CoreV1().Secrets(ns).Get(ctx, cluster+"-kubeconfig", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	path := filepath.Join(a.Dir, ns+"-"+cluster+".kubeconfig")
	if err := os.WriteFile(path, secret.Data["value"], 0o600); err != nil {
		return nil, err
	}
	workload, err := clusterFromKubeconfig(cluster, path)
	if err != nil {
		return nil, err
	}
	workload.env = a.platform.env
	proxy, err := workload.StartFaultProxy(ctx)
	if err != nil {
		return nil, err
	}
	return proxy, a.writeWorkloadKubeconfig(ctx, ns, cluster, proxy.Kubeconfig)
}

// MoveToTenant gives a Cluster a workload API server that serves what
// Cluster API's simulated one does not: pods and their eviction,
// PersistentVolumeClaims, CertificateSigningRequests. It registers the
// Cluster's nodes in tenant (same names, labels and provider IDs, annotated
// so that the tenant's kwok plays their kubelets), points the Cluster's
// kubeconfig Secret there, restarts the core manager so that its cluster
// cache connects there, and waits until the Machine controller has
// annotated every node. Topology, MachineSets, Machines, drains and health
// checks stay the real controllers'; only the workload API server changes,
// so nodes of Machines made later appear in the simulated server only.
func (a *ClusterAPI) MoveToTenant(ctx context.Context, ns, cluster string, tenant *Cluster) error {
	secret, err := a.platform.Kube.CoreV1().Secrets(ns).Get(ctx, cluster+"-kubeconfig", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the kubeconfig of Cluster %s/%s: %w", ns, cluster, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["value"])
	if err != nil {
		return fmt.Errorf("the kubeconfig of Cluster %s/%s: %w", ns, cluster, err)
	}
	simulated, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	nodes, err := simulated.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the nodes of Cluster %s/%s: %w", ns, cluster, err)
	}
	if len(nodes.Items) == 0 {
		return fmt.Errorf("cluster %s/%s has no nodes to move", ns, cluster)
	}
	for _, n := range nodes.Items {
		_, err := tenant.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
			Spec:       corev1.NodeSpec{ProviderID: n.Spec.ProviderID},
			// A node's status may be set on create; kwok keeps the kubelet
			// version, which the control plane's controller parses.
			Status: corev1.NodeStatus{NodeInfo: n.Status.NodeInfo},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("registering node %s in %s: %w", n.Name, tenant.Name, err)
		}
	}
	if err := a.PointWorkload(ctx, ns, cluster, tenant.Kubeconfig); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	return waitFor(ctx, "Cluster API's Machine controller to reach the nodes of "+cluster+" in "+tenant.Name, func(ctx context.Context) (bool, error) {
		for _, n := range nodes.Items {
			node, err := tenant.Kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil || node.Annotations["cluster.x-k8s.io/machine"] == "" {
				return false, nil
			}
		}
		return true, nil
	})
}

// Restart stops and starts one manager (by binary name) and waits until it is
// ready again: it then reads every cluster's kubeconfig Secret anew.
func (a *ClusterAPI) Restart(ctx context.Context, name string) error {
	for i, m := range capiManagers {
		if m.name != name {
			continue
		}
		a.procs[i].Stop()
		if err := a.start(i); err != nil {
			return err
		}
		return a.waitReady(ctx, i)
	}
	return fmt.Errorf("no Cluster API manager %q", name)
}

func writeYAML(path string, objs []*unstructured.Unstructured) error {
	var docs []string
	for _, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return err
		}
		docs = append(docs, string(data))
	}
	if len(docs) == 0 {
		return errors.New("no objects to write to " + path)
	}
	return os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o644)
}

// InstallInMemoryClass applies Cluster API's own ClusterClass for the
// in-memory provider (kubeadm control plane, one worker class
// "default-worker", DevMachines), from its module, into ns under the given
// name, with workerAnnotations on its worker class. The simulated machines
// start in 3 s instead of the template's 10 s, to keep runs short, and the
// class's health checks wait healthCheckPatience instead of 5 minutes.
func (c *Cluster) InstallInMemoryClass(ctx context.Context, ns, name string, workerAnnotations map[string]string) error {
	files, err := ModuleFiles(ctx, CAPITestModule, []string{"infrastructure/docker/templates/clusterclass-in-memory.yaml"})
	if err != nil {
		return err
	}
	objs, err := readYAMLObjects(files[0])
	if err != nil {
		return err
	}
	for _, o := range objs {
		o.SetNamespace(ns)
		switch o.GetKind() {
		case "ClusterClass":
			o.SetName(name)
			if err := annotateWorkerClasses(o, workerAnnotations); err != nil {
				return err
			}
			if err := slowHealthChecks(o); err != nil {
				return err
			}
		case "DevMachineTemplate":
			if err := unstructured.SetNestedField(o.Object, "3s", "spec", "template", "spec", "backend", "inMemory", "vm", "provisioning", "startupDuration"); err != nil {
				return err
			}
		}
		if err := c.Apply(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// healthCheckPatience is how long the class's health checks let a node be
// not Ready, or not seen, before its machine is replaced (upstream's
// template: 300 s). On a starved test machine (a CI run under three e2e
// jobs) the provider took more than 5 minutes to start a new cluster's
// simulated API server; Cluster API could not inspect the nodes, replaced
// every machine at 5 minutes, control plane included, and the clusters
// never came up in 12. The checks stay (resume --wait follows them; a pool
// that sets its own, as TestStatusFromTheRealHealthCheck's, keeps it); only
// their patience outlasts the machine's load.
const healthCheckPatience = int64(15 * 60)

// slowHealthChecks sets every timeout of the class's health checks (the
// control plane's and each worker class's) to healthCheckPatience.
func slowHealthChecks(class *unstructured.Unstructured) error {
	found := 0
	if hc, ok, _ := unstructured.NestedMap(class.Object, "spec", "controlPlane", "healthCheck", "checks"); ok {
		found++
		if err := setTimeouts(hc); err != nil {
			return err
		}
		if err := unstructured.SetNestedMap(class.Object, hc, "spec", "controlPlane", "healthCheck", "checks"); err != nil {
			return err
		}
	}
	mds, _, err := unstructured.NestedSlice(class.Object, "spec", "workers", "machineDeployments")
	if err != nil {
		return err
	}
	for _, md := range mds {
		if hc, ok, _ := unstructured.NestedMap(md.(map[string]any), "healthCheck", "checks"); ok {
			found++
			if err := setTimeouts(hc); err != nil {
				return err
			}
			if err := unstructured.SetNestedMap(md.(map[string]any), hc, "healthCheck", "checks"); err != nil {
				return err
			}
		}
	}
	if found == 0 {
		return errors.New("the in-memory ClusterClass has no health checks to slow down: has upstream's template changed?")
	}
	return unstructured.SetNestedSlice(class.Object, mds, "spec", "workers", "machineDeployments")
}

func setTimeouts(checks map[string]any) error {
	for _, kind := range []string{"unhealthyNodeConditions", "unhealthyMachineConditions"} {
		conds, _, err := unstructured.NestedSlice(checks, kind)
		if err != nil {
			return err
		}
		for _, c := range conds {
			c.(map[string]any)["timeoutSeconds"] = healthCheckPatience
		}
		if conds != nil {
			checks[kind] = conds
		}
	}
	return nil
}

func annotateWorkerClasses(class *unstructured.Unstructured, annotations map[string]string) error {
	if len(annotations) == 0 {
		return nil
	}
	mds, _, err := unstructured.NestedSlice(class.Object, "spec", "workers", "machineDeployments")
	if err != nil {
		return err
	}
	for _, md := range mds {
		a := map[string]any{}
		for k, v := range annotations {
			a[k] = v
		}
		md.(map[string]any)["metadata"] = map[string]any{"annotations": a}
	}
	return unstructured.SetNestedSlice(class.Object, mds, "spec", "workers", "machineDeployments")
}

// TopologyCluster is a Cluster of the ClusterClass class with one
// control-plane machine and the given machineDeployment pools (YAML list
// items, e.g. "{class: default-worker, name: md-0, replicas: 3}").
func TopologyCluster(ns, name, class string, pools ...string) string {
	manifest := fmt.Sprintf(`apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: %s
  namespace: %s
spec:
  clusterNetwork:
    services: {cidrBlocks: ["10.128.0.0/12"]}
    pods: {cidrBlocks: ["192.168.0.0/16"]}
    serviceDomain: cluster.local
  topology:
    classRef: {name: %s}
    version: v1.37.0
    controlPlane: {replicas: 1}
    workers:
      machineDeployments:
`, name, ns, class)
	for _, p := range pools {
		manifest += "      - " + strings.ReplaceAll(p, "\n", "\n        ") + "\n"
	}
	return manifest
}

// KamajiStandIn creates what stands in for a Kamaji tenant control plane,
// which cannot run here: two pods in ns, running on a kwok node of the
// platform, labelled kamaji.clastix.io/name=<name of the cluster's control
// plane> as Kamaji labels them (the Cluster's spec.controlPlaneRef.name,
// which a topology suffixes: not the cluster's name). The pods are named
// after the cluster.
func (c *Cluster) KamajiStandIn(ctx context.Context, ns, cluster string) error {
	var controlPlane string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := c.Dynamic.Resource(capiClusters).Namespace(ns).Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		controlPlane, _, _ = unstructured.NestedString(u.Object, "spec", "controlPlaneRef", "name")
		return controlPlane != "", nil
	})
	if err != nil {
		return fmt.Errorf("waiting for cluster %s/%s to reference its control plane: %w", ns, cluster, err)
	}
	const node = "platform-worker"
	_, err = c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        node,
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
	}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// Pods need the namespace's default service account, which the
	// controller manager creates shortly after the namespace.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.Kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the default service account of %s: %w", ns, err)
	}
	for _, name := range []string{cluster + "-0", cluster + "-1"} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kamaji.clastix.io/name": controlPlane}},
			Spec: corev1.PodSpec{
				NodeName: node, Containers: []corev1.Container{{Name: "kube-apiserver", Image: "registry.k8s.io/kube-apiserver:v1.37.0"}},
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			},
		}
		if _, err := c.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating the Kamaji stand-in pod %s/%s: %w", ns, name, err)
		}
	}
	return nil
}
