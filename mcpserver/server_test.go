package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elevenmessenger/pinned/internal/connstore"
	"github.com/elevenmessenger/pinned/registry"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name (or rewrites it with -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update)", err, t.Name())
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from the golden file (run go test -update to accept):\n%s", path, got)
	}
}

func listTools(t *testing.T, cs *mcp.ClientSession) []*mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

func toolNames(tools []*mcp.Tool) []string {
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name)
	}
	return out
}

// TestToolsList: initialize (both the 2026-07-28 discover and the legacy
// initialize), then tools/list against the golden files: names, titles,
// schemas and annotations, only for connected services (github read &
// write, stripe read-only; hubspot, linear and dnsimple not connected),
// no write tool under the read cap.
func TestToolsList(t *testing.T) {
	cases := []struct {
		name, tools, protocol, golden string
	}{
		{"full", ToolsFull, "", "tools_full.json"},
		{"full legacy initialize", ToolsFull, "2025-11-25", "tools_full.json"},
		{"compact", ToolsCompact, "", "tools_compact.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite, stripeRead}, tools: tc.tools})
			cs := e.connect(t, clientOpts{answer: "accept", protocol: tc.protocol})
			ir := cs.InitializeResult()
			if ir.ServerInfo == nil || ir.ServerInfo.Name != "pinned" || ir.Capabilities.Tools == nil || ir.Capabilities.Resources == nil {
				t.Fatalf("initialize: %+v", ir)
			}
			if tc.protocol != "" && ir.ProtocolVersion != tc.protocol {
				t.Errorf("negotiated %s, want %s", ir.ProtocolVersion, tc.protocol)
			}
			tools := listTools(t, cs)
			for _, tl := range tools {
				if !toolNameRE.MatchString(tl.Name) {
					t.Errorf("tool name %q does not match %s", tl.Name, toolNameRE)
				}
				if strings.HasPrefix(tl.Name, "hubspot") || strings.HasPrefix(tl.Name, "linear") || strings.HasPrefix(tl.Name, "dnsimple") {
					t.Errorf("tool %s of a service that is not connected", tl.Name)
				}
				if tl.Name == "stripe_create_customer" || (tl.Name == "stripe_op" && strings.Contains(toolJSON(t, tl), "create_customer")) {
					t.Errorf("a write tool under stripe's read-only cap: %s", tl.Name)
				}
			}
			b, _ := json.MarshalIndent(tools, "", "  ")
			golden(t, tc.golden, append(b, '\n'))
		})
	}
}

func toolJSON(t *testing.T, tl *mcp.Tool) string {
	b, err := json.Marshal(tl)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestToolsListSize measures tools/list for every service connected read
// & write, in both modes (docs/MCP.md quotes it; run with -v).
func TestToolsListSize(t *testing.T) {
	var all []connstore.Connection
	for _, m := range registry.Default().Services() {
		c := ghWrite
		c.Service = m.ID
		all = append(all, c)
	}
	sizes := map[string]int{}
	for _, mode := range []string{ToolsFull, ToolsCompact} {
		e := newEnv(t, envOpts{conns: all, tools: mode})
		cs := e.connect(t, clientOpts{answer: "accept"})
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		sizes[mode] = len(b)
		t.Logf("tools/list %s: %d tools, %d bytes, ~%d tokens (bytes/4)", mode, len(res.Tools), len(b), len(b)/4)
	}
	if sizes[ToolsCompact] >= sizes[ToolsFull] {
		t.Errorf("compact (%d bytes) is not smaller than full (%d bytes)", sizes[ToolsCompact], sizes[ToolsFull])
	}
}

// TestNoElicitationNoWriteTools: a client that cannot ask the person gets
// no write tool (full: none listed; compact: the dispatcher without its
// write ops), and a write call anyway is refused with nothing sent: on
// 2026-07-28 with its -32021 (missing required client capability), on
// 2025-11-25 with confirmation_unavailable.
func TestNoElicitationNoWriteTools(t *testing.T) {
	for _, tc := range []struct{ mode, protocol string }{{ToolsFull, ""}, {ToolsCompact, ""}, {ToolsFull, Revision20251125}, {ToolsCompact, Revision20251125}} {
		mode := tc.mode
		t.Run(mode+" "+tc.protocol, func(t *testing.T) {
			e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}, tools: mode})
			cs := e.connect(t, clientOpts{protocol: tc.protocol})
			tools := listTools(t, cs)
			for _, tl := range tools {
				if strings.Contains(toolJSON(t, tl), "create_issue") || !tl.Annotations.ReadOnlyHint {
					t.Errorf("a client without elicitation sees a write tool: %s", toolJSON(t, tl))
				}
			}
			if mode == ToolsFull && !slices.Contains(toolNames(tools), "github_list_repos") {
				t.Errorf("read tools missing: %v", toolNames(tools))
			}
			name, args := "github_create_issue", any(issueArgs)
			if mode == ToolsCompact {
				name, args = "github_op", map[string]any{"op": "create_issue", "args": issueArgs}
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
			var we *jsonrpc.Error
			switch {
			case tc.protocol == "" && (!errors.As(err, &we) || we.Code != mcp.CodeMissingRequiredClientCapabilities):
				t.Errorf("2026-07-28: %v, want error %d", err, mcp.CodeMissingRequiredClientCapabilities)
			case tc.protocol != "" && err != nil:
				t.Fatal(err)
			case tc.protocol != "":
				if got := errorCode(t, res); got != CodeConfirmationUnavailable {
					t.Errorf("code %q, want %s: %s", got, CodeConfirmationUnavailable, toolText(t, res))
				}
			}
			if n := requestsTo(e.fake, "POST", "/repos/"); n != 0 {
				t.Errorf("%d requests reached the fake", n)
			}
		})
	}
}

// TestReadCall: a read tool returns the projected data as
// structuredContent and the same JSON as text.
func TestReadCall(t *testing.T) {
	for _, mode := range []string{ToolsFull, ToolsCompact} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}, tools: mode})
			cs := e.connect(t, clientOpts{answer: "accept"})
			name, args := "github_list_repos", any(map[string]any{"per_page": 3})
			if mode == ToolsCompact {
				name, args = "github_op", map[string]any{"op": "list_repos", "args": map[string]any{"per_page": 3}}
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError {
				t.Fatalf("error: %s", toolText(t, res))
			}
			var out struct {
				Data []map[string]any `json:"data"`
			}
			sc, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(sc, &out); err != nil || len(out.Data) != 3 {
				t.Fatalf("structuredContent %s", sc)
			}
			var fromText, fromStruct any
			_ = json.Unmarshal([]byte(toolText(t, res)), &fromText)
			_ = json.Unmarshal(sc, &fromStruct)
			if fromText == nil || !reflect.DeepEqual(fromText, fromStruct) {
				t.Errorf("text copy %s differs from structuredContent %s", toolText(t, res), sc)
			}
			m, _ := registry.Default().Service("github")
			op, _ := m.Op("list_repos")
			for _, repo := range out.Data {
				for k := range repo {
					if !slices.Contains(op.Pick.Fields, k) {
						t.Errorf("field %q is not in the pick", k)
					}
				}
				if repo["full_name"] == nil {
					t.Errorf("full_name missing: %v", repo)
				}
			}
			if n := requestsTo(e.fake, "GET", "/user/repos"); n != 1 {
				t.Errorf("%d requests to /user/repos, want 1", n)
			}
		})
	}
}

// TestWriteConfirmedAndDeclined: the person is asked with the manifest's
// rendered confirm sentence; accept sends exactly one request, decline
// and cancel none. Both protocol paths: 2026-07-28 (the client retries the
// input_required call) and 2025-11-25 (the server asks with
// elicitation/create).
func TestWriteConfirmedAndDeclined(t *testing.T) {
	cases := []struct {
		answer, protocol string
		wantCode         string
		wantPOST         int
	}{
		{"accept", "", "", 1},
		{"accept", "2025-11-25", "", 1},
		{"decline", "", CodeConfirmationDeclined, 0},
		{"decline", "2025-11-25", CodeConfirmationDeclined, 0},
		{"cancel", "", CodeConfirmationDeclined, 0},
	}
	for _, tc := range cases {
		t.Run(tc.answer+" "+tc.protocol, func(t *testing.T) {
			e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
			var asked []string
			cs := e.connect(t, clientOpts{answer: tc.answer, protocol: tc.protocol, asked: &asked})
			wantVersion := tc.protocol
			if wantVersion == "" {
				wantVersion = "2026-07-28" // the SDK's latest: input_required rounds driven by the client
			}
			if got := cs.InitializeResult().ProtocolVersion; got != wantVersion {
				t.Errorf("negotiated %s, want %s", got, wantVersion)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_create_issue", Arguments: issueArgs})
			if err != nil {
				t.Fatal(err)
			}
			if got := errorCode(t, res); got != tc.wantCode {
				t.Fatalf("code %q, want %q: %s", got, tc.wantCode, toolText(t, res))
			}
			if len(asked) != 1 || asked[0] != issueSpoken {
				t.Errorf("asked %q, want once %q", asked, issueSpoken)
			}
			if n := requestsTo(e.fake, "POST", "/repos/pinned-tester/notes/issues"); n != tc.wantPOST {
				t.Errorf("%d requests reached the fake, want %d", n, tc.wantPOST)
			}
			if tc.wantCode == "" && !strings.Contains(toolText(t, res), `"html_url"`) {
				t.Errorf("result %s", toolText(t, res))
			}
		})
	}
}

// firstRound makes the first round of a write call by hand (a client that
// does not retry by itself) and returns the requestState.
func firstRound(t *testing.T, cs *mcp.ClientSession, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_create_issue", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("want input_required, got %+v", res)
	}
	ep, ok := res.InputRequests["confirm"].(*mcp.ElicitParams)
	// An issue opened earlier in the session returned the title: the
	// confirmation may say so after the consent.
	if rest, found := strings.CutPrefix(ep.Message, issueSpoken); !ok || !found ||
		rest != "" && rest != "\nWhere its values came from (read earlier in this session):\n- the title contains text returned by github_create_issue: \"Hello from MCP\"" {
		t.Fatalf("input request %#v", res.InputRequests["confirm"])
	}
	return res.RequestState
}

func retry(t *testing.T, cs *mcp.ClientSession, args map[string]any, state, action string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "github_create_issue", Arguments: args, RequestState: state,
		InputResponses: mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: action}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestConfirmationBinding: the requestState of a confirmation comes back
// through the client, so the client can replay it, change the args, send
// it late or from another session. Each is refused before anything is
// sent (the client here drives the 2026-07-28 rounds by hand, as a
// hostile one would; a 2025-11-25 client can send the same params).
func TestConfirmationBinding(t *testing.T) {
	changed := map[string]any{}
	for k, v := range issueArgs {
		changed[k] = v
	}
	changed["title"] = "Something else"
	cases := []struct {
		name     string
		protocol string
		attack   func(t *testing.T, e *env, cs *mcp.ClientSession, state string) *mcp.CallToolResult
		want     string
		wantPOST int
	}{
		{"replayed", "", func(t *testing.T, e *env, cs *mcp.ClientSession, state string) *mcp.CallToolResult {
			if res := retry(t, cs, issueArgs, state, "accept"); res.IsError {
				t.Fatalf("the confirmed call failed: %s", toolText(t, res))
			}
			return retry(t, cs, issueArgs, state, "accept")
		}, CodeConfirmationReplayed, 1},
		{"replayed after decline", "", func(t *testing.T, e *env, cs *mcp.ClientSession, state string) *mcp.CallToolResult {
			if got := errorCode(t, retry(t, cs, issueArgs, state, "decline")); got != CodeConfirmationDeclined {
				t.Fatalf("decline: %s", got)
			}
			return retry(t, cs, issueArgs, state, "accept")
		}, CodeConfirmationReplayed, 0},
		{"changed args", "", func(t *testing.T, e *env, cs *mcp.ClientSession, state string) *mcp.CallToolResult {
			return retry(t, cs, changed, state, "accept")
		}, CodeConfirmationMismatch, 0},
		{"changed args then the right ones", "", func(t *testing.T, e *env, cs *mcp.ClientSession, state string) *mcp.CallToolResult {
			retry(t, cs, changed, state, "accept")
			return retry(t, cs, issueArgs, state, "accept") // the record is spent
		}, CodeConfirmationReplayed, 0},
		{"expired", "", func(t *testing.T, e *env, cs *mcp.ClientSession, state string) *mcp.CallToolResult {
			e.clock.advance(DefaultConfirmTTL + time.Second)
			return retry(t, cs, issueArgs, state, "accept")
		}, CodeConfirmationExpired, 0},
		// 2026-07-28 has no sessions: the same person's other connection
		// (another replica, with the same key) may finish the call, once.
		{"another connection of the same person", "", func(t *testing.T, e *env, cs *mcp.ClientSession, state string) *mcp.CallToolResult {
			other := e.connect(t, clientOpts{answer: "accept", manual: true})
			if res := retry(t, other, issueArgs, state, "accept"); res.IsError {
				t.Fatalf("the confirmed call failed: %s", toolText(t, res))
			}
			return retry(t, cs, issueArgs, state, "accept")
		}, CodeConfirmationReplayed, 1},
		{"made up", "", func(t *testing.T, e *env, cs *mcp.ClientSession, state string) *mcp.CallToolResult {
			return retry(t, cs, issueArgs, "AAAAAAAAAAAAAAAAAAAAAA", "accept")
		}, CodeConfirmationInvalid, 0},
		{"forged by a 2025-11-25 client", "2025-11-25", func(t *testing.T, e *env, cs *mcp.ClientSession, state string) *mcp.CallToolResult {
			return retry(t, cs, issueArgs, "AAAAAAAAAAAAAAAAAAAAAA", "accept")
		}, CodeConfirmationInvalid, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
			cs := e.connect(t, clientOpts{answer: "accept", manual: true, protocol: tc.protocol})
			state := ""
			if tc.protocol == "" {
				state = firstRound(t, cs, issueArgs)
			}
			res := tc.attack(t, e, cs, state)
			if got := errorCode(t, res); got != tc.want {
				t.Errorf("code %q, want %s: %+v", got, tc.want, res)
			}
			if n := requestsTo(e.fake, "POST", "/repos/"); n != tc.wantPOST {
				t.Errorf("%d requests reached the fake, want %d", n, tc.wantPOST)
			}
		})
	}
}

// TestWriteUnderReadCap: a write op of a read-only connection (through the
// compact dispatcher, which takes any op name) is refused by the sidecar's
// grant check (access_denied), without asking the person.
func TestWriteUnderReadCap(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{stripeRead}, tools: ToolsCompact})
	var asked []string
	cs := e.connect(t, clientOpts{answer: "accept", asked: &asked})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "stripe_op", Arguments: map[string]any{"op": "create_customer", "args": map[string]any{"email": "a@example.com"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := errorCode(t, res); got != "access_denied" || len(asked) != 0 {
		t.Errorf("code %q asked %v: %s", got, asked, toolText(t, res))
	}
	if n := requestsTo(e.fake, "POST", "/v1/customers"); n != 0 {
		t.Errorf("%d requests reached the fake", n)
	}
}

// TestOversizedResult: a result over the cap is refused with its size and
// the cap, never cut short.
func TestOversizedResult(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}, maxResult: 16 << 10})
	cs := e.connect(t, clientOpts{answer: "accept"})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_list_repos", Arguments: map[string]any{"per_page": 100}})
	if err != nil {
		t.Fatal(err)
	}
	if got := errorCode(t, res); got != CodeResultTooLarge {
		t.Fatalf("code %q: %s", got, toolText(t, res))
	}
	if res.StructuredContent != nil || !strings.Contains(toolText(t, res), "16384-byte cap") || !strings.Contains(toolText(t, res), "per_page") {
		t.Errorf("result %s", toolText(t, res))
	}
}

// TestNotConnectedErrors: the store's connection removed after start is
// reported as not connected; a provider 401 says how to reconnect and is
// never "token expired".
func TestNotConnectedErrors(t *testing.T) {
	bad := ghWrite
	bad.Service, bad.Token = "linear", "lin_api_not_a_valid_key_0000000000000"
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite, bad}})
	cs := e.connect(t, clientOpts{answer: "accept"})
	if err := e.store.Remove("github"); err != nil {
		t.Fatal(err)
	}
	res, _ := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_get_viewer", Arguments: map[string]any{}})
	if got := errorCode(t, res); got != CodeNotConnected {
		t.Errorf("code %q", got)
	}
	res, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "linear_get_viewer", Arguments: map[string]any{}})
	txt := toolText(t, res)
	if errorCode(t, res) != "upstream_error" || !strings.Contains(txt, "HTTP 401") || !strings.Contains(txt, "pinned connect linear") || strings.Contains(txt, "lin_api_not") {
		t.Errorf("401: %s", txt)
	}
}

// TestResources: every manifest is a resource pinned://registry/<id> with
// the embedded manifest's bytes.
func TestResources(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	cs := e.connect(t, clientOpts{})
	res, err := cs.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	want := []string{"pinned://registry/dnsimple", "pinned://registry/github", "pinned://registry/hubspot", "pinned://registry/linear", "pinned://registry/stripe"}
	slices.Sort(uris)
	if !slices.Equal(uris, want) {
		t.Errorf("resources %v", uris)
	}
	rr, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "pinned://registry/github"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].Text != string(registry.Default().Raw("github")) || rr.Contents[0].MIMEType != "application/json" {
		t.Errorf("contents %+v", rr.Contents)
	}
}

// TestScanSecretsFinds: the transcript scan finds a token, a refresh
// token and a window of the sealed store file (so a clean scan means
// something).
func TestScanSecretsFinds(t *testing.T) {
	c := ghWrite
	c.Kind, c.Refresh = "oauth", "ghr_refresh_token_for_the_scan_test_0000"
	e := newEnv(t, envOpts{conns: []connstore.Connection{c}})
	raw, err := os.ReadFile(e.store.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range []string{
		"x" + string(c.Token) + "y",
		`{"r":"` + string(c.Refresh) + `"}`,
		base64.StdEncoding.EncodeToString(raw),
		hex.EncodeToString(raw[40:100]),
	} {
		if len(findSecrets(tr, e.store)) == 0 {
			t.Errorf("nothing found in %.40q", tr)
		}
	}
	if got := findSecrets(`{"data":[{"login":"pinned-tester"}]}`, e.store); len(got) != 0 {
		t.Errorf("found %d secrets in a clean transcript", len(got))
	}
}

// TestDocsListEveryCode: docs/MCP.md's table lists every code of this
// package.
func TestDocsListEveryCode(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "MCP.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{CodeNotConnected, CodeResultTooLarge, CodeBadArguments, CodeStoreFailed,
		CodeConfirmationUnavailable, CodeConfirmationDeclined, CodeConfirmationInvalid, CodeConfirmationReplayed,
		CodeConfirmationMismatch, CodeConfirmationExpired} {
		if !strings.Contains(string(doc), "| `"+c+"` |") {
			t.Errorf("docs/MCP.md does not list %s", c)
		}
	}
}

// TestCompactArgsStrict: the compact dispatcher refuses arguments that
// are not exactly {op, args} in strict JSON (a duplicate "op" could be
// read two ways), with nothing sent.
func TestCompactArgsStrict(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}, tools: ToolsCompact})
	cs := e.connect(t, clientOpts{answer: "accept"})
	cases := []struct {
		name string
		args json.RawMessage
		want string
	}{
		{"duplicate op", json.RawMessage(`{"op":"get_viewer","op":"create_issue","args":{}}`), CodeBadArguments},
		{"unknown member", json.RawMessage(`{"op":"get_viewer","args":{},"grant":"x"}`), CodeBadArguments},
		{"no op", json.RawMessage(`{"args":{}}`), CodeBadArguments},
		{"unknown op", json.RawMessage(`{"op":"delete_repo","args":{}}`), "unknown_op"},
		{"args not an object", json.RawMessage(`{"op":"get_viewer","args":[1]}`), CodeBadArguments},
		{"args break the schema", json.RawMessage(`{"op":"list_repos","args":{"per_page":500}}`), "bad_args"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.fake.Reset()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_op", Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			if got := errorCode(t, res); got != tc.want {
				t.Errorf("code %q, want %s: %s", got, tc.want, toolText(t, res))
			}
			if n := len(e.fake.Requests()); n != 0 {
				t.Errorf("%d requests reached the fake", n)
			}
		})
	}
}

// TestScopeFailure: a provider 403 (a token without the scope) is
// reported as a missing scope or permission, never as an expired token.
func TestScopeFailure(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	e.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/user/repos" {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"message":"Resource not accessible by personal access token","documentation_url":"https://docs.github.com/rest"}`))
		return true
	})
	t.Cleanup(func() { e.fake.SetHandler(nil) })
	cs := e.connect(t, clientOpts{answer: "accept"})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_list_repos", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	txt := toolText(t, res)
	if errorCode(t, res) != "upstream_error" || !strings.Contains(txt, "lacks the scope or permission") ||
		!strings.Contains(txt, "Resource not accessible by personal access token") || !strings.Contains(txt, `"upstream_status":403`) ||
		strings.Contains(strings.ToLower(txt), "expired") {
		t.Errorf("403: %s", txt)
	}
}

// TestNextPage: a list op's result carries next, the args of the next
// page; calling the tool with them reads that page.
func TestNextPage(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	cs := e.connect(t, clientOpts{answer: "accept"})
	var seen []any
	args := map[string]any{"per_page": 2}
	for page := 1; page <= 2; page++ {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_list_repos", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("page %d: %v %+v", page, err, res)
		}
		var out struct {
			Data []map[string]any `json:"data"`
			Next map[string]any   `json:"next"`
		}
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil || len(out.Data) != 2 || out.Next == nil {
			t.Fatalf("page %d: %s", page, b)
		}
		if out.Next["page"] != float64(page+1) || out.Next["per_page"] != float64(2) {
			t.Errorf("page %d: next %v", page, out.Next)
		}
		for _, r := range out.Data {
			if slices.Contains(seen, r["full_name"]) {
				t.Errorf("%v twice", r["full_name"])
			}
			seen = append(seen, r["full_name"])
		}
		args = out.Next
	}
}

// TestConfigDefaults: a zero or negative field is its documented default;
// a positive one is kept.
func TestConfigDefaults(t *testing.T) {
	tests := []struct {
		name           string
		cfg            Config
		tools          string
		confirm, grant time.Duration
		maxResult      int
	}{
		{name: "zero", cfg: Config{}, tools: ToolsFull, confirm: DefaultConfirmTTL, grant: DefaultGrantTTL,
			maxResult: DefaultMaxResultBytes},
		{name: "negative", cfg: Config{ConfirmTTL: -1, GrantTTL: -1, MaxResultBytes: -1}, tools: ToolsFull,
			confirm: DefaultConfirmTTL, grant: DefaultGrantTTL, maxResult: DefaultMaxResultBytes},
		{name: "set", cfg: Config{Tools: ToolsCompact, ConfirmTTL: time.Second, GrantTTL: 2 * time.Second, MaxResultBytes: 3},
			tools: ToolsCompact, confirm: time.Second, grant: 2 * time.Second, maxResult: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg
			if c.tools() != tt.tools || c.confirmTTL() != tt.confirm || c.grantTTL() != tt.grant || c.maxResultBytes() != tt.maxResult {
				t.Errorf("got %s %v %v %d", c.tools(), c.confirmTTL(), c.grantTTL(), c.maxResultBytes())
			}
		})
	}
	if (&Config{}).registry() != registry.Default() {
		t.Error("a nil Registry is not registry.Default()")
	}
}
