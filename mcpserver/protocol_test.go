package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/connstore"
)

// stdioSession runs the server on a StdioTransport and returns the agent's
// end; the session ends with the test.
func stdioSession(t *testing.T, e *env) *stdioPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	done := make(chan error, 1)
	go func() { done <- e.srv.MCP().Run(ctx, &StdioTransport{In: inR, Out: outW, Versions: e.srv.Versions()}) }()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Run did not end at the end of stdin")
		}
		cancel()
		outR.Close()
	})
	return &stdioPeer{in: inW, out: bufio.NewReader(outR)}
}

// canonical re-encodes a JSON value with sorted keys.
func canonical(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const (
	legacyInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`
	modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
)

// protocolScripts are the golden transcripts, one per revision: what the
// same questions get on each era (testdata/protocol_<revision>.txt).
var protocolScripts = map[string][]string{
	Revision20251125: {
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		legacyInit,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"resources/templates/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"prompts/list"}`,
		`{"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"x"},"argument":{"name":"a","value":"b"}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"resources/subscribe","params":{"uri":"pinned://registry/stripe"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"stripe_get_balance","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"ping"}`,
	},
	Revision20260728: {
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`,
		`{"jsonrpc":"2.0","id":3,"method":"resources/templates/list","params":{` + modernMeta + `}}`,
		`{"jsonrpc":"2.0","id":4,"method":"prompts/list","params":{` + modernMeta + `}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"stripe_get_balance","arguments":{},` + modernMeta + `}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`,
	},
}

// TestProtocolGolden: each revision's transcript over stdio matches its
// golden file: 2025-11-25 (a request before initialize is -32600; then
// no ttlMs, cacheScope or resultType; undeclared capabilities -32601)
// and 2026-07-28 (server/discover; per-request _meta; cache hints;
// serverInfo in each result's _meta; -32602 without capabilities,
// -32022 for an unknown version).
func TestProtocolGolden(t *testing.T) {
	for _, rev := range []string{Revision20251125, Revision20260728} {
		t.Run(rev, func(t *testing.T) {
			e := newEnv(t, envOpts{conns: []connstore.Connection{stripeRead}})
			p := stdioSession(t, e)
			var b strings.Builder
			for _, line := range protocolScripts[rev] {
				p.send(t, line)
				fmt.Fprintf(&b, "> %s\n", line)
				if strings.Contains(line, `"notifications/`) {
					continue
				}
				fmt.Fprintf(&b, "< %s\n", canonical(t, p.answer(t)))
			}
			golden(t, "protocol_"+rev+".txt", []byte(b.String()))
		})
	}
}

// draftIn returns the path of the first 2026-07-28 result member found
// anywhere in v ("" when none).
func draftIn(v any, path string) string {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if slices.Contains(draftResultFields, k) {
				return path + "." + k
			}
			if p := draftIn(c, path+"."+k); p != "" {
				return p
			}
		}
	case []any:
		for i, c := range x {
			if p := draftIn(c, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	}
	return ""
}

// TestLegacyGetsNoDraftField: on a 2025-11-25 session, no message the
// server writes — lists, reads, a read call, a write's elicitation and
// its result — holds a member 2026-07-28 added.
func TestLegacyGetsNoDraftField(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite, stripeRead}})
	p := stdioSession(t, e)
	p.send(t, legacyInit)
	p.answer(t)
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	var got []map[string]any
	for i, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"resources/templates/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"pinned://registry/stripe"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"github_get_viewer","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"github_create_issue","arguments":{"owner":"pinned-tester","repo":"notes","title":"t"}}}`,
	} {
		p.send(t, line)
		a := p.answer(t)
		got = append(got, a)
		if i == 5 { // the server asks the person: elicitation/create
			if a["method"] != "elicitation/create" {
				t.Fatalf("want elicitation/create, got %v", a)
			}
			p.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept"}}`, canonical(t, a["id"])))
			got = append(got, p.answer(t))
		}
	}
	for _, a := range got {
		if path := draftIn(a, "$"); path != "" {
			t.Errorf("a legacy session got %s: %.300s", path, canonical(t, a))
		}
		if a["error"] != nil {
			t.Errorf("error: %v", a)
		}
	}
	if n := requestsTo(e.fake, "POST", "/repos/"); n != 1 {
		t.Errorf("%d writes reached the fake, want 1", n)
	}
}

// rpcError is an answer's error code and data ("no error": code 0).
func rpcError(a map[string]any) (float64, map[string]any) {
	e, _ := a["error"].(map[string]any)
	if e == nil {
		return 0, nil
	}
	d, _ := e["data"].(map[string]any)
	return e["code"].(float64), d
}

// TestProtocolEraMismatch: a server started for 2025-11-25-only clients
// answers a 2026-07-28 request (and server/discover) -32022 naming its
// versions; one started for 2026-07-28 answers initialize -32022 naming
// 2026-07-28, and serves the modern request. Over stdio and HTTP.
func TestProtocolEraMismatch(t *testing.T) {
	modernList := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`
	discover := `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{` + modernMeta + `}}`
	cases := []struct {
		name, protocol, line string
		code                 float64
		supported            []any
		requested            string
	}{
		{"legacy-only server, modern request", Revision20251125, modernList, -32022, []any{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}, "2026-07-28"},
		{"legacy-only server, server/discover", Revision20251125, discover, -32022, []any{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}, "2026-07-28"},
		{"modern-only server, initialize", Revision20260728, legacyInit, -32022, []any{"2026-07-28"}, "2025-11-25"},
		{"modern-only server, modern request", Revision20260728, modernList, 0, nil, ""},
		{"both, initialize", ProtocolBoth, legacyInit, 0, nil, ""},
		{"both, modern request", ProtocolBoth, modernList, 0, nil, ""},
	}
	for _, tc := range cases {
		t.Run("stdio "+tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{conns: []connstore.Connection{stripeRead}, protocol: tc.protocol})
			p := stdioSession(t, e)
			p.send(t, tc.line)
			a := p.answer(t)
			checkEra(t, a, tc.code, tc.supported, tc.requested)
		})
		t.Run("http "+tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{conns: []connstore.Connection{stripeRead}, protocol: tc.protocol})
			ts := httptest.NewServer(e.srv.Handler(httpToken))
			t.Cleanup(ts.Close)
			req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(tc.line))
			req.Header.Set("Authorization", "Bearer "+httpToken)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if strings.Contains(tc.line, modernMeta) {
				var m struct{ Method string }
				_ = json.Unmarshal([]byte(tc.line), &m)
				req.Header.Set("MCP-Protocol-Version", Revision20260728)
				req.Header.Set("Mcp-Method", m.Method)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
				t.Cleanup(func() { closeSession(ts.URL, id) })
			}
			body, _ := io.ReadAll(resp.Body)
			checkEra(t, sseOrJSON(t, body), tc.code, tc.supported, tc.requested)
		})
	}
}

func checkEra(t *testing.T, a map[string]any, code float64, supported []any, requested string) {
	t.Helper()
	got, data := rpcError(a)
	if got != code {
		t.Fatalf("code %v, want %v: %v", got, code, a)
	}
	if code == 0 {
		if a["result"] == nil {
			t.Fatalf("no result: %v", a)
		}
		return
	}
	if !slices.Equal(data["supported"].([]any), supported) || data["requested"] != requested {
		t.Errorf("data %v, want supported %v requested %q", data, supported, requested)
	}
}

// sseOrJSON reads a streamable HTTP answer: one JSON object, or the last
// data line of an event stream.
func sseOrJSON(t *testing.T, body []byte) map[string]any {
	t.Helper()
	s := strings.TrimSpace(string(body))
	if !strings.HasPrefix(s, "{") {
		var last string
		for _, l := range strings.Split(s, "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				last = d
			}
		}
		s = last
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("answer %q: %v", body, err)
	}
	return m
}

// closeSession ends a legacy HTTP session (goleak).
func closeSession(url, id string) {
	del, _ := http.NewRequest(http.MethodDelete, url, nil)
	del.Header.Set("Authorization", "Bearer "+httpToken)
	del.Header.Set("Mcp-Session-Id", id)
	if r, err := http.DefaultClient.Do(del); err == nil {
		r.Body.Close()
	}
}

// TestHTTPRefusalsJSON: the HTTP transport's own refusals (no token, a
// rebinding Host, a browser's cross-origin request, a request before
// initialize) are JSON-RPC error responses with the status and a stable
// data.code; none echoes the token.
func TestHTTPRefusalsJSON(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{stripeRead}})
	ts := httptest.NewServer(e.srv.Handler(httpToken))
	t.Cleanup(ts.Close)
	cases := []struct {
		name     string
		hdr      map[string]string
		body     string
		status   int
		code     float64
		dataCode string
	}{
		{"no token", map[string]string{"Authorization": ""}, legacyInit, 401, -32600, CodeUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer " + httpToken + "x"}, legacyInit, 401, -32600, CodeUnauthorized},
		{"rebinding Host", map[string]string{"Host": "evil.example"}, legacyInit, 403, -32600, CodeForbiddenHost},
		{"cross-origin", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, legacyInit, 403, -32600, CodeForbiddenOrigin},
		{"before initialize", nil, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, 400, -32600, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+httpToken)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tc.hdr {
				if k == "Host" {
					req.Host = v
				} else {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d %s, want %d JSON: %s", resp.StatusCode, resp.Header.Get("Content-Type"), tc.status, body)
			}
			var a map[string]any
			if err := json.Unmarshal(body, &a); err != nil || a["jsonrpc"] != "2.0" {
				t.Fatalf("not a JSON-RPC response: %s", body)
			}
			code, data := rpcError(a)
			if code != tc.code || tc.dataCode != "" && data["code"] != tc.dataCode {
				t.Errorf("error %v %v, want %v %s", code, data, tc.code, tc.dataCode)
			}
			if strings.Contains(string(body), httpToken[:16]) {
				t.Errorf("the refusal echoes the token: %s", body)
			}
		})
	}
}

// TestSDKRefusalsJSON: the SDK's own HTTP refusals come out in the same
// JSON-RPC error shape (id null, data.code), not as plain text.
func TestSDKRefusalsJSON(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{stripeRead}})
	ts := httptest.NewServer(e.srv.Handler(httpToken))
	t.Cleanup(ts.Close)
	cases := []struct {
		name, method, ctype, accept, session string
		status                               int
		dataCode                             string
	}{
		{"wrong Content-Type", http.MethodPost, "text/plain", "application/json, text/event-stream", "", 415, "unsupported_media_type"},
		{"no event-stream in Accept", http.MethodPost, "application/json", "application/json", "", 400, "bad_request"},
		{"unknown session", http.MethodPost, "application/json", "application/json, text/event-stream", "no-such-session", 404, "not_found"},
		{"GET without a session", http.MethodGet, "", "text/event-stream", "", 400, "bad_request"},
		{"PUT", http.MethodPut, "application/json", "application/json, text/event-stream", "", 405, "method_not_allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			req.Header.Set("Authorization", "Bearer "+httpToken)
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			req.Header.Set("Accept", tc.accept)
			if tc.session != "" {
				req.Header.Set("Mcp-Session-Id", tc.session)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var a map[string]any
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &a) != nil {
				t.Fatalf("%d %s %q, want %d JSON", resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.status)
			}
			if code, data := rpcError(a); code != -32600 || data["code"] != tc.dataCode || a["id"] != nil {
				t.Errorf("answer %s, want -32600 with data.code %s", body, tc.dataCode)
			}
		})
	}
}

// TestToolsListDeterministic: on 2026-07-28, tools/list is the same bytes
// on every call and on every replica with the same connections (a cache
// keyed by the request may serve it), sorted by name, with its cache
// hints.
func TestToolsListDeterministic(t *testing.T) {
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`
	var answers []string
	for range 2 {
		e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite, stripeRead}})
		p := stdioSession(t, e)
		for range 2 {
			p.send(t, list)
			answers = append(answers, canonical(t, p.answer(t)))
		}
	}
	for i, a := range answers[1:] {
		if a != answers[0] {
			t.Fatalf("answer %d differs from the first:\n%s\n%s", i+1, a, answers[0])
		}
	}
	var a struct {
		Result struct {
			TTLMs      int    `json:"ttlMs"`
			CacheScope string `json:"cacheScope"`
			Tools      []struct{ Name string }
		}
	}
	if err := json.Unmarshal([]byte(answers[0]), &a); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range a.Result.Tools {
		names = append(names, tl.Name)
	}
	if a.Result.TTLMs != ToolsTTLMs || a.Result.CacheScope != "private" || len(names) < 2 || !slices.IsSorted(names) {
		t.Errorf("ttlMs %d cacheScope %q names %v", a.Result.TTLMs, a.Result.CacheScope, names)
	}
}
