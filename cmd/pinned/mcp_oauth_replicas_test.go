package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/elevenmessenger/pinned/internal/testing/redistest"
)

// TestMCPOAuthCodesReplicas: two `pinned mcp --listen --oauth-resource`
// replicas of one person on one real redis-server. A code issued at A is
// redeemed at B (the access token works at A: one signing key); the same
// code again at A, or at B, is invalid_grant; a code raced at A and B at
// once yields one token. Without Redis, a code of A is unknown at B.
func TestMCPOAuthCodesReplicas(t *testing.T) {
	p := newPinnedEnv(t)
	rs := redistest.Start(t)
	const redirect = "http://127.0.0.1:33419/callback"
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"Replica Test","redirect_uris":[%q]}`, "https://"+r.Host+r.URL.Path, redirect)
	}))
	t.Cleanup(docs.Close)
	caFile := filepath.Join(t.TempDir(), "docs-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: docs.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	clientID := docs.URL + "/client.json"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addrA := ln.Addr().String()
	ln.Close()
	resource := "http://" + addrA + "/mcp" // the address both replicas stand behind
	env := []string{"PINNED_MCP_TOKEN=" + oauthListenToken, "PINNED_MCP_CONFIRM_KEY=" + strings.Repeat("3c", 32), "PINNED_MCP_OAUTH_KEY=" + strings.Repeat("7e", 32)}
	oauth := []string{"--oauth-resource", resource, "--oauth-client-cacert", caFile, "--oauth-allow-private-clients"}
	a, _, _ := startMCPListen(t, p, env, append([]string{"--listen", addrA, "--redis-url", rs.URL()}, oauth...)...)
	b, logB, _ := startMCPListen(t, p, env, append([]string{"--redis-url", rs.URL()}, oauth...)...)
	c, _, _ := startMCPListen(t, p, env, oauth...) // no Redis: its own memory

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// authorize approves at base and returns the code and its verifier.
	authorize := func(base string) (code, verifier string) {
		t.Helper()
		verifier = rand.Text() + rand.Text()
		sum := sha256.Sum256([]byte(verifier))
		resp, err := noRedirect.PostForm(base+"/authorize", url.Values{
			"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "state": {"s1"},
			"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
			"resource": {resource}, "scope": {"mcp:read"}, "owner_secret": {oauthListenToken}, "decision": {"approve"},
		})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || resp.StatusCode != http.StatusFound || loc.Query().Get("code") == "" {
			t.Fatalf("authorize at %s: %d %q", base, resp.StatusCode, resp.Header.Get("Location"))
		}
		return loc.Query().Get("code"), verifier
	}
	// redeem posts the code to base's token endpoint: the access token or
	// the error code.
	redeem := func(base, code, verifier string) (token, errCode string) {
		resp, err := http.PostForm(base+"/token", url.Values{
			"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
			"client_id": {clientID}, "redirect_uri": {redirect}, "resource": {resource},
		})
		if err != nil {
			t.Error(err)
			return "", "transport"
		}
		defer resp.Body.Close()
		var body struct {
			AccessToken string `json:"access_token"`
			Error       string `json:"error"`
		}
		raw, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(raw, &body)
		return body.AccessToken, body.Error
	}
	base := func(endpoint string) string { return strings.TrimSuffix(endpoint, "/") }

	code, verifier := authorize(base(a))
	tok, errCode := redeem(base(b), code, verifier)
	if tok == "" {
		t.Fatalf("a code of A redeemed at B: %q\n%s", errCode, logB)
	}
	for _, at := range []string{a, b} {
		if tok2, e := redeem(base(at), code, verifier); tok2 != "" || e != "invalid_grant" {
			t.Errorf("the code again at %s: token %v, error %q; want invalid_grant", at, tok2 != "", e)
		}
	}
	// The token B issued is good at A.
	req, _ := http.NewRequest(http.MethodPost, base(a)+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("B's token at A: %d", resp.StatusCode)
	}

	// Raced at A and B at once: one token.
	for range 3 {
		code, verifier := authorize(base(b))
		var wg sync.WaitGroup
		var mu sync.Mutex
		got := 0
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				at := a
				if i%2 == 1 {
					at = b
				}
				if tok, _ := redeem(base(at), code, verifier); tok != "" {
					mu.Lock()
					got++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if got != 1 {
			t.Errorf("one code raced at A and B gave %d tokens, want 1", got)
		}
	}

	// Without the shared store, a code lives in its replica's memory only.
	code, verifier = authorize(base(c))
	if tok, e := redeem(base(b), code, verifier); tok != "" || e != "invalid_grant" {
		t.Errorf("a code of the Redis-less replica at B: token %v, error %q", tok != "", e)
	}
	if tok, _ := redeem(base(c), code, verifier); tok == "" {
		t.Error("the Redis-less replica does not redeem its own code")
	}
}
