package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
)

// tsClientDir holds the TypeScript SDK client script and its lockfile;
// `npm ci --prefix cmd/pinned/testdata/tsclient` installs the SDK (.ci/run
// does).
var tsClientDir = filepath.Join("testdata", "tsclient")

// needTSClient skips (or, under CI=true, fails) without node and the
// installed SDK.
func needTSClient(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	_, sdkErr := os.Stat(filepath.Join(tsClientDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	if err == nil && sdkErr == nil {
		return node
	}
	msg := "the TypeScript SDK client needs node and `npm ci --prefix cmd/pinned/testdata/tsclient`"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI must install them: .ci/run)")
	}
	t.Skip(msg)
	return ""
}

// tsResult is what client.mjs prints.
type tsResult struct {
	ProtocolVersion string `json:"protocolVersion"`
	Server          struct{ Name string }
	Capabilities    map[string]any `json:"capabilities"`
	Tools           []string       `json:"tools"`
	WriteTools      []string       `json:"writeTools"`
	Read            struct{ IsError bool }
	Write           struct {
		IsError bool
		Text    string
	}
	Asked     []string `json:"asked"`
	Decisions []struct {
		Page, Post int
		Shows      bool
	} `json:"decisions"`
	Received []json.RawMessage `json:"received"`
	Error    string            `json:"error"`
}

// runTSClient runs client.mjs with args and the answer to the write's
// confirmation.
func runTSClient(t *testing.T, node string, env []string, answer string, args ...string) tsResult {
	t.Helper()
	cmd := exec.Command(node, append([]string{"client.mjs"}, args...)...)
	cmd.Dir = tsClientDir
	cmd.Env = append(append([]string{}, env...), "ANSWER="+answer)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the TypeScript client did not finish in 2 minutes\n%s", errb.String())
	}
	var r tsResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("client.mjs printed %q (%v)\nstderr %s", out.String(), err, errb.String())
	}
	if r.Error != "" {
		t.Fatalf("the TypeScript client failed: %s", r.Error)
	}
	return r
}

// TestTypeScriptClient: the official MCP TypeScript SDK client (a client
// nobody here wrote) against the real pinned binary, over stdio (the SDK
// spawns `pinned mcp`) and streamable HTTP (`pinned mcp --listen`):
// initialize, tools/list, a read call (its structuredContent checked
// against the outputSchema by the SDK), a write accepted (one request at
// the fake) and declined (none). No message holds a token or a
// 2026-07-28 member (the SDK speaks 2025-11-25).
func TestTypeScriptClient(t *testing.T) {
	node := needTSClient(t)
	p := newPinnedEnv(t)
	if code, out, errs := p.run(t, fakeapi.Token("github"), append([]string{"connect", "github", "--cap", "write"}, p.fakeFlags()...)...); code != 0 {
		t.Fatalf("connect: %d %s %s", code, out, errs)
	}
	const token = "typescript-test-bearer-token-0123456789"
	endpoint, logs, _ := startMCPListen(t, p, []string{"PINNED_MCP_TOKEN=" + token})
	transports := map[string][]string{
		"stdio": append([]string{"stdio", p.bin, "mcp"}, p.fakeFlags()...),
		"http":  {"http", endpoint},
	}
	for _, tr := range []string{"stdio", "http"} {
		for _, answer := range []string{"accept", "decline"} {
			t.Run(tr+" "+answer, func(t *testing.T) {
				p.fake.Reset()
				r := runTSClient(t, node, append(append([]string{}, p.env...), "MCP_TOKEN="+token), answer, transports[tr]...)
				if r.ProtocolVersion != "2025-11-25" || r.Server.Name != "pinned" || r.Capabilities["tools"] == nil || r.Capabilities["prompts"] != nil {
					t.Errorf("initialize: version %q server %q capabilities %v", r.ProtocolVersion, r.Server.Name, r.Capabilities)
				}
				if !slices.Contains(r.Tools, "github_get_viewer") || !slices.Contains(r.WriteTools, "github_create_issue") {
					t.Errorf("tools %v, write tools %v", r.Tools, r.WriteTools)
				}
				if r.Read.IsError {
					t.Error("the read call failed")
				}
				if len(r.Asked) != 1 || !strings.HasPrefix(r.Asked[0], `[GitHub: owner "pinned-tester", repo "notes"] Open an issue titled "From the TypeScript SDK"`) {
					t.Errorf("asked %q", r.Asked)
				}
				checkWriteAnswered(t, answer, r, p.fake)
				for _, m := range r.Received {
					s := string(m)
					if strings.Contains(s, fakeapi.Token("github")) || strings.Contains(s, token) {
						t.Errorf("a token in a message: %.200s", s)
					}
					for _, f := range []string{`"ttlMs"`, `"cacheScope"`, `"resultType"`, `"requestState"`, `"inputRequests"`} {
						if strings.Contains(s, f) {
							t.Errorf("a 2025-11-25 session got %s: %.300s", f, s)
						}
					}
				}
			})
		}
	}
	if strings.Contains(logs.String(), fakeapi.Token("github")) || strings.Contains(logs.String(), token) {
		t.Error("a token is in the log")
	}
}

// checkWriteAnswered checks the write call's outcome for the person's
// answer: accepted, one write reached the fake; declined, none did and
// the call failed with confirmation_declined.
func checkWriteAnswered(t *testing.T, answer string, r tsResult, fake *fakeapi.Server) {
	t.Helper()
	wantWrites, wantErr := 1, false
	if answer == "decline" {
		wantWrites, wantErr = 0, true
	}
	if r.Write.IsError != wantErr || wantErr && !strings.Contains(r.Write.Text, "confirmation_declined") {
		t.Errorf("write: %+v", r.Write)
	}
	if n := countWrites(fake); n != wantWrites {
		t.Errorf("%d writes at the fake, want %d", n, wantWrites)
	}
}

// countWrites counts the POSTs under /repos/ the fake received.
func countWrites(fake *fakeapi.Server) int {
	n := 0
	for _, r := range fake.Requests() {
		if r.Method == "POST" && strings.HasPrefix(r.Path, "/repos/") {
			n++
		}
	}
	return n
}

// TestTypeScriptClientApprovalLink: the official TypeScript SDK client
// declaring URL-mode elicitation only (it cannot show a form) against
// `pinned mcp --listen --approval-links url`: it lists the write tool,
// gets the write's consent as a link to the server's approval page,
// and the call completes after the person decides there — approved, one
// request at the fake; declined, none.
func TestTypeScriptClientApprovalLink(t *testing.T) {
	node := needTSClient(t)
	p := newPinnedEnv(t)
	if code, out, errs := p.run(t, fakeapi.Token("github"), append([]string{"connect", "github", "--cap", "write"}, p.fakeFlags()...)...); code != 0 {
		t.Fatalf("connect: %d %s %s", code, out, errs)
	}
	const token = "typescript-link-bearer-token-0123456789"
	endpoint, logs, _ := startMCPListen(t, p, []string{"PINNED_MCP_TOKEN=" + token}, "--approval-links", "url")
	for _, answer := range []string{"accept", "decline"} {
		t.Run(answer, func(t *testing.T) {
			p.fake.Reset()
			r := runTSClient(t, node, append(append([]string{}, p.env...), "MCP_TOKEN="+token, "ELICIT_MODE=url", "OWNER_SECRET="+token), answer, "http", endpoint)
			if !slices.Contains(r.WriteTools, "github_create_issue") {
				t.Fatalf("write tools %v", r.WriteTools)
			}
			if len(r.Asked) != 1 || !strings.HasPrefix(r.Asked[0], strings.TrimSuffix(endpoint, "/")+"/approve/") {
				t.Errorf("asked %q, want one link to the approval page", r.Asked)
			}
			if len(r.Decisions) != 1 || r.Decisions[0].Page != 200 || r.Decisions[0].Post != 200 || !r.Decisions[0].Shows {
				t.Errorf("the person's page and decision: %+v", r.Decisions)
			}
			checkWriteAnswered(t, answer, r, p.fake)
		})
	}
	if strings.Contains(logs.String(), token) || strings.Contains(logs.String(), fakeapi.Token("github")) {
		t.Error("a token is in the log")
	}
}
