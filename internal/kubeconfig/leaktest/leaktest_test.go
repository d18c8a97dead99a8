package leaktest

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"gotest.tools/v3/assert"
)

func TestFind(t *testing.T) {
	key := []byte("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIKb0dXJrZXlieXRlc2hlcmVmb3J0aGV0ZXN0c29ubHk=\n-----END EC PRIVATE KEY-----\n")
	creds := map[string][]byte{"key": key, "token": []byte("tok-0123456789abcdef")}
	b64 := base64.StdEncoding.EncodeToString
	kubeconfig := "users:\n- name: a\n  user:\n    client-key-data: " + b64(key) + "\n    token: tok-0123456789abcdef\n"
	secretJSON, err := json.Marshal(map[string]any{"data": map[string][]byte{"kubeconfig": []byte(kubeconfig)}})
	assert.NilError(t, err)
	cases := map[string]struct {
		out  string
		want []string
	}{
		"nothing":                           {"kind: Secret\ndata: {}\n", nil},
		"raw token":                         {"error: token tok-0123456789abcdef rejected", []string{"token"}},
		"a secret holding a kubeconfig":     {string(secretJSON), []string{"key", "token"}},
		"a log line quoting the body":       {`I1130 body="` + string(secretJSON[:len(secretJSON)-2]) + `"`, []string{"key", "token"}},
		"a PEM body with escaped newlines":  {`"-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEEIKb0dXJrZXlieXRlc2hlcmVmb3J0aGV0ZXN0c29ubHk=\\n"`, []string{"key"}},
		"base64 at an odd offset, unpadded": {base64.RawStdEncoding.EncodeToString([]byte("x: tok-0123456789abcdef\n")), []string{"token"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.DeepEqual(t, Find(tc.out, creds), tc.want)
		})
	}
}
