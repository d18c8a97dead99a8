package kubeconfig

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/spokekit/spokekit/internal/exitcode"
	"github.com/spokekit/spokekit/internal/localfile"
)

// A file that never ends, or never starts, is refused at once (on the old
// code these reads never returned and the test timed out).
func TestLoadReadsRegularFilesOnly(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	assert.NilError(t, syscall.Mkfifo(fifo, 0o600))
	big := filepath.Join(dir, "big")
	assert.NilError(t, os.WriteFile(big, []byte(strings.Repeat("#", localfile.MaxSize+1)), 0o600))
	cases := map[string]struct{ path, want string }{
		"a device":         {"/dev/zero", "/dev/zero is a device, not a regular file"},
		"a FIFO":           {fifo, fifo + " is a FIFO, not a regular file"},
		"a directory":      {dir, dir + " is a directory, not a regular file"},
		"a file too large": {big, "is larger than 1048576 bytes"},
		"a missing file":   {filepath.Join(dir, "gone"), "no such file"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Load(tc.path)
			assert.ErrorContains(t, err, tc.want)
			_, err = UserRESTConfig(tc.path)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestUserRESTConfigKeepsKubectlMeaning(t *testing.T) {
	// The user's own file for their own cluster: exec plugins and relative
	// file references work as with kubectl --kubeconfig.
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("ca"), 0o600))
	path := filepath.Join(dir, "config")
	assert.NilError(t, os.WriteFile(path, []byte(fromCluster("    exec: {apiVersion: client.authentication.k8s.io/v1, command: my-login, interactiveMode: Never}\n",
		"    certificate-authority: ca.crt\n", "")), 0o600))
	cfg, err := UserRESTConfig(path)
	assert.NilError(t, err)
	assert.Equal(t, cfg.ExecProvider.Command, "my-login")
	assert.Equal(t, string(cfg.CAData), "ca", "read here, bounded")
	assert.Equal(t, cfg.CAFile, "")
}

// A kubeconfig handed over for a spoke goes into the hub's Secret: the
// local files it names (an SSH key, say) are refused, each named, never read
// into it.
func TestLoadRefusesFileReferences(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "id_ed25519")
	assert.NilError(t, os.WriteFile(key, []byte("PRIVATE SSH KEY"), 0o600))
	path := filepath.Join(dir, "config")
	assert.NilError(t, os.WriteFile(path, []byte(fromCluster(
		"    client-key: "+key+"\n    client-certificate: admin.crt\n    tokenFile: /var/run/token\n",
		"    certificate-authority: ca.crt\n", "")), 0o600))
	_, err := Load(path)
	assert.Equal(t, exitcode.Of(err), exitcode.Refused, "%v", err)
	for _, want := range []string{
		`user "admin" names the local file "` + key + `" (client-key)`,
		`(client-certificate)`, `(tokenFile)`,
		`cluster "spoke" names the local file "` + filepath.Join(dir, "ca.crt") + `" (certificate-authority)`,
		"kubectl config view --flatten --minify",
	} {
		assert.Check(t, is.ErrorContains(err, want))
	}
	assert.Check(t, !strings.Contains(err.Error(), "PRIVATE SSH KEY"))
}

// The user's own kubeconfig may name files; they are read as any local
// file is, bounded, and a FIFO among them does not block.
func TestUserRESTConfigReadsReferencedFilesBounded(t *testing.T) {
	dir := t.TempDir()
	assert.NilError(t, syscall.Mkfifo(filepath.Join(dir, "token"), 0o600))
	path := filepath.Join(dir, "config")
	assert.NilError(t, os.WriteFile(path, []byte(fromCluster("    tokenFile: token\n", "", "")), 0o600))
	_, err := UserRESTConfig(path)
	assert.ErrorContains(t, err, "is a FIFO, not a regular file")
}
