// Package leaktest finds credentials in what a command printed, for tests.
// A credential leaks whether it is printed as it is or base64-encoded inside
// something larger (a Secret's data holds a whole kubeconfig, which holds
// base64 client keys), so a search for the credential's own base64 is not
// enough: Find decodes what it can and searches at every offset.
package leaktest

import (
	"bytes"
	"encoding/base64"
	"regexp"
	"sort"
	"strings"
)

// minNeedle is the shortest byte string searched for: shorter ones match by
// chance. Credentials in tests must be longer.
const minNeedle = 12

var base64Run = regexp.MustCompile(`[A-Za-z0-9+/_-]{16,}={0,2}`)

// finder is how Find searches; each part of it is needed (the tests take
// each away in turn and see a leak missed).
type finder struct {
	// maxDepth bounds how many layers of base64 are decoded.
	maxDepth int
	// decodings are tried on each base64 run, in order.
	decodings []*base64.Encoding
	// trimRetry decodes a run again without a neighbour's character it picked up.
	trimRetry bool
	// encodedNeedles also searches for the credential's own base64, in these
	// alphabets, at each of shifts byte offsets: text that does not decode
	// as a whole (it starts mid-group) still holds it.
	needleAlphabets []*base64.Encoding
	shifts          int
	// lineNeedles also searches for each long line of the credential.
	lineNeedles bool
}

var find = finder{
	maxDepth:        4,
	decodings:       []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding},
	trimRetry:       true,
	needleAlphabets: []*base64.Encoding{base64.StdEncoding, base64.URLEncoding},
	shifts:          3,
	lineNeedles:     true,
}

// Find returns the names of the credentials that occur in out, sorted.
func Find(out string, credentials map[string][]byte) []string { return find.find(out, credentials) }

func (f finder) find(out string, credentials map[string][]byte) []string {
	texts := f.layers([]byte(out))
	var found []string
	for name, cred := range credentials {
		if leaks(texts, f.needles(cred)) {
			found = append(found, name)
		}
	}
	sort.Strings(found)
	return found
}

// layers is out and everything that decodes from base64 in it, nested.
func (f finder) layers(out []byte) [][]byte {
	all := [][]byte{out}
	next := [][]byte{out}
	for depth := 0; depth < f.maxDepth && len(next) > 0; depth++ {
		var decoded [][]byte
		for _, text := range next {
			for _, run := range base64Run.FindAll(text, -1) {
				if d := f.decode(run); len(d) >= minNeedle {
					decoded = append(decoded, d)
				}
			}
		}
		all = append(all, decoded...)
		next = decoded
	}
	return all
}

func (f finder) decode(run []byte) []byte {
	s := string(run)
	for _, enc := range f.decodings {
		if d, err := enc.DecodeString(s); err == nil {
			return d
		}
	}
	if !f.trimRetry {
		return nil
	}
	// A run may have picked up a neighbour's character: retry without it.
	trimmed := strings.TrimRight(s, "=")
	if len(trimmed)%4 == 1 {
		trimmed = trimmed[:len(trimmed)-1]
	}
	for _, enc := range f.decodings {
		if d, err := enc.WithPadding(base64.NoPadding).DecodeString(trimmed); err == nil {
			return d
		}
	}
	return nil
}

func leaks(texts, needles [][]byte) bool {
	for _, needle := range needles {
		for _, t := range texts {
			if bytes.Contains(t, needle) {
				return true
			}
		}
	}
	return false
}

// needles are the forms a credential can take in text: itself, each long
// line of it (a PEM body survives escaping of its newlines), and the stable
// middle of its base64 at each of the three byte offsets it may sit at
// inside a larger encoded buffer.
func (f finder) needles(cred []byte) [][]byte {
	parts := [][]byte{cred}
	for _, line := range bytes.Split(cred, []byte("\n")) {
		if !f.lineNeedles {
			break
		}
		if line = bytes.TrimSpace(line); len(line) >= minNeedle && len(line) < len(cred) {
			parts = append(parts, line)
		}
	}
	var out [][]byte
	for _, p := range parts {
		out = append(out, p)
		for _, enc := range f.needleAlphabets {
			for shift := 0; shift < f.shifts; shift++ {
				e := enc.EncodeToString(append(make([]byte, shift), p...))
				// The first group holds the shift's bytes, the last one
				// depends on what follows: keep what lies in between.
				start := 0
				if shift > 0 {
					start = 4
				}
				if end := len(e) - 4; end-start >= minNeedle {
					out = append(out, []byte(e[start:end]))
				}
			}
		}
	}
	return out
}
