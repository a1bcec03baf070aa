package main

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
)

// TestMCPListenOAuth: `pinned mcp --listen --oauth-resource URL` publishes
// Protected Resource Metadata and its authorization server's metadata,
// and answers a request without a token 401 with resource_metadata; the
// static bearer token still works for scripts.
func TestMCPListenOAuth(t *testing.T) {
	p := newPinnedEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base := "http://" + addr
	_, stderr, stop := startMCPListen(t, p, []string{"PINNED_MCP_TOKEN=" + oauthListenToken}, "--listen", addr, "--oauth-resource", base+"/mcp")
	get := func(path string) map[string]any {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		return m
	}
	if prm := get("/.well-known/oauth-protected-resource/mcp"); prm["resource"] != base+"/mcp" || !strings.Contains(mustJSON(prm["authorization_servers"]), base) {
		t.Errorf("protected resource metadata %v", prm)
	}
	if asm := get("/.well-known/oauth-authorization-server"); asm["issuer"] != base || asm["client_id_metadata_document_supported"] != true || mustJSON(asm["code_challenge_methods_supported"]) != `["S256"]` {
		t.Errorf("authorization server metadata %v", asm)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, tc := range []struct {
		name, token string
		status      int
	}{{"no token", "", 401}, {"static token", oauthListenToken, 200}, {"made-up token", "eyJhbGciOiJFZERTQSJ9.e30.AAAA", 401}} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.status == 401 && !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`) {
				t.Errorf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	if err := stop(); err != nil {
		t.Errorf("exit: %v\n%s", err, stderr)
	}
	if strings.Contains(stderr.String(), oauthListenToken) || strings.Contains(stderr.String(), "eyJhbGciOiJFZERTQSJ9") {
		t.Error("a token is in the log")
	}
}

// TestMCPOAuthUsage: --oauth-resource needs --listen and an https URL
// (http on loopback); an OAuth key without it is refused; so are
// approval links off --listen, an unknown mode and a plain-http base.
func TestMCPOAuthUsage(t *testing.T) {
	t.Setenv("PINNED_MCP_TOKEN", oauthListenToken)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"stdio", []string{"--oauth-resource", "https://mcp.example.com/mcp"}, "--oauth-resource is for --listen"},
		{"plain http", []string{"--fake", "--listen", "127.0.0.1:0", "--oauth-resource", "http://mcp.example.com/mcp"}, "must be an https URL"},
		{"query", []string{"--fake", "--listen", "127.0.0.1:0", "--oauth-resource", "https://mcp.example.com/mcp?x=1"}, "must be an https URL"},
		{"approval links on stdio", []string{"--approval-links", "url"}, "--approval-links is for --listen"},
		{"approval links mode", []string{"--fake", "--listen", "127.0.0.1:0", "--approval-links", "yes"}, `--approval-links "yes": want off, url or always`},
		{"approval url without links", []string{"--fake", "--listen", "127.0.0.1:0", "--approval-url", "https://mcp.example.com"}, "--approval-url is for --approval-links"},
		{"approval url plain http", []string{"--fake", "--listen", "127.0.0.1:0", "--approval-links", "url", "--approval-url", "http://mcp.example.com"}, "must be an https URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			var out, errs bytes.Buffer
			if code := runMCP(tc.args, &out, &errs); code != 2 || !strings.Contains(errs.String(), tc.want) {
				t.Errorf("exit %d, stderr %q", code, errs.String())
			}
		})
	}
}

const oauthListenToken = "oauth-listen-test-token-0123456789"

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestTypeScriptClientOAuth: the official TypeScript SDK client's own
// OAuth support against the real binary with --oauth-resource: from the
// 401 it discovers the metadata, identifies itself by a client ID
// metadata document (served here over loopback TLS), authorises with
// PKCE S256 on the consent page, reads, is refused the write with
// insufficient_scope (nothing sent), steps up to mcp:write and writes
// once after accepting the confirmation. No token in a message or the
// log.
func TestTypeScriptClientOAuth(t *testing.T) {
	node := needTSClient(t)
	p := newPinnedEnv(t)
	if code, out, errs := p.run(t, fakeapi.Token("github"), append([]string{"connect", "github", "--cap", "write"}, p.fakeFlags()...)...); code != 0 {
		t.Fatalf("connect: %d %s %s", code, out, errs)
	}
	const redirect = "http://127.0.0.1:33418/callback"
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"Test Assistant","redirect_uris":[%q],"token_endpoint_auth_method":"none"}`, "https://"+r.Host+r.URL.Path, redirect)
	}))
	t.Cleanup(docs.Close)
	caFile := filepath.Join(t.TempDir(), "docs-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: docs.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base := "http://" + addr
	_, logs, stop := startMCPListen(t, p, []string{"PINNED_MCP_TOKEN=" + oauthListenToken}, "--listen", addr,
		"--oauth-resource", base+"/mcp", "--oauth-subject", "pinned-tester", "--oauth-client-cacert", caFile, "--oauth-allow-private-clients")
	p.fake.Reset()

	cmd := exec.Command(node, "oauth.mjs", base+"/mcp")
	cmd.Dir = tsClientDir
	cmd.Env = append(append([]string{}, p.env...), "CLIENT_ID="+docs.URL+"/client.json", "REDIRECT_URI="+redirect, "OWNER_SECRET="+oauthListenToken)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("oauth.mjs did not finish in 2 minutes\n%s", errb.String())
	}
	var r struct {
		Scopes              []string
		PKCE                string
		Read, Write         struct{ IsError bool }
		RefusedBeforeStepUp string
		Asked               []string
		Tokens              int
		TokenInOutput       bool
		Error               string
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Error != "" {
		t.Fatalf("oauth.mjs: %v %s\n%s\nstderr %s\nserver log %s", err, r.Error, out.String(), errb.String(), logs.String())
	}
	if want := []string{"mcp:read", "mcp:read mcp:write"}; !slices.Equal(r.Scopes, want) || r.PKCE != "S256" {
		t.Errorf("authorisations asked %q (PKCE %q), want %q with S256", r.Scopes, r.PKCE, want)
	}
	if r.Read.IsError || r.Write.IsError || len(r.Asked) != 1 || r.Tokens != 2 {
		t.Errorf("read error %v, write error %v, asked %d, tokens %d", r.Read.IsError, r.Write.IsError, len(r.Asked), r.Tokens)
	}
	if !strings.Contains(r.RefusedBeforeStepUp, "Unauthorized") {
		t.Errorf("the write before step-up: %q", r.RefusedBeforeStepUp)
	}
	if n := countWrites(p.fake); n != 1 {
		t.Errorf("%d writes at the fake, want 1", n)
	}
	if r.TokenInOutput {
		t.Error("an access token is in a message")
	}
	if err := stop(); err != nil {
		t.Errorf("exit: %v", err)
	}
	if s := logs.String(); strings.Contains(s, "eyJ") || strings.Contains(s, oauthListenToken) || strings.Contains(s, fakeapi.Token("github")) {
		t.Error("a token is in the server log")
	}
	if !strings.Contains(logs.String(), `"reason":"insufficient_scope"`) {
		t.Error("the log does not record the insufficient_scope refusal")
	}
}
