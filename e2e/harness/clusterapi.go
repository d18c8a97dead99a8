package harness

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"
)

// CAPITestModule holds Cluster API's Docker provider, whose in-memory backend
// simulates each workload cluster's API server and etcd in process.
const CAPITestModule = "sigs.k8s.io/cluster-api/test@v1.14.2"

// A capiManager is one Cluster API manager: its binary (built by
// e2e/tools/build.sh from e2e/tools/cluster-api) and the config/ directory of
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
	// provider picks from 20000-30000 (and 19000 for debugging): one provider
	// process per machine.
	{name: "capi-docker", module: CAPITestModule, config: "infrastructure/docker/config", env: []string{"POD_IP=127.0.0.1"}},
}

// ClusterAPI is Cluster API's managers running as local processes against a
// platform cluster, their webhooks served on 127.0.0.1.
type ClusterAPI struct {
	// Dir holds the serving certificate and each manager's log.
	Dir      string
	platform *Cluster
	procs    []*exec.Cmd
	ports    []int
}

// StartClusterAPI installs Cluster API's CRDs and webhook configurations
// into the platform cluster, starts the core, kubeadm bootstrap, kubeadm
// control plane and Docker (in-memory) managers, and waits until each is
// ready. They stop when the Env closes.
func (c *Cluster) StartClusterAPI(ctx context.Context) (*ClusterAPI, error) {
	for _, m := range capiManagers {
		if _, err := os.Stat(filepath.Join(c.env.Tools.Bin, m.name)); err != nil {
			return nil, fmt.Errorf("tool %s missing (run `make e2e-tools`): %w", m.name, err)
		}
	}
	a := &ClusterAPI{Dir: filepath.Join(c.env.Workdir, "cluster-api"), platform: c}
	c.env.onClose(a.stop)
	certDir := filepath.Join(a.Dir, "certs")
	if err := os.MkdirAll(certDir, 0o755); err != nil {
		return nil, err
	}
	caPEM, err := writeServingCert(certDir)
	if err != nil {
		return nil, err
	}
	// Per manager: webhook, health and diagnostics (metrics) ports.
	if a.ports, err = reservePorts(3 * len(capiManagers)); err != nil {
		return nil, err
	}
	for i, m := range capiManagers {
		if err := a.install(ctx, m, a.ports[3*i], caPEM); err != nil {
			return nil, err
		}
	}
	a.procs = make([]*exec.Cmd, len(capiManagers))
	for i := range capiManagers {
		if err := a.start(i); err != nil {
			return nil, err
		}
	}
	for i, m := range capiManagers {
		if err := waitReady(ctx, m.name, a.ports[3*i+1], filepath.Join(a.Dir, m.name+".log")); err != nil {
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
	m, ports, certDir := capiManagers[i], a.ports[3*i:3*i+3], filepath.Join(a.Dir, "certs")
	log, err := os.Create(filepath.Join(a.Dir, m.name+".log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(filepath.Join(a.platform.env.Tools.Bin, m.name),
		"--kubeconfig="+a.platform.Kubeconfig,
		"--leader-elect=false",
		"--feature-gates=ClusterTopology=true",
		"--webhook-cert-dir="+certDir,
		fmt.Sprintf("--webhook-port=%d", ports[0]),
		fmt.Sprintf("--health-addr=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("--diagnostics-address=127.0.0.1:%d", ports[2]),
		"--insecure-diagnostics",
	)
	cmd.Env = append(os.Environ(), m.env...)
	cmd.Stdout, cmd.Stderr = log, log
	// The managers go with the test process, also when it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", m.name, err)
	}
	a.procs[i] = cmd
	return nil
}

// waitReady waits until a manager answers /readyz (its webhook server is
// serving then).
func waitReady(ctx context.Context, name string, port int, log string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not become ready (log: %s): %w", name, log, ctx.Err())
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// Restart stops and starts one manager (by binary name) and waits until it is
// ready again: it then reads every cluster's kubeconfig Secret anew.
func (a *ClusterAPI) Restart(ctx context.Context, name string) error {
	for i, m := range capiManagers {
		if m.name != name {
			continue
		}
		stopProcess(a.procs[i])
		if err := a.start(i); err != nil {
			return err
		}
		return waitReady(ctx, m.name, a.ports[3*i+1], filepath.Join(a.Dir, m.name+".log"))
	}
	return fmt.Errorf("no Cluster API manager %q", name)
}

func (a *ClusterAPI) stop() {
	for _, p := range a.procs {
		stopProcess(p)
	}
	a.procs = nil
	releasePorts(a.ports)
}

// stopProcess asks a manager to stop and kills it when it has not within
// ten seconds.
func stopProcess(p *exec.Cmd) {
	if p == nil || p.Process == nil {
		return
	}
	done := make(chan struct{})
	go func() { _ = p.Wait(); close(done) }()
	_ = p.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.Process.Kill()
		<-done
	}
}

// writeServingCert writes a fresh CA's serving certificate for 127.0.0.1 and
// localhost as tls.crt and tls.key into dir, and returns the CA in PEM.
func writeServingCert(dir string) ([]byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "spokekit-e2e-webhook-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
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
// start in 3 s instead of the template's 10 s, to keep runs short.
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
// which cannot run here: two pods labelled kamaji.clastix.io/name=cluster in
// ns, running on a kwok node of the platform.
func (c *Cluster) KamajiStandIn(ctx context.Context, ns, cluster string) error {
	const node = "platform-worker"
	_, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node,
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}}}, metav1.CreateOptions{})
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
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kamaji.clastix.io/name": cluster}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "kube-apiserver", Image: "registry.k8s.io/kube-apiserver:v1.37.0"}},
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		}
		if _, err := c.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating the Kamaji stand-in pod %s/%s: %w", ns, name, err)
		}
	}
	return nil
}
