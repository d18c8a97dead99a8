package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ExecMarkerVar names the file an ExecKubeconfig's plugin creates when it
// runs. Set it only in the environment of the command under test (see
// WithExecMarker): controllers and stand-ins in the test process may run the
// plugin too, and then it just hands out the credential.
const ExecMarkerVar = "SPOKEKIT_E2E_EXEC_MARKER"

// ExecKubeconfig is a kubeconfig of the cluster whose user gets the cluster's
// admin credential from an exec plugin: sh prints it from a file under dir,
// after creating the file $SPOKEKIT_E2E_EXEC_MARKER when that is set. It is
// what someone who may write a Secret could store to run code wherever the
// kubeconfig is loaded with client-go's defaults.
func (c *Cluster) ExecKubeconfig(dir string) ([]byte, error) {
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	u := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
	cred, err := json.Marshal(map[string]any{
		"apiVersion": "client.authentication.k8s.io/v1",
		"kind":       "ExecCredential",
		"status":     map[string]string{"clientCertificateData": string(u.ClientCertificateData), "clientKeyData": string(u.ClientKeyData)},
	})
	if err != nil {
		return nil, err
	}
	credFile := filepath.Join(dir, c.Name+"-exec-credential.json")
	if err := os.WriteFile(credFile, cred, 0o600); err != nil {
		return nil, err
	}
	u.ClientCertificateData, u.ClientKeyData = nil, nil
	u.Exec = &clientcmdapi.ExecConfig{
		APIVersion:      "client.authentication.k8s.io/v1",
		Command:         "sh",
		Args:            []string{"-c", fmt.Sprintf(`if [ -n "$%s" ]; then touch "$%s"; fi; cat %q`, ExecMarkerVar, ExecMarkerVar, credFile)},
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}
	return clientcmd.Write(*cfg)
}

// WithExecMarker is the command with ExecMarkerVar set to marker.
func (c Command) WithExecMarker(marker string) Command {
	c.Env = append(append([]string(nil), c.Env...), ExecMarkerVar+"="+marker)
	return c
}
