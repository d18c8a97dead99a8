package harness

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The Open Cluster Management components run as local processes of one
// binary, `ocm`, built by hack/tools/build.sh from the module pinned in
// e2e/tools/ocm (upstream's own commands; see its main.go).
const (
	// OCMComponents is the upstream release the components and their CRDs come from.
	OCMComponents = "open-cluster-management.io/ocm@v1.0.0"
	// OCMHubNamespace is where upstream runs its hub controllers.
	OCMHubNamespace = "open-cluster-management-hub"
	// AgentNamespace is where upstream's klusterlet agent keeps its hub credential on a spoke.
	AgentNamespace = "open-cluster-management-agent"
	// LeaseDurationSeconds is the lease the test bed gives every accepted
	// cluster (upstream's default is 60): the hub marks a cluster whose agent
	// stopped Available Unknown after 5 leases, so within seconds here.
	LeaseDurationSeconds = 3
)

var (
	managedClusterGVR    = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1", Resource: "managedclusters"}
	managedClusterSetGVR = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta2", Resource: "managedclustersets"}
)

// OCMHub is a hub cluster running upstream's registration controller,
// registration webhook (it sets a taint's timeAdded), placement controller,
// work manager (with ManifestWorkReplicaSets) and add-on manager (it renders
// template add-ons into ManifestWorks and reports their availability), and
// the klusterlet agents of the clusters that joined it.
type OCMHub struct {
	*Cluster
	bin string
	// bootstrap is the kubeconfig with the hub's bootstrap token the
	// agents register with.
	bootstrap string

	// registration is the hub's registration controller, started with
	// registrationArgs (see AutoApproveJoins).
	registration     *Process
	registrationArgs []string

	mu     sync.Mutex
	agents map[string]*Process
	// operators is the cluster each agent's API server is, as the harness
	// reaches it with its own rights (the klusterlet operator's part).
	operators map[string]*Cluster
	// agentAddrs is the loopback address each cluster's agent dials the hub
	// at (see agentBootstrap).
	agentAddrs map[string]string
}

// agentAddrs are the loopback addresses agents dial the hub at, one to a
// cluster; the hub's certificate names them all.
var agentAddrs = func() []string {
	var out []string
	for i := 2; i < 255; i++ {
		out = append(out, "127.0.0."+strconv.Itoa(i))
	}
	return out
}()

// StartOCMHub starts a hub cluster whose controller manager signs the
// agents' CSRs, installs the hub CRDs and starts the OCM hub components.
func (e *Env) StartOCMHub(ctx context.Context, name string, opts ...ClusterOption) (*OCMHub, error) {
	h := &OCMHub{bin: filepath.Join(e.Tools.Bin, "ocm"), agents: map[string]*Process{}, operators: map[string]*Cluster{}, agentAddrs: map[string]string{}}
	if _, err := os.Stat(h.bin); err != nil {
		return nil, fmt.Errorf("the OCM components are missing (run `make e2e-tools`): %w", err)
	}
	// kwokctl writes the cluster's CA here before it starts the components.
	pki := filepath.Join(e.clusterDir(name), "clusters", name, "pki")
	c, err := e.StartCluster(ctx, name, append(opts, func(o *clusterOptions) {
		o.certSANs = append(o.certSANs, agentAddrs...)
		o.args = append(o.args,
			componentArg{component: "kube-apiserver", key: "enable-bootstrap-token-auth", value: "true"},
			componentArg{component: "kube-controller-manager", key: "cluster-signing-cert-file", value: filepath.Join(pki, "ca.crt")},
			componentArg{component: "kube-controller-manager", key: "cluster-signing-key-file", value: filepath.Join(pki, "ca.key")})
	})...)
	if err != nil {
		return nil, err
	}
	h.Cluster = c
	start := time.Now()
	if err := InstallHubCRDs(ctx, c); err != nil {
		return nil, err
	}
	if err := createNamespace(ctx, c.Kube, OCMHubNamespace); err != nil {
		return nil, err
	}
	if err := h.startWebhook(ctx); err != nil {
		return nil, err
	}
	if h.bootstrap, err = h.createBootstrapToken(ctx); err != nil {
		return nil, err
	}
	for _, comp := range [][]string{
		{"registration", "controller"},
		{"placement", "controller"},
		{"work", "manager", "--feature-gates=ManifestWorkReplicaSet=true"},
		{"addon", "manager"},
	} {
		ports, err := h.env.reservePorts(1)
		if err != nil {
			return nil, err
		}
		args := append(slices.Clone(comp), "--kubeconfig", c.Kubeconfig, "--namespace", OCMHubNamespace, "--disable-leader-election",
			"--listen", "127.0.0.1:"+strconv.Itoa(ports[0]))
		p, err := e.StartProcess(name+"-"+comp[0], nil, h.bin, args...)
		if err != nil {
			return nil, err
		}
		if comp[0] == "registration" {
			h.registration, h.registrationArgs = p, args
		}
	}
	// The registration controller makes the default cluster set once it runs.
	err = waitFor(ctx, "the OCM registration controller", func(ctx context.Context) (bool, error) {
		_, err := c.Dynamic.Resource(managedClusterSetGVR).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "harness: OCM hub components on %s up in %s\n", name, time.Since(start).Round(100*time.Millisecond))
	return h, nil
}

// BootstrapSAUser is the user name a token of clusteradm init's bootstrap
// ServiceAccount authenticates as: the identity a join-command line joins
// with.
const BootstrapSAUser = "system:serviceaccount:" + BootstrapSANamespace + ":agent-registration-bootstrap"

// autoAcceptedAnnotation is upstream's mark (pkg/registration/hub/managedcluster)
// of a cluster the auto-approving hub has considered once.
const autoAcceptedAnnotation = "open-cluster-management.io/automatically-accepted-on"

// AutoApproveJoins restarts the hub's registration controller configured
// as a hub admin configures auto-approval (ClusterManager
// spec.registrationConfiguration: feature gate ManagedClusterAutoApproval
// enabled, autoApproveUsers the join's bootstrap identity; the operator
// passes them to the controller as these flags): it then approves the CSRs
// that identity creates when upstream's validateCSR passes them (subject
// O=system:open-cluster-management:<cluster>, CN under it) and accepts every
// new ManagedCluster. It accepts every one it had not seen with the gate
// on, too: first each cluster not accepted yet gets upstream's mark that
// auto-acceptance had its one chance at it (annotation
// open-cluster-management.io/automatically-accepted-on), as an admin who
// turns the gate on with clusters that are to stay pending would. The
// returned func restarts the controller as it was; call it before the next
// test, as every cluster made meanwhile would be accepted.
func (h *OCMHub) AutoApproveJoins(ctx context.Context) (restore func() error, err error) {
	l, err := h.Dynamic.Resource(managedClusterGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the ManagedClusters: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, mc := range l.Items {
		if accepted, _, _ := unstructured.NestedBool(mc.Object, "spec", "hubAcceptsClient"); accepted || mc.GetAnnotations()[autoAcceptedAnnotation] != "" {
			continue
		}
		g.Go(func() error {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, autoAcceptedAnnotation, time.Now().UTC().Format(time.RFC3339))
			_, err := h.Dynamic.Resource(managedClusterGVR).Patch(gctx, mc.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("marking ManagedCluster %s: %w", mc.GetName(), err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := h.restartRegistration("--feature-gates=ManagedClusterAutoApproval=true", "--auto-approved-csr-users="+BootstrapSAUser); err != nil {
		return nil, err
	}
	return func() error { return h.restartRegistration() }, nil
}

// restartRegistration stops the registration controller and starts it
// again with its first arguments and extra.
func (h *OCMHub) restartRegistration(extra ...string) error {
	h.registration.Stop()
	p, err := h.env.StartProcess(h.Name+"-registration", nil, h.bin, append(slices.Clone(h.registrationArgs), extra...)...)
	if err != nil {
		return err
	}
	h.registration = p
	return nil
}

func createNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// startWebhook serves upstream's ManagedCluster webhooks on 127.0.0.1 with
// a certificate of a CA made here, and registers them by URL.
func (h *OCMHub) startWebhook(ctx context.Context) error {
	dir := filepath.Join(h.env.Workdir, h.Name+"-webhook")
	caPEM, err := writeServingCert(dir)
	if err != nil {
		return err
	}
	ports, err := h.env.reservePorts(1)
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	if _, err := h.env.StartProcess(h.Name+"-registration-webhook", []string{"KUBECONFIG=" + h.Kubeconfig}, h.bin,
		"registration", "webhook-server", "--port", strconv.Itoa(ports[0]), "--certdir", dir); err != nil {
		return err
	}
	err = waitFor(ctx, "the OCM registration webhook", func(context.Context) (bool, error) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only: is it serving
		if err != nil {
			return false, err
		}
		return true, conn.Close()
	})
	if err != nil {
		return err
	}
	hook := func(kind, name, path string) string {
		return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: %[1]s
metadata: {name: %[2]s}
webhooks:
- name: %[2]s
  failurePolicy: Fail
  clientConfig: {url: "https://%[3]s%[4]s", caBundle: %[5]s}
  rules:
  - {operations: [CREATE, UPDATE], apiGroups: [cluster.open-cluster-management.io], apiVersions: ["*"], resources: [managedclusters]}
  admissionReviewVersions: [v1beta1, v1]
  sideEffects: None
  timeoutSeconds: 10
---
`, kind, name, addr, path, base64.StdEncoding.EncodeToString(caPEM))
	}
	return h.ApplyYAML(ctx,
		hook("MutatingWebhookConfiguration", "managedclustermutators.admission.cluster.open-cluster-management.io", "/mutate-cluster-open-cluster-management-io-v1-managedcluster")+
			hook("ValidatingWebhookConfiguration", "managedclustervalidators.admission.cluster.open-cluster-management.io", "/validate-cluster-open-cluster-management-io-v1-managedcluster"))
}

// ServingCert writes a CA and a certificate for 127.0.0.1 signed by it
// (tls.crt and tls.key) into a directory of the run's workdir named name,
// for a webhook the test bed serves there; it returns the directory and the
// CA certificate (the webhook configuration's caBundle).
func (e *Env) ServingCert(name string) (dir string, caPEM []byte, err error) {
	dir = filepath.Join(e.Workdir, name)
	caPEM, err = writeServingCert(dir)
	return dir, caPEM, err
}

// writeServingCert makes a CA and a certificate for 127.0.0.1 signed by it,
// writes tls.crt and tls.key into dir and returns the CA certificate.
func writeServingCert(dir string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "spokekit-e2e-webhook-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

// StartAgent does on a spoke what `clusteradm join` and then the klusterlet
// operator do: the join applies OCM's klusterlet chart with the identity of
// the spoke's kubeconfig (RenderKlusterletChart, applyAsClusteradm); the
// operator's part, with the harness's own rights there, installs the
// agent's CRDs and starts one upstream `registration-operator agent`
// process (registration and work agent) that bootstraps with the hub's
// bootstrap token. It does nothing while the cluster's agent runs. Several
// clusters may share one spoke API server: each agent keeps its hub
// credential in its own secret there, and dials the hub at an address of
// its own (see agentBootstrap).
func (h *OCMHub) StartAgent(ctx context.Context, cluster string, spokeKubeconfig []byte) error {
	return h.startAgent(ctx, cluster, spokeKubeconfig, h.bootstrap)
}

// startAgent starts the cluster's agent with the bootstrap kubeconfig file
// bootstrap, and args after the test bed's own.
func (h *OCMHub) startAgent(ctx context.Context, cluster string, spokeKubeconfig []byte, bootstrap string, args ...string) error {
	h.mu.Lock()
	p := h.agents[cluster]
	h.mu.Unlock()
	if p != nil && p.Running() {
		return nil
	}
	dir := filepath.Join(h.env.Workdir, "agents", cluster)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "spoke.kubeconfig")
	if err := os.WriteFile(kubeconfig, spokeKubeconfig, 0o600); err != nil {
		return err
	}
	joiner, err := clusterFromKubeconfig(cluster, kubeconfig)
	if err != nil {
		return err
	}
	// The join: what clusteradm join applies, with the identity of the
	// kubeconfig it was given, so a role that lacks a right fails here.
	hubBootstrap, err := os.ReadFile(bootstrap)
	if err != nil {
		return fmt.Errorf("reading the bootstrap kubeconfig: %w", err)
	}
	objs, err := RenderKlusterletChart(ctx, cluster, hubBootstrap)
	if err != nil {
		return err
	}
	if err := applyAsClusteradm(ctx, joiner, objs); err != nil {
		return fmt.Errorf("applying the klusterlet chart with the spoke's kubeconfig: %w", err)
	}
	// The klusterlet operator's part, with rights of its own: kwok runs no
	// pods, so the harness plays the operator with its admin credential of
	// that API server; the agent it starts runs with it too (upstream binds
	// the work agent to cluster-admin).
	operator, err := h.env.clusterAt(joiner.Config.Host)
	if err != nil {
		return fmt.Errorf("the klusterlet operator of %s: %w", cluster, err)
	}
	crds, err := ModuleGlob(ctx, OCMComponents, "manifests/klusterlet/managed/*crd.yaml")
	if err != nil {
		return err
	}
	if err := operator.InstallCRDs(ctx, crds...); err != nil {
		return err
	}
	// The agent's hub credential lives in its secret on the spoke; the hub
	// directory is that secret as the agent's pod mounts it. An unjoin
	// deletes the secret, and the agent installed next bootstraps afresh.
	hubDir := filepath.Join(dir, "hub")
	_, err = operator.Kube.CoreV1().Secrets(AgentNamespace).Get(ctx, "hub-kubeconfig-"+cluster, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if err := os.RemoveAll(hubDir); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("reading the hub credential of %s's agent: %w", cluster, err)
	}
	if err := os.MkdirAll(hubDir, 0o700); err != nil {
		return err
	}
	if bootstrap, err = h.agentBootstrap(cluster, bootstrap, dir); err != nil {
		return err
	}
	ports, err := h.env.reservePorts(1)
	if err != nil {
		return err
	}
	args = append([]string{
		"registration-operator", "agent",
		"--cluster-name", cluster,
		"--kubeconfig", operator.Kubeconfig,
		"--bootstrap-kubeconfig", bootstrap,
		// A Secret of its own that never exists: the join's
		// bootstrap-hub-kubeconfig is shared by the clusters of one API
		// server, and an agent watching it would re-bootstrap and exit
		// whenever another cluster's join rewrote it.
		"--bootstrap-kubeconfig-secret", "bootstrap-hub-kubeconfig-" + cluster,
		"--hub-kubeconfig-dir", hubDir,
		"--hub-kubeconfig-secret", "hub-kubeconfig-" + cluster,
		"--workload-source-config", filepath.Join(hubDir, "kubeconfig"),
		"--disable-leader-election",
		"--listen", "127.0.0.1:" + strconv.Itoa(ports[0]),
		"--cluster-healthcheck-period", "5s",
	}, args...)
	p, err = h.env.StartProcess("agent-"+cluster, nil, h.bin, args...)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.agents[cluster] = p
	h.operators[cluster] = operator
	h.mu.Unlock()
	return nil
}

// agentBootstrap writes into dir the bootstrap kubeconfig with the hub's
// address changed to the cluster's own loopback address, and returns its
// path. Clusters here may share one spoke API server, and the work agent
// names its AppliedManifestWorks there after a hash of the hub URL and the
// work's name: with one URL, two clusters' works of one name (a
// ManifestWorkReplicaSet's, an add-on's) would be one object that both
// agents write and each deletes under the other. An address per cluster
// keeps them apart, as separate spoke clusters would. A server other than
// the hub's is left as it is.
func (h *OCMHub) agentBootstrap(cluster, bootstrap, dir string) (string, error) {
	hub, err := url.Parse(h.Config.Host)
	if err != nil {
		return "", fmt.Errorf("parsing the hub's URL: %w", err)
	}
	h.mu.Lock()
	addr := h.agentAddrs[cluster]
	if addr == "" && len(h.agentAddrs) < len(agentAddrs) {
		addr = agentAddrs[len(h.agentAddrs)]
		h.agentAddrs[cluster] = addr
	}
	h.mu.Unlock()
	if addr == "" {
		return "", fmt.Errorf("the hub has an address for %d agents; %s would be one more", len(agentAddrs), cluster)
	}
	cfg, err := clientcmd.LoadFromFile(bootstrap)
	if err != nil {
		return "", fmt.Errorf("reading the bootstrap kubeconfig: %w", err)
	}
	for _, c := range cfg.Clusters {
		if u, err := url.Parse(c.Server); err == nil && u.Host == hub.Host {
			u.Host = net.JoinHostPort(addr, hub.Port())
			c.Server = u.String()
		}
	}
	path := filepath.Join(dir, "agent-bootstrap.kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// StopAgent stops the cluster's agent, as if its machine went away. It says
// whether one was running.
func (h *OCMHub) StopAgent(cluster string) bool {
	h.mu.Lock()
	p := h.agents[cluster]
	delete(h.agents, cluster)
	h.mu.Unlock()
	if p == nil {
		return false
	}
	p.Stop()
	return true
}

// RemoveAgent is the klusterlet operator's part of an unjoin: the
// cluster's agent stops and its hub credential goes, with the operator's
// rights. Clusters here share API servers, so it removes this agent's
// credential rather than the agent namespace upstream deletes.
func (h *OCMHub) RemoveAgent(ctx context.Context, cluster string) error {
	h.StopAgent(cluster)
	h.mu.Lock()
	operator := h.operators[cluster]
	h.mu.Unlock()
	if operator == nil {
		return nil // never started here: no credential to remove
	}
	err := operator.Kube.CoreV1().Secrets(AgentNamespace).Delete(ctx, "hub-kubeconfig-"+cluster, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the hub credential of %s's agent: %w", cluster, err)
	}
	return nil
}

// AgentRunning tells whether the cluster's agent runs.
func (h *OCMHub) AgentRunning(cluster string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.agents[cluster]
	return p != nil && p.Running()
}

// Accept does what `clusteradm accept --clusters cluster` does for a
// cluster whose agent asked to join: approves its pending CSRs that
// acceptedCSRs picks and sets hubAcceptsClient (and the test bed's short
// lease). skipApproveCheck is clusteradm's --skip-approve-check, which
// FleetConfig's controller passes when it accepts again while the cluster
// has not joined. It says whether the ManagedCluster is accepted.
func (h *OCMHub) Accept(ctx context.Context, cluster string, skipApproveCheck bool) (bool, error) {
	csrs, err := h.Kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: clusterNameLabel + "=" + cluster})
	if err != nil {
		return false, fmt.Errorf("listing the CSRs of %s: %w", cluster, err)
	}
	for _, csr := range acceptedCSRs(csrs.Items, skipApproveCheck) {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Accepted", Message: "accepted by the test bed (clusteradm accept)",
		})
		_, err := h.Kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("approving CSR %s: %w", csr.Name, err)
		}
	}
	mc, err := h.Dynamic.Resource(managedClusterGVR).Get(ctx, cluster, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading ManagedCluster %s: %w", cluster, err)
	}
	accepted, _, _ := unstructured.NestedBool(mc.Object, "spec", "hubAcceptsClient")
	lease, _, _ := unstructured.NestedInt64(mc.Object, "spec", "leaseDurationSeconds")
	if accepted && lease == LeaseDurationSeconds {
		return true, nil
	}
	patch := fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"spec":{"hubAcceptsClient":true,"leaseDurationSeconds":%d}}`, mc.GetResourceVersion(), LeaseDurationSeconds)
	_, err = h.Dynamic.Resource(managedClusterGVR).Patch(ctx, cluster, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil && !apierrors.IsConflict(err) {
		return false, fmt.Errorf("accepting ManagedCluster %s: %w", cluster, err)
	}
	return false, nil
}

// Join joins spoke to the hub as cluster: starts its agent, accepts it and
// waits until the hub says it joined and is available, and has no taint.
func (h *OCMHub) Join(ctx context.Context, cluster string, spoke *Cluster) error {
	data, err := os.ReadFile(spoke.Kubeconfig)
	if err != nil {
		return err
	}
	if err := h.StartAgent(ctx, cluster, data); err != nil {
		return err
	}
	return waitFor(ctx, "ManagedCluster "+cluster+" to join", func(ctx context.Context) (bool, error) {
		if ok, err := h.Accept(ctx, cluster, false); !ok || err != nil {
			return false, err
		}
		mc, err := h.Dynamic.Resource(managedClusterGVR).Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		// The hub lifts its unreachable taint just after Available turns True.
		taints, _, _ := unstructured.NestedSlice(mc.Object, "spec", "taints")
		return conditionTrue(mc, "ManagedClusterJoined") && conditionTrue(mc, "ManagedClusterConditionAvailable") && len(taints) == 0, nil
	})
}

func conditionTrue(u *unstructured.Unstructured, t string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == t {
			return m["status"] == "True"
		}
	}
	return false
}

// clusterFromKubeconfig is a client-only Cluster for a kubeconfig file (a
// spoke the harness did not start).
func clusterFromKubeconfig(name, path string) (*Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig of %s: %w", name, err)
	}
	c := &Cluster{Name: name, Kubeconfig: path, Config: cfg}
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// What clusteradm accept (open-cluster-management-io/clusteradm,
// pkg/cmd/accept) takes for a join's CSR: asked by a bootstrap user (by
// prefix, as clusteradm matches it) in a bootstrap group.
const clusterNameLabel = "open-cluster-management.io/cluster-name"

var (
	bootstrapUserPrefixes = []string{
		"system:bootstrap:",
		BootstrapSAUser,
		"system:serviceaccount:open-cluster-management-hub:grpc-server-sa",
	}
	bootstrapGroups = []string{bootstrapGroup, "system:serviceaccounts:" + BootstrapSANamespace, "system:serviceaccounts:open-cluster-management-hub"}
)

// acceptedCSRs are the pending CSRs clusteradm accept approves among a
// cluster's: those of a bootstrap user in a bootstrap group, when their
// requesters (the requests' common names) are one, none when they are
// several (clusteradm prints "There are CSRs of different requesters" and
// approves nothing); with skipApproveCheck every one. Denied and approved
// CSRs are left as they are.
func acceptedCSRs(csrs []certificatesv1.CertificateSigningRequest, skipApproveCheck bool) []*certificatesv1.CertificateSigningRequest {
	var out []*certificatesv1.CertificateSigningRequest
	requesters := map[string]bool{}
	for i := range csrs {
		c := &csrs[i]
		if !skipApproveCheck {
			if !slices.ContainsFunc(bootstrapUserPrefixes, func(p string) bool { return strings.HasPrefix(c.Spec.Username, p) }) ||
				!slices.ContainsFunc(c.Spec.Groups, func(g string) bool { return slices.Contains(bootstrapGroups, g) }) {
				continue
			}
			cn, ok := requestCommonName(c.Spec.Request)
			if !ok {
				continue
			}
			requesters[cn] = true
		}
		if len(c.Status.Conditions) == 0 {
			out = append(out, c)
		}
	}
	if len(requesters) > 1 {
		return nil
	}
	return out
}

// requestCommonName is the CN of a PEM certificate request.
func requestCommonName(data []byte) (string, bool) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return "", false
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return "", false
	}
	return req.Subject.CommonName, true
}
