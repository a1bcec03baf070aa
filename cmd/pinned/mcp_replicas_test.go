package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/testing/redistest"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
)

// startMCPListen starts `pinned mcp --listen 127.0.0.1:0` with extra
// environment and flags, and returns its endpoint, its stderr and stop:
// SIGTERM, then its exit (nil: status 0). It is stopped when the test
// ends in any case.
func startMCPListen(t *testing.T, p *pinnedEnv, env []string, args ...string) (endpoint string, stderr *testutil.SyncBuffer, stop func() error) {
	t.Helper()
	cmd := exec.Command(p.bin, append(append([]string{"mcp", "--listen", "127.0.0.1:0"}, p.fakeFlags()...), args...)...)
	cmd.Env = append(append([]string{}, p.env...), env...)
	stderr = &testutil.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var exit error
	stop = func() error {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case exit = <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				exit = fmt.Errorf("no exit 10 s after SIGTERM: %v", <-done)
			}
		})
		return exit
	}
	t.Cleanup(func() { _ = stop() })
	// Like the log, the line with the address is on stderr.
	re := regexp.MustCompile(`pinned mcp: listening on (http://127\.0\.0\.1:\d+)/`)
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], stderr, stop
		}
		if cmd.ProcessState != nil {
			break
		}
	}
	t.Fatalf("no address on stderr:\n%s", stderr.String())
	return "", nil, nil
}

// TestMCPReplicasRedis: two `pinned mcp --listen` replicas of one person
// share a confirm key and one real redis-server. A Go SDK client on
// 2026-07-28 (stateless) asks for a write at A and answers it at B: it
// runs once (one request at the fake). Replayed at A and at B: refused,
// nothing sent. Neither log holds a token or the confirm key.
func TestMCPReplicasRedis(t *testing.T) {
	p := newPinnedEnv(t)
	rs := redistest.Start(t)
	if code, out, errs := p.run(t, fakeapi.Token("github"), append([]string{"connect", "github", "--cap", "write"}, p.fakeFlags()...)...); code != 0 {
		t.Fatalf("connect: %d %s %s", code, out, errs)
	}
	const token = "replica-test-bearer-token-0123456789"
	confirmKey := strings.Repeat("5a", 32)
	env := []string{"PINNED_MCP_TOKEN=" + token, "PINNED_MCP_CONFIRM_KEY=" + confirmKey}
	a, logA, _ := startMCPListen(t, p, env, "--redis-url", rs.URL())
	b, logB, _ := startMCPListen(t, p, env, "--redis-url", rs.URL())

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := func(endpoint string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "replica-test", Version: "1"}, &mcp.ClientOptions{
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
		}).Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint: endpoint, HTTPClient: &http.Client{Transport: headerRT{"Bearer " + token, tr}}, MaxRetries: -1,
		}, nil)
		if err != nil {
			t.Fatalf("connect %s: %v", endpoint, err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %s", v)
		}
		return cs
	}
	atA, atB := client(a), client(b)
	args := map[string]any{"owner": "pinned-tester", "repo": "notes", "title": "asked at A, answered at B"}
	writes := func() int {
		n := 0
		for _, r := range p.fake.Requests() {
			if r.Method == "POST" && strings.HasPrefix(r.Path, "/repos/") {
				n++
			}
		}
		return n
	}
	code := func(res *mcp.CallToolResult) string {
		if !res.IsError {
			return "ok"
		}
		var b struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &b)
		return b.Error.Code
	}
	first, err := atA.CallTool(ctx, &mcp.CallToolParams{Name: "github_create_issue", Arguments: args})
	if err != nil || !first.NeedsInput() || first.RequestState == "" {
		t.Fatalf("first round at A: %v %+v", err, first)
	}
	answer := func(cs *mcp.ClientSession) string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{
			Name: "github_create_issue", Arguments: args, RequestState: first.RequestState,
			InputResponses: mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return code(res)
	}
	if got := answer(atB); got != "ok" || writes() != 1 {
		t.Fatalf("answered at B: %s, %d writes at the fake (want ok, 1)", got, writes())
	}
	for name, cs := range map[string]*mcp.ClientSession{"A": atA, "B": atB} {
		if got := answer(cs); got != "confirmation_replayed" {
			t.Errorf("replayed at %s: %s", name, got)
		}
	}
	if n := writes(); n != 1 {
		t.Errorf("%d writes at the fake after the replays, want 1", n)
	}
	for _, l := range []string{logA.String(), logB.String()} {
		if strings.Contains(l, fakeapi.Token("github")) || strings.Contains(l, token) || strings.Contains(l, confirmKey) {
			t.Error("a secret is in a replica's log")
		}
	}
}

// TestMCPConfirmFlags: bad --protocol and confirm-state flags are usage
// errors (exit 2) that say what to do, before anything starts.
func TestMCPConfirmFlags(t *testing.T) {
	for _, env := range []string{"PINNED_MCP_CONFIRM_KEY", "PINNED_MCP_REDIS_URL", "PINNED_MCP_REDIS_PASSWORD", "PINNED_MCP_TOKEN"} {
		t.Setenv(env, "")
		_ = os.Unsetenv(env)
	}
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"unknown protocol", nil, []string{"--protocol", "2025-06-18"}, `--protocol "2025-06-18": want both, 2025-11-25 or 2026-07-28`},
		{"redis without a key", nil, []string{"--redis-url", "redis://127.0.0.1:1"}, "--redis-url needs the confirm key"},
		{"short key", map[string]string{"PINNED_MCP_CONFIRM_KEY": strings.Repeat("ab", 16)}, nil, "the confirm key must be at least 64 characters"},
		{"key not hex", map[string]string{"PINNED_MCP_CONFIRM_KEY": strings.Repeat("zz", 32)}, nil, "the confirm key must be 64 hex characters"},
		{"key, no redis, no state dir", map[string]string{"PINNED_MCP_CONFIRM_KEY": strings.Repeat("ab", 32)}, []string{"--state-dir", ""}, "set --state-dir"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stdout, stderr testutil.SyncBuffer
			if code := runMCP(tc.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), tc.want)
			}
		})
	}
}
