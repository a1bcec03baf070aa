package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elevenmessenger/pinned/internal/connstore"
)

// recordRT records the protocol headers of every exchange.
type recordRT struct {
	next     http.RoundTripper
	mu       sync.Mutex
	versions []string // MCP-Protocol-Version of each request
	sessions []string // Mcp-Session-Id of each response
}

func (r *recordRT) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+httpToken)
	resp, err := r.next.RoundTrip(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.versions = append(r.versions, req.Header.Get("MCP-Protocol-Version"))
	if err == nil {
		r.sessions = append(r.sessions, resp.Header.Get("Mcp-Session-Id"))
	}
	return resp, err
}

// TestModernHTTPIsStateless: a Go SDK client on 2026-07-28 over
// streamable HTTP does discover, tools/list, a read and a confirmed write
// (the input_required round trip, driven by the SDK) and a declined one,
// with every request carrying MCP-Protocol-Version 2026-07-28 and no
// response opening a session; one request reaches the fake.
func TestModernHTTPIsStateless(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	ts := httptest.NewServer(e.srv.Handler(httpToken))
	t.Cleanup(ts.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	rec := &recordRT{next: tr}
	var asked []string
	cs, err := newClient(clientOpts{answer: "accept", asked: &asked}).Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: ts.URL, HTTPClient: &http.Client{Transport: rec}, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if len(listTools(t, cs)) == 0 {
		t.Fatal("no tools")
	}
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_get_viewer", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("read: %v %+v", err, res)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_create_issue", Arguments: issueArgs})
	if err != nil || res.IsError || len(asked) != 1 {
		t.Fatalf("write: %v %+v asked %d", err, res, len(asked))
	}
	if n := requestsTo(e.fake, "POST", "/repos/"); n != 1 {
		t.Errorf("%d requests at the fake, want 1", n)
	}
	// Declined: the same round trip, nothing sent.
	dc, err := newClient(clientOpts{answer: "decline"}).Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: ts.URL, HTTPClient: &http.Client{Transport: rec}, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	if res, err := dc.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_create_issue", Arguments: issueArgs}); err != nil || errorCode(t, res) != CodeConfirmationDeclined {
		t.Fatalf("declined write: %v %+v", err, res)
	}
	if n := requestsTo(e.fake, "POST", "/repos/"); n != 1 {
		t.Errorf("%d requests at the fake after the decline, want 1", n)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// discover, tools/list, the read, the write's two rounds.
	if len(rec.versions) < 5 {
		t.Errorf("%d HTTP exchanges, want at least 5", len(rec.versions))
	}
	for i, v := range rec.versions {
		if v != Revision20260728 {
			t.Errorf("request %d carried MCP-Protocol-Version %q", i, v)
		}
	}
	for i, s := range rec.sessions {
		if s != "" {
			t.Errorf("response %d opened session %q", i, s)
		}
	}
}
