package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ServiceAccountCommand creates the ServiceAccount ns/name (and ns), asks an
// hour's token for it, and returns a command whose kubeconfig authenticates
// as that ServiceAccount and nothing else: what RBAC grants it is all it may do.
func (c *Cluster) ServiceAccountCommand(ctx context.Context, home, ns, name string) (Command, error) {
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return Command{}, fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	_, err = c.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return Command{}, fmt.Errorf("creating service account %s/%s: %w", ns, name, err)
	}
	hour := int64(3600)
	tok, err := c.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		return Command{}, fmt.Errorf("token for %s/%s: %w", ns, name, err)
	}
	ca := c.Config.CAData
	if len(ca) == 0 {
		if ca, err = os.ReadFile(c.Config.CAFile); err != nil {
			return Command{}, fmt.Errorf("the CA of %s: %w", c.Name, err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: name, Namespace: ns}
	cfg.CurrentContext = name
	dir, err := os.MkdirTemp(c.env.Workdir, "sa-")
	if err != nil {
		return Command{}, err
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return Command{}, err
	}
	cmd := c.For(home)
	cmd.Env = []string{"KUBECONFIG=" + path}
	return cmd, nil
}

// PluginRBAC reads the RBAC manifest the repository ships for a plugin
// (plugins/kubectl-<plugin>/rbac.yaml).
func PluginRBAC(plugin string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(filepath.Join(root, "plugins", "kubectl-"+plugin, "rbac.yaml"))
	return string(data), err
}

// WithoutVerb is an RBAC manifest with one verb taken out of one rule: the
// role minus one permission. rule is the text that ends with the rule's
// verbs line and occurs once in the manifest, e.g.
// "resources: [nodes]\n  verbs: [get, list, patch]".
func WithoutVerb(manifest, rule, verb string) (string, error) {
	if strings.Count(manifest, rule) != 1 {
		return "", fmt.Errorf("the manifest has not exactly one %q", rule)
	}
	head, verbs := "", rule
	if i := strings.LastIndex(rule, "\n"); i >= 0 {
		head, verbs = rule[:i+1], rule[i+1:]
	}
	indent := verbs[:len(verbs)-len(strings.TrimLeft(verbs, " "))]
	inner := strings.TrimSuffix(strings.TrimPrefix(strings.TrimLeft(verbs, " "), "verbs: ["), "]")
	var kept []string
	for _, v := range strings.Split(inner, ", ") {
		if v != verb {
			kept = append(kept, v)
		}
	}
	if len(kept) == 0 {
		return "", fmt.Errorf("%q without %s is no rule", rule, verb)
	}
	return strings.Replace(manifest, rule, head+indent+"verbs: ["+strings.Join(kept, ", ")+"]", 1), nil
}

// WaitCanI waits until `kubectl auth can-i ARGS`, run as cmd's user, answers
// want: an RBAC change reaches the authorizer a moment after it is written.
func (cmd Command) WaitCanI(ctx context.Context, want bool, args ...string) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := cmd.Kubectl(ctx, append([]string{"auth", "can-i"}, args...)...)
		if err != nil {
			return false, err
		}
		return (r.ExitCode == 0) == want, nil
	})
}

// WaitDenied waits until `kubectl ARGS --dry-run=server`, run as cmd's user,
// is denied by the admission policy named policy: a ValidatingAdmissionPolicy
// reaches admission a moment after it is written, and a dry run passes
// through admission without changing anything while it does not yet.
func (cmd Command) WaitDenied(ctx context.Context, policy string, args ...string) error {
	return cmd.WaitDeniedRequest(ctx, policy, append(args, "--dry-run=server")...)
}

// WaitDeniedRequest is WaitDenied for a request kubectl cannot dry-run:
// `kubectl ARGS` as given, which must change nothing when it is allowed
// (a TokenRequest, which stores nothing, or a --raw request with
// ?dryRun=All).
func (cmd Command) WaitDeniedRequest(ctx context.Context, policy string, args ...string) error {
	var last Result
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		r, err := cmd.Kubectl(ctx, args...)
		if err != nil {
			return false, err
		}
		last = r
		return r.ExitCode != 0 && strings.Contains(r.Stderr, policy), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for policy %s to deny kubectl %s: %w (last: %s)", policy, strings.Join(args, " "), err, last)
	}
	return nil
}
