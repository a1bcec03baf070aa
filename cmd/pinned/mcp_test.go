package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elevenmessenger/pinned/internal/connstore"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/testenv"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
)

// pinnedEnv is a built pinned binary with its own config directory,
// pointed at an in-process provider fake.
type pinnedEnv struct {
	bin, dir, ca string
	fake         *fakeapi.Server
	env          []string
}

func newPinnedEnv(t *testing.T) *pinnedEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the pinned binary")
	}
	dir := t.TempDir()
	bin := pinnedBinary(t) // built once per test run, stamped testBinaryVersion
	fake, err := fakeapi.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, fake.CACertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PINNED_") && !strings.HasPrefix(kv, "XDG_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	env = append(env, "XDG_CONFIG_HOME="+cfg, "HOME="+dir, "XDG_CACHE_HOME="+filepath.Join(os.TempDir(), "pinned-test-xdg-cache"))
	return &pinnedEnv{bin: bin, dir: cfg, ca: ca, fake: fake, env: env}
}

// run runs the binary with stdin and returns its exit code, stdout and
// stderr.
func (p *pinnedEnv) run(t *testing.T, in string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(p.bin, args...)
	cmd.Env = p.env
	cmd.Stdin = strings.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func (p *pinnedEnv) fakeFlags() []string {
	return []string{"--connect-to", p.fake.Addr(), "--cacert", p.ca}
}

// TestConnectAndMCPStdio: pinned connect against the fake refuses a bad
// token with the viewer's error and stores nothing; stores a good one 0600
// and lists it; then pinned mcp over a real stdio subprocess serves it to
// the SDK's client: initialize, tools/list, a read call, a write call
// confirmed (one request reaches the fake) and declined (none). No token
// or store bytes cross stdout or stderr.
func TestConnectAndMCPStdio(t *testing.T) {
	p := newPinnedEnv(t)
	ghTok, stTok := fakeapi.Token("github"), fakeapi.Token("stripe")

	code, out, errs := p.run(t, "ghp_not_a_valid_token_00000000000000000", append([]string{"connect", "github"}, p.fakeFlags()...)...)
	if code != 1 || !strings.Contains(errs, "GitHub refused the token (github.get_viewer): upstream_error: Bad credentials (HTTP 401)") || !strings.Contains(errs, "nothing was stored") {
		t.Fatalf("bad token: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "pinned", "connections.sealed")); !os.IsNotExist(err) {
		t.Errorf("a refused token left a store: %v", err)
	}
	code, out, errs = p.run(t, ghTok+"\n", append([]string{"connect", "github", "--cap", "write"}, p.fakeFlags()...)...)
	if code != 0 || !strings.Contains(out, "connected github as pinned-tester, read & write") {
		t.Fatalf("good token: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if code, out, errs = p.run(t, stTok, append([]string{"connect", "stripe"}, p.fakeFlags()...)...); code != 0 {
		t.Fatalf("stripe: exit %d %s %s", code, out, errs)
	}
	// Connecting a connected service again replaces it, and says so.
	if code, out, errs = p.run(t, stTok, append([]string{"connect", "stripe"}, p.fakeFlags()...)...); code != 0 ||
		!regexp.MustCompile(`\nreplaced the earlier stripe connection \(read-only as [^ ]+, connected 20\d\d-\d\d-\d\dT[0-9:]+Z\)\n`).MatchString(out) {
		t.Fatalf("stripe again: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	store := filepath.Join(p.dir, "pinned", "connections.sealed")
	st, err := os.Stat(store)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("store: %v %v", st, err)
	}
	raw, _ := os.ReadFile(store)
	if bytes.Contains(raw, []byte(ghTok)) {
		t.Error("the store holds the token in plaintext")
	}
	code, out, _ = p.run(t, "", "connections")
	if code != 0 || !strings.Contains(out, "github   read & write  pat   pinned-tester") || !strings.Contains(out, "stripe   read-only") || strings.Contains(out, ghTok) {
		t.Errorf("connections: exit %d\n%s", code, out)
	}

	// pinned mcp over stdio: the SDK's latest protocol (server/discover,
	// input_required rounds) and 2025-11-25 (initialize, elicitation/create).
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			wire := &testutil.SyncBuffer{}
			stderr := &testutil.SyncBuffer{}
			answer := "accept"
			var asked []string
			client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params.Message)
					return &mcp.ElicitResult{Action: answer}, nil
				},
			})
			cmd := exec.Command(p.bin, append([]string{"mcp"}, p.fakeFlags()...)...)
			cmd.Env, cmd.Stderr = p.env, stderr
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cs, err := client.Connect(ctx, &mcp.LoggingTransport{Writer: wire, Transport: &mcp.CommandTransport{Command: cmd}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connect: %v\nstderr %s", err, stderr.String())
			}
			if ir := cs.InitializeResult(); ir.ServerInfo.Name != "pinned" || ir.Capabilities.Tools == nil || ir.ProtocolVersion != version {
				t.Errorf("initialize: %+v", ir)
			}
			// serverInfo.version is the binary's own version, as pinned version prints it.
			vout, verr := exec.Command(p.bin, "version", "--json").Output()
			var vj struct{ Version string }
			if verr != nil || json.Unmarshal(vout, &vj) != nil || vj.Version != testBinaryVersion || cs.InitializeResult().ServerInfo.Version != vj.Version {
				t.Errorf("serverInfo.version %q, pinned version says %q (%v)", cs.InitializeResult().ServerInfo.Version, vj.Version, verr)
			}
			lt, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range lt.Tools {
				names = append(names, tl.Name)
			}
			want := "github_create_issue github_get_pages github_get_repo github_get_viewer github_list_issues github_list_repos stripe_get_balance stripe_get_viewer stripe_list_charges stripe_list_customers"
			if strings.Join(names, " ") != want {
				t.Errorf("tools %v, want %s", names, want)
			}
			p.fake.Reset()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "github_list_repos", Arguments: map[string]any{"per_page": 2}})
			if err != nil || res.IsError {
				t.Fatalf("read: %v %+v", err, res)
			}
			var data struct {
				Data []map[string]any `json:"data"`
			}
			b, _ := json.Marshal(res.StructuredContent)
			if json.Unmarshal(b, &data) != nil || len(data.Data) != 2 || data.Data[0]["full_name"] == nil || data.Data[0]["owner"] != nil {
				t.Errorf("read result %s", b)
			}
			args := map[string]any{"owner": "pinned-tester", "repo": "notes", "title": "From stdio", "body": "x"}
			for _, a := range []string{"accept", "decline"} {
				answer = a
				p.fake.Reset()
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "github_create_issue", Arguments: args})
				if err != nil {
					t.Fatal(err)
				}
				posts := 0
				for _, r := range p.fake.Requests() {
					if r.Method == "POST" {
						posts++
					}
				}
				if wantPosts := map[string]int{"accept": 1, "decline": 0}[a]; posts != wantPosts || res.IsError != (a == "decline") {
					t.Errorf("%s: %d POSTs (want %d), isError %v", a, posts, wantPosts, res.IsError)
				}
			}
			// The second ask says the title came back from the first issue.
			if want := "[GitHub: owner \"pinned-tester\", repo \"notes\"] Open an issue titled \"From stdio\" in pinned-tester/notes?\nAlso sent:\n- body: x"; len(asked) != 2 || asked[0] != want ||
				asked[1] != want+"\nWhere its values came from (read earlier in this session):\n- the title contains text returned by github_create_issue: \"From stdio\"" {
				t.Errorf("asked %q", asked)
			}
			if err := cs.Close(); err != nil {
				t.Logf("close: %v", err)
			}
			for _, s := range storeSecrets(t, filepath.Join(p.dir, "pinned")) {
				if strings.Contains(wire.String(), s) || strings.Contains(stderr.String(), s) {
					t.Errorf("a secret (%d bytes) crossed stdout or stderr", len(s))
				}
			}
			if !strings.Contains(stderr.String(), `"event":"tool_call"`) {
				t.Errorf("no tool_call log line on stderr:\n%s", stderr.String())
			}
		})
	}
}

// mintGitHubPair connects GitHub at the fake's OAuth endpoints and returns
// a fresh pair (8-hour access token, single-use refresh token).
func mintGitHubPair(t *testing.T, fake *fakeapi.Server) (access, refresh string) {
	t.Helper()
	p := testutil.MintPair(t, fake, "github", 0)
	return p.Access, p.Refresh
}

// TestConnectOAuthPairRotated: pinned connect stores an expiring OAuth
// pair (verified with the viewer op); pinned mcp with a broker rotates it
// before the first call (it expires within the refresh margin) and
// re-seals the fresh pair into the store at once; the next call runs with
// the stored fresh token and refreshes nothing (the old refresh token is
// spent at the fake).
func TestConnectOAuthPairRotated(t *testing.T) {
	p := newPinnedEnv(t)
	access, refresh := mintGitHubPair(t, p.fake)
	p.env = append(p.env, "GH_ACCESS="+access, "GH_REFRESH="+refresh)
	code, out, errs := p.run(t, "", append([]string{"connect", "github", "--kind", "oauth", "--token-env", "GH_ACCESS",
		"--refresh-env", "GH_REFRESH", "--token-expires-in", "30s"}, p.fakeFlags()...)...)
	if code != 0 {
		t.Fatalf("connect: exit %d %s %s", code, out, errs)
	}

	const instance = "cmd-test-broker-instance-token-0123456789"
	burl := testenv.Broker(t, p.fake, instance, testenv.BrokerOptions{})

	stderr := &testutil.SyncBuffer{}
	wire := &testutil.SyncBuffer{}
	cmd := exec.Command(p.bin, append([]string{"mcp", "--broker-url", burl}, p.fakeFlags()...)...)
	cmd.Env, cmd.Stderr = append(p.env, "PINNED_MCP_BROKER_TOKEN="+instance), stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "rot-test", Version: "1"}, nil).
		Connect(ctx, &mcp.LoggingTransport{Writer: wire, Transport: &mcp.CommandTransport{Command: cmd}}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	_, before := p.fake.TokenRequests("github")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "github_get_viewer", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("first call: %v %+v\n%s", err, res, stderr.String())
	}
	store, err := connstore.Open(filepath.Join(p.dir, "pinned"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := store.Get("github")
	if err != nil {
		t.Fatal(err)
	}
	if string(c.Token) == access || string(c.Refresh) == refresh || c.RotatedAt.IsZero() {
		t.Fatalf("the store still holds the old pair\n%s", stderr.String())
	}
	p.fake.Reset()
	if res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "github_list_repos", Arguments: map[string]any{"per_page": 1}}); err != nil || res.IsError {
		t.Fatalf("next call: %v %+v", err, res)
	}
	if reqs := p.fake.Requests(); len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer "+string(c.Token) {
		t.Errorf("the next call did not use the stored fresh token")
	}
	if _, n := p.fake.TokenRequests("github"); n != before+1 {
		t.Errorf("%d refreshes, want 1", n-before)
	}
	for _, s := range append(storeSecrets(t, filepath.Join(p.dir, "pinned")), access, refresh) {
		if strings.Contains(wire.String(), s) || strings.Contains(stderr.String(), s) {
			t.Error("a token crossed stdout or stderr")
		}
	}
	if code, out, _ := p.run(t, "", "connections"); code != 0 || !strings.Contains(out, "github   read-only  oauth") {
		t.Errorf("connections: %s", out)
	}
}

// TestMCPListen: pinned mcp --listen serves streamable HTTP; a request
// without the bearer token is refused 401, the SDK's client with it lists
// the tools and runs a read call; SIGTERM stops it with exit 0.
func TestMCPListen(t *testing.T) {
	p := newPinnedEnv(t)
	if code, out, errs := p.run(t, fakeapi.Token("github"), append([]string{"connect", "github"}, p.fakeFlags()...)...); code != 0 {
		t.Fatalf("connect: %d %s %s", code, out, errs)
	}
	const token = "listen-test-bearer-token-0123456789"
	endpoint, stderr, stop := startMCPListen(t, p, []string{"PINNED_MCP_TOKEN=" + token})
	resp, err := http.Post(endpoint, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %d", resp.StatusCode)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "listen-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: endpoint, HTTPClient: &http.Client{Transport: headerRT{"Bearer " + token, tr}}, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	lt, err := cs.ListTools(ctx, nil)
	if err != nil || len(lt.Tools) != 5 { // github read-only: no write tool
		t.Fatalf("tools: %v %d", err, len(lt.Tools))
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "github_get_viewer", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("read: %v %+v", err, res)
	}
	cs.Close()
	if err := stop(); err != nil {
		t.Errorf("after SIGTERM: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), fakeapi.Token("github")) || strings.Contains(stderr.String(), token) {
		t.Error("a token is in the log")
	}
}

type headerRT struct {
	auth string
	next http.RoundTripper
}

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", h.auth)
	return h.next.RoundTrip(r)
}

// storeSecrets lists what must never cross an MCP message or the log:
// every stored token and refresh token, the store's key, and every
// 24-byte window of the sealed file (base64, base64url and hex).
func storeSecrets(t *testing.T, dir string) []string {
	t.Helper()
	store, err := connstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := testenv.StoreSecrets(store)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMCPStdioBadLines runs the real binary: `pinned mcp` on stdio answers
// each line of issue 21 that used to end it (exit 1) with its JSON-RPC
// error and answers tools/list next, on the same process, which exits 0
// at the end of stdin.
func TestMCPStdioBadLines(t *testing.T) {
	p := newPinnedEnv(t)
	if code, out, errs := p.run(t, fakeapi.Token("github"), append([]string{"connect", "github"}, p.fakeFlags()...)...); code != 0 {
		t.Fatalf("connect: %d %s %s", code, out, errs)
	}
	cmd := exec.Command(p.bin, append([]string{"mcp"}, p.fakeFlags()...)...)
	cmd.Env = p.env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &testutil.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	out := bufio.NewReader(stdout)
	ask := func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatalf("write: %v\n%s", err, stderr.String())
		}
		b, err := out.ReadBytes('\n')
		var m map[string]any
		if err != nil || json.Unmarshal(b, &m) != nil {
			t.Fatalf("read %q: %v\n%s", b, err, stderr.String())
		}
		return m
	}
	if a := ask(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`); a["result"] == nil {
		t.Fatalf("initialize: %v", a)
	}
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	for i, tt := range []struct {
		name, line string
		code       float64
	}{
		{"invalid JSON", `{"jsonrpc":`, -32700},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\xfe\"}", -32700},
		{"100k-deep nesting", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), -32700},
		{"a batch", `[{"jsonrpc":"2.0","id":5,"method":"tools/list"}]`, -32600},
		{"[]", `[]`, -32600},
		{"id 1e400", `{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}`, -32600},
		{"id twice", `{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list"}`, -32600},
		{"a 20 MiB line", `{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"x":"` + strings.Repeat("a", 20<<20) + `"}}`, -32600},
	} {
		a := ask(tt.line)
		if e, _ := a["error"].(map[string]any); e == nil || e["code"] != tt.code || a["id"] != nil {
			t.Errorf("%s: answered %v, want error %v, id null", tt.name, a, tt.code)
		}
		a = ask(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, 10+i))
		if r, _ := a["result"].(map[string]any); r == nil || a["id"] != float64(10+i) || len(r["tools"].([]any)) == 0 {
			t.Fatalf("%s: tools/list answered %v", tt.name, a)
		}
	}
	// The log holds no argument value (docs/MCP.md): not the egress
	// target either.
	a := ask(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"github_get_repo","arguments":{"owner":"pinned-tester","repo":"zz-unseen-repo-name"}}}`)
	if a["result"] == nil {
		t.Fatalf("tools/call: %v", a)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("pinned mcp exited with %v at the end of stdin\n%s", err, stderr.String())
	}
	if logs := stderr.String(); strings.Contains(logs, "zz-unseen-repo-name") || !strings.Contains(logs, `"event":"egress"`) {
		t.Errorf("the log holds an argument value (or no egress event):\n%s", logs)
	}
}
