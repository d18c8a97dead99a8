package leaktest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"

	"gotest.tools/v3/assert"
)

type findCase struct {
	out  string
	want []string
}

// findCases are outputs and the credentials in each: each case needs some
// part of the finder, so taking any part away misses a leak.
func findCases() (map[string][]byte, map[string]findCase) {
	key := []byte("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIKb0dXJrZXlieXRlc2hlcmVmb3J0aGV0ZXN0c29ubHk=\n-----END EC PRIVATE KEY-----\n")
	token := "tok-0123456789abcdef"
	// binary's base64 is all + (- in the URL alphabet).
	binary := bytes.Repeat([]byte("\xfb\xef\xbe"), 6)
	creds := map[string][]byte{"key": key, "token": []byte(token), "binary": binary}
	b64 := base64.StdEncoding.EncodeToString
	url := base64.URLEncoding.EncodeToString
	raw := base64.RawStdEncoding.EncodeToString
	// multipleOf3 pads s at its start to a length that encodes without padding.
	multipleOf3 := func(s string) string {
		for len(s)%3 != 0 {
			s = "#" + s
		}
		return s
	}
	kubeconfig := "users:\n- name: a\n  user:\n    client-key-data: " + b64(key) + "\n    token: tok-0123456789abcdef\n"
	secretJSON, err := json.Marshal(map[string]any{"data": map[string][]byte{"kubeconfig": []byte(kubeconfig)}})
	if err != nil {
		panic(err)
	}
	return creds, map[string]findCase{
		"nothing":                                    {"kind: Secret\ndata: {}\n", nil},
		"raw token":                                  {"error: token tok-0123456789abcdef rejected", []string{"token"}},
		"a secret holding a kubeconfig":              {string(secretJSON), []string{"key", "token"}},
		"a log line quoting the body":                {`I1130 body="` + string(secretJSON[:len(secretJSON)-2]) + `"`, []string{"key", "token"}},
		"a PEM body with escaped newlines":           {`"-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEEIKb0dXJrZXlieXRlc2hlcmVmb3J0aGV0ZXN0c29ubHk=\\n"`, []string{"key"}},
		"base64 at an odd offset, unpadded":          {raw([]byte("x: tok-0123456789abcdef\n")), []string{"token"}},
		"three layers deep":                          {"data: " + b64([]byte("a: "+b64([]byte("b: "+b64([]byte("c: "+token)))))), []string{"token"}},
		"a run that starts mid-group, byte offset 1": {"abc" + raw([]byte("xy: "+token+"\n")), []string{"token"}},
		"a run that starts mid-group, byte offset 2": {"abc" + raw([]byte("x: "+token+"\n")), []string{"token"}},
		"a run with a neighbour's character":         {" " + raw([]byte(multipleOf3("k: "+b64([]byte("c: "+token))))) + "Z", []string{"token"}},
		"URL-safe base64 outside":                    {url([]byte("\xfb\xef\xbek: " + b64([]byte("c: "+token)))), []string{"token"}},
		"URL-safe base64 of the credential":          {"abc" + base64.RawURLEncoding.EncodeToString(append(binary, "tail"...)), []string{"binary"}},
	}
}

func TestFind(t *testing.T) {
	creds, cases := findCases()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.DeepEqual(t, Find(tc.out, creds), tc.want)
		})
	}
}

// Each part of the finder is needed: without it, some case misses a leak.
func TestFindNeedsEveryPart(t *testing.T) {
	creds, cases := findCases()
	for name, mutate := range map[string]func(*finder){
		"no decoding":             func(f *finder) { f.maxDepth = 0 },
		"one layer decoded":       func(f *finder) { f.maxDepth = 1 },
		"one byte offset":         func(f *finder) { f.shifts = 1 },
		"no trim retry":           func(f *finder) { f.trimRetry = false },
		"standard base64 decoded": func(f *finder) { f.decodings = []*base64.Encoding{base64.StdEncoding} },
		"standard base64 needles": func(f *finder) { f.needleAlphabets = []*base64.Encoding{base64.StdEncoding} },
		"no encoded needles":      func(f *finder) { f.needleAlphabets = nil },
		"no line needles":         func(f *finder) { f.lineNeedles = false },
	} {
		t.Run(name, func(t *testing.T) {
			mutant := find
			mutate(&mutant)
			var missed []string
			for caseName, tc := range cases {
				if got := mutant.find(tc.out, creds); len(got) != len(tc.want) {
					missed = append(missed, caseName)
				}
			}
			assert.Check(t, len(missed) > 0, "the finder without this part passes every case")
			t.Log("missed:", missed)
		})
	}
}
