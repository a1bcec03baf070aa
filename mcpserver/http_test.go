package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elevenmessenger/pinned/internal/connstore"
)

const httpToken = "mcp-http-test-token-0123456789abcdef"

type bearerRT struct {
	token string
	next  http.RoundTripper
}

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestStreamableHTTP: the same server over streamable HTTP with a bearer
// token: refused without it; with it, on either era, the golden
// tools/list, a read call, and a write call confirmed and declined. On
// 2026-07-28 every request is stateless and the confirmation is an
// input_required result the client retries; on 2025-11-25 it travels as
// elicitation/create on the call's event stream of the session.
func TestStreamableHTTP(t *testing.T) {
	for _, tc := range []struct{ protocol, answer string }{
		{"", "accept"}, {"", "decline"}, {"2025-11-25", "accept"}, {"2025-11-25", "decline"},
	} {
		t.Run(tc.protocol+" "+tc.answer, func(t *testing.T) {
			testStreamableHTTP(t, tc.protocol, tc.answer)
		})
	}
}

func testStreamableHTTP(t *testing.T, protocol, answer string) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite, stripeRead}})
	ts := httptest.NewServer(e.srv.Handler(httpToken))
	t.Cleanup(ts.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)

	resp, err := http.Post(ts.URL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("without the token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}

	var asked []string
	c := newClient(clientOpts{answer: answer, asked: &asked})
	cs, err := c.Connect(context.Background(), &mcp.LoggingTransport{Writer: e.wire, Transport: &mcp.StreamableClientTransport{
		Endpoint: ts.URL, HTTPClient: &http.Client{Transport: bearerRT{httpToken, tr}}, MaxRetries: -1,
	}}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	wantVersion := protocol
	if wantVersion == "" {
		wantVersion = Revision20260728
	}
	if v := cs.InitializeResult().ProtocolVersion; v != wantVersion {
		t.Errorf("negotiated %s over HTTP, want %s", v, wantVersion)
	}
	tools := listTools(t, cs)
	b, _ := json.MarshalIndent(tools, "", "  ")
	want, _ := os.ReadFile(filepath.Join("testdata", "tools_full.json"))
	if string(append(b, '\n')) != string(want) {
		t.Errorf("tools/list over HTTP differs from testdata/tools_full.json")
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_get_viewer", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(toolText(t, res), `"login"`) {
		t.Fatalf("read: %v %+v", err, res)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_create_issue", Arguments: issueArgs})
	if err != nil {
		t.Fatal(err)
	}
	wantPOST, wantCode := 1, ""
	if answer == "decline" {
		wantPOST, wantCode = 0, CodeConfirmationDeclined
	}
	if got := errorCode(t, res); got != wantCode {
		t.Errorf("code %q, want %q", got, wantCode)
	}
	// The owner was read in this session: the confirmation says so.
	if want := issueSpoken + "\nWhere its values came from (read earlier in this session):\n- the owner contains text returned by github_get_viewer: \"pinned-tester\""; len(asked) != 1 || asked[0] != want {
		t.Errorf("asked %q, want %q", asked, want)
	}
	if n := requestsTo(e.fake, "POST", "/repos/"); n != wantPOST {
		t.Errorf("%d requests reached the fake, want %d", n, wantPOST)
	}
}
