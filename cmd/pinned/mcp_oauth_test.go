package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
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
// (http on loopback); an OAuth key without it is refused.
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
