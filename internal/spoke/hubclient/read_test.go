package hubclient

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/spokekit/spokekit/internal/api/fleetconfig"
)

// pagedServer serves Spokes s0..s(n-1), limit to a page, each page's
// continue token the index of its first item; a page starting at failAt
// fails.
func pagedServer(t *testing.T, n, failAt int) (*Client, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		asked = append(asked, q.Get("continue"))
		mu.Unlock()
		from := 0
		if c := q.Get("continue"); c != "" {
			_, _ = fmt.Sscan(c, &from)
		}
		if from == failAt {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}`, http.StatusGone)
			return
		}
		var limit int
		_, _ = fmt.Sscan(q.Get("limit"), &limit)
		to := min(from+limit, n)
		next := ""
		if to < n {
			next = fmt.Sprint(to)
		}
		items := make([]string, 0, to-from)
		for i := from; i < to; i++ {
			// The items carry a field called continue of their own: only
			// the list's metadata.continue is the token.
			items = append(items, fmt.Sprintf(`{"metadata":{"name":"s%d","namespace":"mural-system","annotations":{"continue":"x"}},"continue":"no"}`, i))
		}
		fmt.Fprintf(w, `{"kind":"SpokeList","apiVersion":"v1beta1","metadata":{"resourceVersion":"9","continue":%q},"items":[%s]}`, next, strings.Join(items, ","))
	}))
	t.Cleanup(srv.Close)
	kube := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})
	c := NewForClients(nil, kube, "mural-system")
	c.ChunkSize = 4
	return c, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), asked...) }
}

// Every page is read, in order, each request with the token of the page
// before.
func TestListReadsEveryPageInOrder(t *testing.T) {
	c, asked := pagedServer(t, 10, -1)
	spokes, err := List[fleetconfig.Spoke](t.Context(), c, fleetconfig.SpokeResource, "mural-system", "")
	assert.NilError(t, err)
	names := make([]string, len(spokes))
	for i := range spokes {
		names[i] = spokes[i].Name
	}
	assert.Check(t, is.DeepEqual(names, []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"}))
	assert.Check(t, is.DeepEqual(asked(), []string{"", "4", "8"}))
}

// A page that fails fails the list: never a shorter list.
func TestListFailsWithAFailedPage(t *testing.T) {
	c, _ := pagedServer(t, 10, 8)
	_, err := List[fleetconfig.Spoke](t.Context(), c, fleetconfig.SpokeResource, "mural-system", "")
	assert.ErrorContains(t, err, "")
}

func TestContinueToken(t *testing.T) {
	for raw, want := range map[string]string{
		`{"metadata":{"continue":"abc"},"items":[]}`:                                               "abc",
		`{"kind":"L","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"continue":"no"}}]}`: "",
		`{"items":[{"continue":"no"}],"metadata":{"continue":"late"}}`:                             "late",
		`{"metadata":null}`: "",
		`{}`:                "",
	} {
		got, err := continueToken([]byte(raw))
		assert.Check(t, err, raw)
		assert.Check(t, is.Equal(got, want), raw)
	}
	for _, bad := range []string{`{"metadata":{"continue":1}}`, `{"metadata":`, `[`} {
		_, err := continueToken([]byte(bad))
		assert.Check(t, err != nil, bad)
	}
}

// A list page is the server's: whatever it holds, reading its token never
// panics, and the token read is the one a full decode finds (where the page
// has one metadata: the read stops at the first, the decode keeps the last).
func FuzzContinueToken(f *testing.F) {
	f.Add([]byte(`{"metadata":{"continue":"abc"},"items":[]}`))
	f.Add([]byte(`{"items":[{"continue":"no"}],"metadata":{"continue":"late"}}`))
	f.Add([]byte(`{"metadata":{"continue":"a\u0000b","continue":"c"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		token, err := continueToken(raw)
		var page struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
		}
		once := bytes.Count(raw, []byte(`"metadata"`)) == 1
		if err == nil && once && listJSON.Unmarshal(raw, &page) == nil && page.Metadata.Continue != token {
			t.Fatalf("token %q, full decode %q", token, page.Metadata.Continue)
		}
	})
}
