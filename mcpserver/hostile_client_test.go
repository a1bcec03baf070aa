package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elevenmessenger/pinned/internal/connstore"
)

// TestConcurrentConfirmRunsOnce: the client sends the retry of one confirmation
// twice at once (run with -race). Exactly one runs; the other is
// confirmation_replayed; one request ever reaches the provider.
func TestConcurrentConfirmRunsOnce(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	cs := e.connect(t, clientOpts{answer: "accept", manual: true})
	for round := 0; round < 4; round++ {
		e.fake.Reset()
		state := firstRound(t, cs, issueArgs)
		codes := make([]string, 8)
		var wg sync.WaitGroup
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
					Name: "github_create_issue", Arguments: issueArgs, RequestState: state,
					InputResponses: mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}},
				})
				if err != nil {
					codes[i] = "transport: " + err.Error()
					return
				}
				codes[i] = "ok"
				if res.IsError {
					var b struct {
						Error struct{ Code string } `json:"error"`
					}
					_ = json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &b)
					codes[i] = b.Error.Code
				}
			}()
		}
		wg.Wait()
		ok, replayed := 0, 0
		for _, c := range codes {
			switch c {
			case "ok":
				ok++
			case CodeConfirmationReplayed:
				replayed++
			default:
				t.Errorf("round %d: code %q", round, c)
			}
		}
		if ok != 1 || replayed != len(codes)-1 {
			t.Errorf("round %d: %d ran, %d replayed: %v", round, ok, replayed, codes)
		}
		if n := requestsTo(e.fake, "POST", "/repos/"); n != 1 {
			t.Errorf("round %d: %d requests reached the fake, want 1", round, n)
		}
	}
}

// TestMalformedConfirmAnswersDecline: a client that declared elicitation answers
// the confirmation with malformed content — no answer, another key, a
// sampling or roots result, an "Accept" that is not "accept", a decline
// carrying accept-looking content. Each is confirmation_declined, nothing
// is sent, and the record is spent (the proper accept that follows is
// confirmation_replayed).
func TestMalformedConfirmAnswersDecline(t *testing.T) {
	cases := []struct {
		name string
		resp mcp.InputResponseMap
	}{
		{"no answer", nil},
		{"empty map", mcp.InputResponseMap{}},
		{"another key", mcp.InputResponseMap{"ok": &mcp.ElicitResult{Action: "accept"}}},
		//lint:ignore SA1019 hostile input: a client answering with the deprecated sampling result
		{"sampling result", mcp.InputResponseMap{"confirm": &mcp.CreateMessageWithToolsResult{Role: "user", Model: "x", Content: []mcp.Content{&mcp.TextContent{Text: "accept"}}}}},
		//lint:ignore SA1019 hostile input: a client answering with the deprecated roots result
		{"roots result", mcp.InputResponseMap{"confirm": &mcp.ListRootsResult{}}},
		{"Accept", mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "Accept"}}},
		{"accept with a space", mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept "}}},
		{"empty action", mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: ""}}},
		{"decline with content", mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "decline", Content: map[string]any{"action": "accept", "confirm": true}}}},
	}
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	cs := e.connect(t, clientOpts{answer: "accept", manual: true})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.fake.Reset()
			state := firstRound(t, cs, issueArgs)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
				Name: "github_create_issue", Arguments: issueArgs, RequestState: state, InputResponses: tc.resp,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := errorCode(t, res); got != CodeConfirmationDeclined {
				t.Errorf("code %q, want %s: %s", got, CodeConfirmationDeclined, toolText(t, res))
			}
			if got := errorCode(t, retry(t, cs, issueArgs, state, "accept")); got != CodeConfirmationReplayed {
				t.Errorf("the proper accept after it: %q, want %s", got, CodeConfirmationReplayed)
			}
			if n := len(e.fake.Requests()); n != 0 {
				t.Errorf("%d requests reached the fake", n)
			}
		})
	}
}

// TestConfirmSentenceOneLine: args crafted to make the confirm
// sentence lie — line breaks pushing the real target out of view, a
// fake target in the title, bidi overrides and isolates, a zero-width
// joiner. The elicitation's message starts with a one-line confirm line
// naming the repository the op writes to first, then shows the title
// whole with every invisible character escaped; the record binds those
// args.
func TestConfirmSentenceOneLine(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	cs := e.connect(t, clientOpts{answer: "accept", manual: true})
	title := "Weekly notes\" in pinned-tester/notes?" + strings.Repeat("\n", 30) + "\r\u2028\u2029\u202e\u2066\u2067\u2068\u2069\u200d\u061c\u200f x"
	args := map[string]any{"owner": "pinned-tester", "repo": "secrets", "title": title}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_create_issue", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	ep, ok := res.InputRequests["confirm"].(*mcp.ElicitParams)
	if !ok {
		t.Fatalf("no confirmation: %+v", res)
	}
	msg := ep.Message
	t.Logf("confirm: %q", msg)
	line, rest, _ := strings.Cut(msg, "\n")
	for _, r := range msg {
		if unicode.IsControl(r) && r != '\n' || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			t.Errorf("the confirmation holds %U: %q", r, msg)
		}
	}
	if !strings.HasPrefix(line, `[GitHub: owner "pinned-tester", repo "secrets"] Open an issue titled "Weekly notes" in pinned-tester/notes?⏎`) ||
		!strings.HasSuffix(line, " in pinned-tester/secrets?") {
		t.Errorf("the confirm line does not start with the real target, on one line: %q", line)
	}
	// The title, which the line cannot show as is, follows whole, its
	// invisible characters escaped.
	if !strings.HasPrefix(rest, "Also sent:\n- title:\n    Weekly notes\" in pinned-tester/notes?\n") ||
		!strings.Contains(rest, "⟨U+202E⟩⟨U+2066⟩⟨U+2067⟩⟨U+2068⟩⟨U+2069⟩⟨U+200D⟩⟨U+061C⟩⟨U+200F⟩ x") {
		t.Errorf("the title is not shown whole: %q", rest)
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Errorf("%d requests reached the fake while asking", n)
	}
}

// TestHostileArgsSendNothing: hostile argument texts in full mode (duplicate
// keys, a lone surrogate, a huge value, not an object) are refused before
// anything is sent, and no write is ever asked about.
func TestHostileArgsSendNothing(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	var asked []string
	cs := e.connect(t, clientOpts{answer: "accept", asked: &asked})
	huge := `{"owner":"pinned-tester","repo":"notes","title":"` + strings.Repeat("A", 2<<20) + `"}`
	cases := []struct {
		name, tool string
		args       json.RawMessage
		want       string
	}{
		{"duplicate title", "github_create_issue", json.RawMessage(`{"owner":"pinned-tester","repo":"notes","title":"seen","title":"sent"}`), CodeBadArguments},
		{"duplicate owner, read op", "github_list_issues", json.RawMessage(`{"owner":"pinned-tester","owner":"victim","repo":"notes"}`), CodeBadArguments},
		{"huge title", "github_create_issue", json.RawMessage(huge), "bad_args"},
		{"array", "github_list_repos", json.RawMessage(`[{"per_page":1}]`), CodeBadArguments},
		{"unknown arg", "github_list_repos", json.RawMessage(`{"per_page":1,"url":"https://evil.example/"}`), "bad_args"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.fake.Reset()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			if got := errorCode(t, res); got != tc.want {
				t.Errorf("code %q, want %s: %.200s", got, tc.want, toolText(t, res))
			}
			if len(toolText(t, res)) > 1024 {
				t.Errorf("the error echoes %d bytes", len(toolText(t, res)))
			}
			if n := len(e.fake.Requests()); n != 0 {
				t.Errorf("%d requests reached the fake", n)
			}
		})
	}
	if len(asked) != 0 {
		t.Errorf("the person was asked about hostile args: %q", asked)
	}
}

// TestLoneSurrogateSeenIsSent: a lone surrogate escape (valid
// JSON syntax, not valid Unicode) is read once, as U+FFFD, by the one
// canonicalization: the sentence the person confirms and the body the
// provider gets hold the same character, so no parser difference opens
// between what is shown and what is sent.
func TestLoneSurrogateSeenIsSent(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	var asked []string
	cs := e.connect(t, clientOpts{answer: "accept", asked: &asked})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_create_issue",
		Arguments: json.RawMessage(`{"owner":"pinned-tester","repo":"notes","title":"a\ud800b"}`)})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	if len(asked) != 1 || asked[0] != "[GitHub: owner \"pinned-tester\", repo \"notes\"] Open an issue titled \"a\uFFFDb\" in pinned-tester/notes?" {
		t.Errorf("asked %q", asked)
	}
	var sent []string
	for _, r := range e.fake.Requests() {
		if r.Method == "POST" {
			var b struct{ Title string }
			_ = json.Unmarshal(r.Body, &b)
			sent = append(sent, b.Title)
		}
	}
	if len(sent) != 1 || sent[0] != "a\uFFFDb" {
		t.Errorf("sent titles %q", sent)
	}
}

// TestCapDowngradeDeniesWrites: the tools are made at start, the connection is
// read on every call. Reconnected read-only after start, the write tool
// that is still listed is access_denied without asking; a confirmation
// issued under read & write and answered after the downgrade runs nothing.
func TestCapDowngradeDeniesWrites(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	cs := e.connect(t, clientOpts{answer: "accept", manual: true})
	state := firstRound(t, cs, issueArgs)
	ro := ghWrite
	ro.Cap = connstore.CapRead
	if err := e.store.Put(ro); err != nil {
		t.Fatal(err)
	}
	if got := errorCode(t, retry(t, cs, issueArgs, state, "accept")); got != "access_denied" {
		t.Errorf("the confirmed retry after the downgrade: %q", got)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_create_issue", Arguments: issueArgs})
	if err != nil {
		t.Fatal(err)
	}
	if got := errorCode(t, res); got != "access_denied" || res.NeedsInput() {
		t.Errorf("a new call after the downgrade: %q %+v", got, res)
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Errorf("%d requests reached the fake", n)
	}
}

// TestWriteResultTooLargeSaysSent: a confirmed write whose result is over
// the cap has already been sent. The refusal must say so and say not to
// repeat it: "ask for fewer items" would make an agent send the write
// again.
func TestWriteResultTooLargeSaysSent(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}, maxResult: 8})
	cs := e.connect(t, clientOpts{answer: "accept"})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_create_issue", Arguments: issueArgs})
	if err != nil {
		t.Fatal(err)
	}
	txt := toolText(t, res)
	if errorCode(t, res) != CodeResultTooLarge || !strings.Contains(txt, "the write was sent") || !strings.Contains(txt, "do not call it again") || strings.Contains(txt, "fewer items") {
		t.Errorf("write over the cap: %s", txt)
	}
	if !strings.Contains(txt, `"sent":true`) {
		t.Errorf("no sent:true in %s", txt)
	}
	if n := requestsTo(e.fake, "POST", "/repos/"); n != 1 {
		t.Errorf("%d POSTs", n)
	}
}

// TestHTTPRefusesWrongTokenAndOrigin: streamable HTTP with a token refuses every wrong
// Authorization before the SDK sees the request (nothing echoed), and
// without a token the DNS-rebinding and cross-origin checks hold on
// loopback; each refusal is a JSON-RPC error response.
func TestHTTPRefusesWrongTokenAndOrigin(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"x","version":"1"}}}`
	post := func(t *testing.T, url string, hdr map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b := make([]byte, 4096)
		n, _ := resp.Body.Read(b)
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" { // end the session (goleak)
			del, _ := http.NewRequest(http.MethodDelete, url, nil)
			del.Header = req.Header.Clone()
			del.Host = req.Host
			del.Header.Set("Mcp-Session-Id", id)
			if dr, err := http.DefaultClient.Do(del); err == nil {
				dr.Body.Close()
			}
		}
		return resp.StatusCode, string(b[:n])
	}
	withTok := httptest.NewServer(e.srv.Handler(httpToken))
	t.Cleanup(withTok.Close)
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"none", "", 401},
		{"scheme only", "Bearer", 401},
		{"scheme and space", "Bearer ", 401},
		{"prefix of the token", "Bearer " + httpToken[:len(httpToken)-1], 401},
		{"token plus a byte", "Bearer " + httpToken + "x", 401},
		{"two spaces", "Bearer  " + httpToken, 401},
		{"basic", "Basic " + httpToken, 401},
		{"token without scheme", httpToken, 401},
		{"lowercase scheme (RFC 7235: case-insensitive)", "bearer " + httpToken, 200},
		{"right", "Bearer " + httpToken, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tc.auth != "" {
				hdr["Authorization"] = tc.auth
			}
			code, body := post(t, withTok.URL, hdr)
			if code != tc.want {
				t.Errorf("status %d, want %d: %s", code, tc.want, body)
			}
			if code == 401 {
				checkRefusal(t, body, CodeUnauthorized)
				if strings.Contains(body, httpToken[:16]) {
					t.Errorf("the refusal echoes the token: %s", body)
				}
			}
		})
	}
	open := httptest.NewServer(e.srv.Handler(""))
	t.Cleanup(open.Close)
	host := strings.TrimPrefix(open.URL, "http://")
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"rebinding Host", map[string]string{"Host": "evil.example:" + host[strings.LastIndex(host, ":")+1:]}, 403},
		{"rebinding Host without port", map[string]string{"Host": "evil.example"}, 403},
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}, 403},
		{"other origin, no Sec-Fetch-Site", map[string]string{"Origin": "http://evil.example"}, 403},
		{"same-origin", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": open.URL}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, open.URL, tc.hdr)
			if code != tc.want {
				t.Errorf("status %d, want %d: %s", code, tc.want, body)
			}
			if code == 403 {
				checkRefusal(t, body, CodeCrossOrigin)
			}
		})
	}
}

// checkRefusal: an HTTP refusal is a JSON-RPC error response with id null,
// the transport's shape, naming code in error.data.code.
func checkRefusal(t *testing.T, body, code string) {
	t.Helper()
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Code string `json:"code"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil || m.JSONRPC != "2.0" || string(m.ID) != "null" ||
		m.Error.Code != rpcRefused || m.Error.Message == "" || m.Error.Data.Code != code {
		t.Errorf("refusal %s (%v), want a JSON-RPC error with id null and data.code %q", body, err, code)
	}
}

// TestLedgerCapPerSession: one session that opens write calls and
// never answers them (a looping agent, or a hostile client on a shared
// server) fills at most a sixteenth of the ledger; another session can
// still be asked. Before, 1024 unanswered calls made every session's
// writes busy for four minutes.
func TestLedgerCapPerSession(t *testing.T) {
	now := time.Now()
	l := newLedger(time.Minute, 64)
	a, b := &mcp.ServerSession{}, &mcp.ServerSession{}
	var ids []string
	for i := 0; i < 4; i++ {
		id, ok := l.issue(a, "github", "create_issue", "h", now)
		if !ok {
			t.Fatalf("record %d refused", i)
		}
		ids = append(ids, id)
	}
	if _, ok := l.issue(a, "github", "create_issue", "h", now); ok {
		t.Error("a fifth unanswered record of one session was accepted (cap 64/16)")
	}
	if _, ok := l.issue(b, "github", "create_issue", "h", now); !ok {
		t.Error("another session was refused")
	}
	if got := l.consume(ids[0], a, "github", "create_issue", "h", now); got != "" {
		t.Fatal(got)
	}
	if _, ok := l.issue(a, "github", "create_issue", "h", now); !ok {
		t.Error("an answered record still counts against its session")
	}
	if _, ok := l.issue(a, "github", "create_issue", "h", now.Add(time.Minute+time.Second)); !ok {
		t.Error("expired records still count against their session")
	}
}

// TestResourcesOnlyManifests: only the manifests are resources; any other
// URI (the store, the key, a path out of pinned://registry/, a file) is
// an error with no content.
func TestResourcesOnlyManifests(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	cs := e.connect(t, clientOpts{})
	for _, uri := range []string{
		"pinned://registry/../key", "pinned://registry/github/../../connections.sealed", "pinned://registry/",
		"pinned://registry/GITHUB", "file:///etc/passwd", "file://" + e.store.Path(), "pinned://connections",
	} {
		res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		if err == nil {
			t.Errorf("%s: read %d contents", uri, len(res.Contents))
		}
	}
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "pinned://registry/github"})
	if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, `"api.github.com"`) {
		t.Errorf("the github manifest: %v %+v", err, res)
	}
}

// TestLedgerRefusesOtherTool: a confirmation of one tool presented with
// another (same args, another op or service) is confirmation_mismatch and
// spent, so the right tool cannot follow with it.
func TestLedgerRefusesOtherTool(t *testing.T) {
	now := time.Now()
	l := newLedger(time.Minute, 64)
	a := &mcp.ServerSession{}
	for _, tc := range []struct{ service, op string }{{"linear", "create_issue"}, {"github", "create_comment"}} {
		id, _ := l.issue(a, "github", "create_issue", "h", now)
		if got := l.consume(id, a, tc.service, tc.op, "h", now); got != CodeConfirmationMismatch {
			t.Errorf("%s.%s: %q", tc.service, tc.op, got)
		}
		if got := l.consume(id, a, "github", "create_issue", "h", now); got != CodeConfirmationReplayed {
			t.Errorf("%s.%s then the right tool: %q", tc.service, tc.op, got)
		}
	}
}

// TestEchoedCredentialNeverReachesAgent: a provider echoing the
// connection's token in a picked field (plainly, JSON-escaped, or after
// a huge number) gets an error result, never the data: the agent (and
// its model) never sees the token; the transcript and the log are
// scanned for it (newEnv's cleanup).
func TestEchoedCredentialNeverReachesAgent(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}})
	cs := e.connect(t, clientOpts{answer: "accept"})
	tok := string(ghWrite.Token)
	escaped := tok[:3] + `\u` + fmt.Sprintf("%04x", tok[3]) + tok[4:]
	cases := []struct{ name, body, want string }{
		{"the token as the login", `{"login":"` + tok + `","id":1}`, "credential_echo"},
		{"the token escaped", `{"login":"` + escaped + `","id":1}`, "credential_echo"},
		{"after 1e400", `{"login":"x","id":1e400,"name":"` + escaped + `"}`, "upstream_invalid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.fake.Reset()
			e.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tc.body))
				return true
			})
			defer e.fake.SetHandler(nil)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_get_viewer", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if got := errorCode(t, res); got != tc.want {
				t.Fatalf("code %q, want %s: %.200s", got, tc.want, toolText(t, res))
			}
			if res.StructuredContent != nil {
				b, _ := json.Marshal(res.StructuredContent)
				if strings.Contains(string(b), tok[4:20]) {
					t.Errorf("structured content holds the token: %s", b)
				}
			}
			if n := len(e.fake.Requests()); n != 1 {
				t.Errorf("%d requests reached the fake, want 1", n)
			}
		})
	}
}
