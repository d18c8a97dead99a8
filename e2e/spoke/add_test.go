//go:build e2e

package spoke

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/spokekit/spokekit/internal/kubeconfig"
	"github.com/spokekit/spokekit/internal/kubeconfig/leaktest"
)

func TestAddRefusesBadKubeconfigs(t *testing.T) {
	jwt := func(exp time.Time) string {
		// header {"alg":"RS256"}, payload {"exp":...}; the signature does not matter here.
		payload := strings.TrimRight(b64url(`{"exp":`+itoa(exp.Unix())+`}`), "=")
		return "eyJhbGciOiJSUzI1NiJ9." + payload + ".c2ln"
	}
	cases := []struct {
		name    string
		file    func(t *testing.T) string
		wantErr string
	}{
		{"exec plugin", func(t *testing.T) string {
			t.Helper()
			cfg := kubeconfigOf(t, spoke1)
			u := currentUser(cfg)
			u.ClientCertificateData, u.ClientKeyData = nil, nil
			u.Exec = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "aws-iam-authenticator", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
			return writeKubeconfig(t, cfg)
		}, `runs the exec plugin "aws-iam-authenticator"`},
		{"short-lived token", func(t *testing.T) string {
			t.Helper()
			cfg := kubeconfigOf(t, spoke1)
			u := currentUser(cfg)
			u.ClientCertificateData, u.ClientKeyData = nil, nil
			u.Token = jwt(time.Now().Add(time.Hour))
			return writeKubeconfig(t, cfg)
		}, "token of user"},
		{"expired certificate", func(t *testing.T) string {
			t.Helper()
			return writeKubeconfig(t, signedCert(t, spoke1, "expired", time.Now().Add(-time.Hour)))
		}, "client certificate of user"},
		{"certificate expiring within the minimum lifetime", func(t *testing.T) string {
			t.Helper()
			return writeKubeconfig(t, signedCert(t, spoke1, "soon", time.Now().Add(30*24*time.Hour)))
		}, "sooner than --min-credential-lifetime"},
		{"unreachable server", func(t *testing.T) string {
			t.Helper()
			cfg := kubeconfigOf(t, spoke1)
			cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server = "https://127.0.0.1:1"
			return writeKubeconfig(t, cfg)
		}, "did not answer"},
		{"missing context", func(t *testing.T) string {
			t.Helper()
			cfg := kubeconfigOf(t, spoke1)
			cfg.CurrentContext = "gone"
			return writeKubeconfig(t, cfg)
		}, `current-context "gone" is not defined`},
		{"garbage", func(t *testing.T) string {
			t.Helper()
			return writeFile(t, "garbage", "\x7fELF\x02\x01 certainly: [not a kubeconfig")
		}, "is not a kubeconfig"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			values := writeFile(t, "values.yaml", valuesFile)
			r := spoke(t, "add", "badconfig", "--spoke-kubeconfig", tc.file(t), "--values", values, "--apply")
			assert.Equal(t, r.ExitCode, 3, r)
			assert.Check(t, is.Contains(r.Stderr, tc.wantErr), r)
			assert.Check(t, is.Contains(r.Stderr, "nothing was changed"), r)
			assert.Check(t, !strings.Contains(r.Stderr, "BEGIN"), "no credential in the error: %s", r)
			assert.Equal(t, readFile(t, values), valuesFile, "the values file is untouched")
			assert.Check(t, !secretExists(t, "badconfig"), "no secret was written")
			assert.Check(t, spokeObject(t, "badconfig") == nil, "no Spoke was written")
		})
	}
	t.Run("invalid name is a usage error", func(t *testing.T) {
		r := spoke(t, "add", "Not_A_Name", "--spoke-kubeconfig", spoke1.Kubeconfig)
		assert.Equal(t, r.ExitCode, 2, r)
	})
}

func TestAddJoinsListsAndIsIdempotent(t *testing.T) {
	values := writeFile(t, "values.yaml", valuesFile)
	r := addAndJoin(t, "spoke-1", spoke1, "--values", values)
	assert.Check(t, is.Contains(r.Stdout, "joined and available"), r)

	// The values file: one entry appended, every other byte as it was.
	edited := readFile(t, values)
	head, _, found := strings.Cut(valuesFile, "\n  hub:")
	assert.Assert(t, found, "the values file has a hub entry")
	head = strings.TrimRight(head, "\n") + "\n"
	assert.Check(t, strings.HasPrefix(edited, head), edited)
	assert.Check(t, strings.HasSuffix(edited, valuesFile[len(head):]), edited)
	entry := strings.TrimSuffix(strings.TrimPrefix(edited, head), valuesFile[len(head):])
	assert.Check(t, is.Contains(entry, "  - name: spoke-1\n"), entry)
	assert.Check(t, is.Contains(entry, "secretReference:\n        name: spoke-1-kubeconfig"), entry)
	assert.Check(t, is.Contains(entry, "forceInternalEndpointLookup: false"), entry)
	assert.Check(t, is.Contains(entry, "endpoint: \"oci://registry.lab.example/mural\""), "ociRegistry copied: %s", entry)
	// The hub-as-spoke's purge of its kubeconfig secret is not copied: the
	// entry and the Spoke carry the chart's four documented defaults.
	assert.Check(t, is.Contains(entry, "cleanupConfig:\n      purgeKlusterletOperator: true\n      purgeKubeconfigSecret: false\n      purgeAgentNamespace: false\n      forceClusterDrain: true\n"), entry)
	cleanup, _, _ := unstructured.NestedMap(spokeObject(t, "spoke-1").Object, "spec", "cleanupConfig")
	assert.Check(t, is.DeepEqual(cleanup, map[string]any{
		"purgeKlusterletOperator": true, "purgeKubeconfigSecret": false,
		"purgeAgentNamespace": false, "forceClusterDrain": true,
	}))

	// The secret holds the kubeconfig minified to its one context.
	sec, err := hub.Kube.CoreV1().Secrets(releaseNamespace).Get(ctx(t), "spoke-1-kubeconfig", metav1.GetOptions{})
	assert.NilError(t, err)
	kc, err := kubeconfig.FromSecret(sec, "kubeconfig")
	assert.NilError(t, err)
	assert.Equal(t, kc.Server, spoke1.Config.Host)

	r = spoke(t, "list")
	assert.Equal(t, r.ExitCode, 0, r)
	assert.Check(t, is.Regexp(`(?m)^NAME\s+PHASE\s+JOINED\s+AVAILABLE\s+AGE$`, r.Stdout), r)
	assert.Check(t, is.Regexp(`(?m)^spoke-1\s+Running\s+True\s+True\s+`, r.Stdout), r)

	r = spoke(t, "get", "spoke-1", "-o", "json")
	assert.Equal(t, r.ExitCode, 0, r)
	var list struct {
		Items []struct {
			Metadata                                   struct{ Name string }
			Phase, Joined, Available, KubeconfigSecret string
		}
	}
	assert.NilError(t, json.Unmarshal([]byte(r.Stdout), &list), r)
	assert.Equal(t, len(list.Items), 1)
	assert.Equal(t, list.Items[0].KubeconfigSecret, "spoke-1-kubeconfig")
	assert.Equal(t, list.Items[0].Available, "True")

	// Again: nothing is written.
	spokeBefore, secretBefore := spokeWrites(t, "spokes", "spoke-1"), spokeWrites(t, "secrets", "spoke-1-kubeconfig")
	r = addAndJoin(t, "spoke-1", spoke1, "--values", values)
	assert.Check(t, is.Contains(r.Stdout, "unchanged"), r)
	assert.Check(t, is.Contains(r.Stdout, "entry already in fleetConfig.spokes"), r)
	assert.Equal(t, readFile(t, values), edited)
	assert.Equal(t, spokeWrites(t, "spokes", "spoke-1"), spokeBefore, "no write to the Spoke")
	assert.Equal(t, spokeWrites(t, "secrets", "spoke-1-kubeconfig"), secretBefore, "no write to the secret")

	// The name is now taken for any other cluster.
	r = spoke(t, "add", "spoke-1", "--spoke-kubeconfig", spoke2.Kubeconfig, "--apply")
	assert.Equal(t, r.ExitCode, 3, r)
	assert.Check(t, is.Contains(r.Stderr, "already exists for another cluster"), r)

	r = spoke(t, "get", "spoke-1", "nope")
	assert.Equal(t, r.ExitCode, 1, r)
	assert.Check(t, is.Contains(r.Stderr, "not found: nope"), r)
}

func TestAddDryRunWritesNothingAndRedacts(t *testing.T) {
	values := writeFile(t, "values.yaml", valuesFile)
	// The spoke's kubeconfig with user:password@ in its server URL too: the
	// API server ignores the basic-auth header and takes the certificate.
	cfg := kubeconfigOf(t, spoke2)
	server := &cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server
	*server = strings.Replace(*server, "https://", "https://url-user-0123:url-password-0123456789@", 1)
	file := writeKubeconfig(t, cfg)
	creds := map[string][]byte{
		"client key":         currentUser(cfg).ClientKeyData,
		"client certificate": currentUser(cfg).ClientCertificateData,
		"URL password":       []byte("url-password-0123456789"),
	}
	assert.Check(t, is.DeepEqual(leaktest.Find(readFile(t, file), creds), []string{"URL password", "client certificate", "client key"}),
		"the search finds every credential in the kubeconfig, so it can fail")
	for _, mode := range []string{"client", "server"} {
		for _, format := range []string{"yaml", "json", ""} {
			r := spoke(t, "add", "dry", "--spoke-kubeconfig", file, "--values", values, "--apply", "--dry-run="+mode, "-o", format)
			assert.Equal(t, r.ExitCode, 0, r)
			assert.Check(t, is.Contains(r.Stdout, "would be created"), r)
			if format != "" {
				assert.Check(t, is.Regexp(`"?kind"?: "?Secret`, r.Stdout), "the secret is shown, redacted")
			} else {
				// The hint after the table goes to stderr, as in every plugin.
				assert.Check(t, is.Contains(r.Stderr, "Next: run again without --dry-run"), r)
				assert.Check(t, !strings.Contains(r.Stdout, "run again"), r)
			}
			// The secret's data is base64 of the kubeconfig, whose key data is
			// base64 again: leaktest decodes both layers.
			assert.Check(t, is.Len(leaktest.Find(r.Stdout+r.Stderr, creds), 0), "dry-run=%s -o %q: %s", mode, format, r)
			assert.Equal(t, readFile(t, values), valuesFile)
			assert.Check(t, !secretExists(t, "dry"))
			assert.Check(t, spokeObject(t, "dry") == nil)
		}
	}
}
