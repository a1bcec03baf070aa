package mcpserver

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/elevenmessenger/pinned/internal/connstore"
	"github.com/elevenmessenger/pinned/mcpauth"
)

// oauthStack is a remote pinned mcp with its authorization server on one
// loopback TLS origin, and a client's metadata document on another.
type oauthStack struct {
	e        *env
	ts       *httptest.Server // the MCP endpoint (/mcp), PRM and the AS
	clientTS *httptest.Server // serves the client ID metadata document
	key      ed25519.PrivateKey
	resource string
	clientID string
	redirect string
}

const oauthSubject = "person:pinned-tester"

func newOAuthStack(t *testing.T, protocol string) *oauthStack {
	t.Helper()
	st := &oauthStack{e: newEnv(t, envOpts{conns: []connstore.Connection{ghWrite, stripeRead}, protocol: protocol})}
	_, st.key, _ = ed25519.GenerateKey(rand.Reader)
	st.clientTS = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		redirect := "http://127.0.0.1:33418/callback"
		if r.URL.Path == "/foreign.json" {
			redirect = "https://attacker.example/callback"
		}
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"Test Assistant","redirect_uris":[%q],"token_endpoint_auth_method":"none"}`,
			"https://"+r.Host+r.URL.Path, redirect)
	}))
	t.Cleanup(st.clientTS.Close)
	st.clientID = st.clientTS.URL + "/client.json"
	st.redirect = "http://127.0.0.1:33418/callback"

	mux := http.NewServeMux()
	st.ts = httptest.NewUnstartedServer(mux)
	st.ts.StartTLS()
	t.Cleanup(st.ts.Close)
	issuer := st.ts.URL
	st.resource = issuer + "/mcp"
	as, err := mcpauth.New(mcpauth.Config{Issuer: issuer, Resource: st.resource, Subject: oauthSubject, Key: st.key,
		OwnerSecret: httpToken, HTTPClient: st.clientTS.Client()})
	if err != nil {
		t.Fatal(err)
	}
	v := &mcpauth.Verifier{Key: st.key.Public().(ed25519.PublicKey), Issuer: issuer, Resource: st.resource, Subject: oauthSubject}
	h := st.e.srv.HandlerAuth(Auth{Token: httpToken, Verify: v.Verify,
		Metadata:    &oauthex.ProtectedResourceMetadata{Resource: st.resource, AuthorizationServers: []string{issuer}, ScopesSupported: []string{ScopeRead, ScopeWrite}, BearerMethodsSupported: []string{"header"}},
		MetadataURL: issuer + "/.well-known/oauth-protected-resource/mcp"})
	ash := as.Handler()
	for _, p := range []string{"/.well-known/oauth-authorization-server", "/authorize", "/token", "/jwks"} {
		mux.Handle(p, ash)
	}
	mux.Handle("/", h)
	return st
}

// approve plays the browser and the person: it opens the consent page,
// approves with the owner secret, and returns the redirect's query.
func (st *oauthStack) approve(t *testing.T, authURL, secret string) url.Values {
	t.Helper()
	c := st.ts.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "Test Assistant") {
		return url.Values{"error": {fmt.Sprintf("consent page %d", resp.StatusCode)}}
	}
	u, _ := url.Parse(authURL)
	form := u.Query()
	form.Set("owner_secret", secret)
	form.Set("decision", "approve")
	resp, err = c.PostForm(st.ts.URL+"/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), st.redirect) {
		return url.Values{"error": {fmt.Sprintf("approval %d to %q", resp.StatusCode, resp.Header.Get("Location"))}}
	}
	return loc.Query()
}

// tokenRecorder records the bearer tokens a client sends.
type tokenRecorder struct {
	mu     sync.Mutex
	tokens []string
	next   http.RoundTripper
}

func (r *tokenRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if h := req.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		r.mu.Lock()
		r.tokens = append(r.tokens, strings.TrimPrefix(h, "Bearer "))
		r.mu.Unlock()
	}
	return r.next.RoundTrip(req)
}

// TestOAuthFlow: the Go SDK client's own OAuth support against a remote
// pinned mcp: a 401 with resource_metadata, Protected Resource Metadata,
// RFC 8414 metadata, a Client ID Metadata Document, the authorization
// code with PKCE approved by the person, a read; the write refused 403
// insufficient_scope with nothing sent, step-up to mcp:write, and the
// write run once after the person confirms. No token in any log or
// message.
func TestOAuthFlow(t *testing.T) {
	for _, protocol := range []string{"", Revision20251125} {
		t.Run("protocol "+protocol, func(t *testing.T) {
			st := newOAuthStack(t, "")
			var scopes []string
			var mu sync.Mutex
			handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
				ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: st.clientID},
				RedirectURL:                    st.redirect,
				Client:                         st.ts.Client(),
				AuthorizationCodeFetcher: func(_ context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
					u, _ := url.Parse(a.URL)
					q := u.Query()
					asked := strings.Fields(q.Get("scope"))
					slices.Sort(asked) // the SDK's step-up union has no order
					mu.Lock()
					scopes = append(scopes, strings.Join(asked, " "))
					mu.Unlock()
					if q.Get("code_challenge_method") != "S256" || q.Get("resource") != st.resource || q.Get("client_id") != st.clientID {
						t.Errorf("authorization request: %v", q)
					}
					got := st.approve(t, a.URL, httpToken)
					if got.Get("code") == "" {
						return nil, fmt.Errorf("not approved: %v", got.Get("error"))
					}
					return &auth.AuthorizationResult{Code: got.Get("code"), State: got.Get("state"), Iss: got.Get("iss")}, nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			rec := &tokenRecorder{next: st.ts.Client().Transport}
			var asked []string
			cs, err := newClient(clientOpts{answer: "accept", asked: &asked}).Connect(context.Background(), &mcp.LoggingTransport{Writer: st.e.wire, Transport: &mcp.StreamableClientTransport{
				Endpoint: st.resource, HTTPClient: &http.Client{Transport: rec}, OAuthHandler: handler, MaxRetries: -1,
			}}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_get_viewer", Arguments: map[string]any{}})
			if err != nil || res.IsError || !strings.Contains(toolText(t, res), `"login"`) {
				t.Fatalf("read: %v %+v", err, res)
			}
			if n := requestsTo(st.e.fake, "POST", "/repos/"); n != 0 {
				t.Fatalf("%d writes before the write call", n)
			}
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "github_create_issue", Arguments: issueArgs})
			if err != nil || res.IsError {
				t.Fatalf("write after step-up: %v %+v", err, res)
			}
			if n := requestsTo(st.e.fake, "POST", "/repos/"); n != 1 {
				t.Errorf("%d writes reached the fake, want 1", n)
			}
			if len(asked) != 1 {
				t.Errorf("the person was asked %d times, want 1", len(asked))
			}
			if want := []string{ScopeRead, ScopeRead + " " + ScopeWrite}; fmt.Sprint(scopes) != fmt.Sprint(want) {
				t.Errorf("authorised scopes %q, want %q (read, then step-up)", scopes, want)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.tokens) < 2 {
				t.Fatalf("%d bearer tokens sent", len(rec.tokens))
			}
			for _, tok := range append(rec.tokens, httpToken) {
				for name, text := range map[string]string{"wire": st.e.wire.String(), "log": st.e.logs.String()} {
					if strings.Contains(text, tok) || strings.Contains(text, tok[:16]) {
						t.Errorf("a bearer token is in the %s", name)
					}
				}
			}
		})
	}
}

// sign makes an access token with the stack's key (or key), changed by
// edit.
func (st *oauthStack) sign(t *testing.T, key ed25519.PrivateKey, edit func(*mcpauth.Claims)) string {
	t.Helper()
	now := time.Now()
	c := mcpauth.Claims{RegisteredClaims: jwt.RegisteredClaims{Issuer: st.ts.URL, Subject: oauthSubject, Audience: jwt.ClaimStrings{st.resource},
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(5 * time.Minute)), ID: "t"}, ClientID: st.clientID, Scope: ScopeRead + " " + ScopeWrite}
	if edit != nil {
		edit(&c)
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOAuthHostileTokens: tokens for another resource, person or issuer,
// expired, tampered, signed by another key, unsigned or HMAC-signed are
// refused 401 invalid_token with resource_metadata; a read-only token is
// refused a write 403 insufficient_scope (op tool and compact dispatcher)
// but may read; nothing reaches the provider and no token is logged.
func TestOAuthHostileTokens(t *testing.T) {
	st := newOAuthStack(t, "")
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	good := st.sign(t, st.key, nil)
	tampered := good[:len(good)-4] + map[bool]string{true: "AAAA", false: "BBBB"}[!strings.HasSuffix(good, "AAAA")]
	mid := strings.Split(good, ".")
	var claims map[string]any
	raw, _ := jwt.NewParser().DecodeSegment(mid[1])
	_ = json.Unmarshal(raw, &claims)
	claims["sub"] = "person:someone-else"
	forgedBody, _ := json.Marshal(claims)
	swapped := mid[0] + "." + base64.RawURLEncoding.EncodeToString(forgedBody) + "." + mid[2]
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims(claims)).SignedString(jwt.UnsafeAllowNoneSignatureType)
	hmac, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": st.ts.URL, "sub": oauthSubject, "aud": st.resource, "exp": time.Now().Add(time.Hour).Unix(), "scope": "mcp:read mcp:write"}).
		SignedString([]byte(st.key.Public().(ed25519.PublicKey)))
	readOnly := st.sign(t, st.key, func(c *mcpauth.Claims) { c.Scope = ScopeRead })

	call := func(name string, args any) string {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{
			"name": name, "arguments": args,
			"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": Revision20260728, "io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
				"io.modelcontextprotocol/clientInfo": map[string]any{"name": "t", "version": "1"}}}})
		return string(b)
	}
	post := func(token, body string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, st.resource, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", Revision20260728)
		req.Header.Set("Mcp-Method", "tools/call")
		var p struct{ Params struct{ Name string } }
		_ = json.Unmarshal([]byte(body), &p)
		req.Header.Set("Mcp-Name", p.Params.Name)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := st.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	write := call("github_create_issue", issueArgs)
	for _, tc := range []struct {
		name, token, body string
		status            int
		challenge         string
	}{
		{"no token", "", write, 401, `resource_metadata="` + st.ts.URL + `/.well-known/oauth-protected-resource/mcp"`},
		{"another resource", st.sign(t, st.key, func(c *mcpauth.Claims) { c.Audience = jwt.ClaimStrings{st.ts.URL + "/other"} }), write, 401, `error="invalid_token"`},
		{"no audience", st.sign(t, st.key, func(c *mcpauth.Claims) { c.Audience = nil }), write, 401, `error="invalid_token"`},
		{"another person", st.sign(t, st.key, func(c *mcpauth.Claims) { c.Subject = "person:someone-else" }), write, 401, `error="invalid_token"`},
		{"another issuer", st.sign(t, st.key, func(c *mcpauth.Claims) { c.Issuer = "https://issuer.invalid" }), write, 401, `error="invalid_token"`},
		{"expired", st.sign(t, st.key, func(c *mcpauth.Claims) { c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Minute)) }), write, 401, `error="invalid_token"`},
		{"no expiry", st.sign(t, st.key, func(c *mcpauth.Claims) { c.ExpiresAt = nil }), write, 401, `error="invalid_token"`},
		{"tampered signature", tampered, write, 401, `error="invalid_token"`},
		{"tampered claims", swapped, write, 401, `error="invalid_token"`},
		{"another key", st.sign(t, otherKey, nil), write, 401, `error="invalid_token"`},
		{"alg none", none, write, 401, `error="invalid_token"`},
		{"HMAC with the public key", hmac, write, 401, `error="invalid_token"`},
		{"no scope", st.sign(t, st.key, func(c *mcpauth.Claims) { c.Scope = "" }), write, 403, `error="insufficient_scope"`},
		{"read-only token, write op tool", readOnly, write, 403, `error="insufficient_scope", scope="mcp:read mcp:write"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(tc.token, tc.body)
			if resp.StatusCode != tc.status || !strings.Contains(resp.Header.Get("WWW-Authenticate"), tc.challenge) {
				t.Errorf("%d %q, want %d with %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tc.status, tc.challenge)
			}
			if !strings.Contains(body, `"id":null`) || !strings.Contains(body, `"code":"`) {
				t.Errorf("refusal is not a JSON-RPC error: %s", body)
			}
			if tc.token != "" && strings.Contains(body, tc.token[:20]) {
				t.Error("the refusal echoes the token")
			}
		})
	}
	// The read-only token reads.
	resp, body := post(readOnly, call("github_get_viewer", map[string]any{}))
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "pinned-tester") {
		t.Errorf("read with mcp:read: %d %s", resp.StatusCode, body)
	}
	if n := requestsTo(st.e.fake, "POST", "/repos/"); n != 0 {
		t.Errorf("%d writes reached the fake, want 0", n)
	}
	resp, _ = post("", "")
	if resp.StatusCode != 401 {
		t.Errorf("empty: %d", resp.StatusCode)
	}
	// Protected Resource Metadata, unauthenticated.
	r, err := st.ts.Client().Get(st.ts.URL + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var prm oauthex.ProtectedResourceMetadata
	_ = json.NewDecoder(r.Body).Decode(&prm)
	r.Body.Close()
	if prm.Resource != st.resource || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != st.ts.URL {
		t.Errorf("protected resource metadata %+v", prm)
	}
	for _, tok := range []string{good, readOnly, tampered} {
		if strings.Contains(st.e.logs.String(), tok[:20]) {
			t.Error("a token is in the log")
		}
	}
}

// TestOAuthCompactWriteNeedsScope: a compact dispatcher asked for a write
// op with a read-only token is refused 403; asked for a read, served.
func TestOAuthCompactWriteNeedsScope(t *testing.T) {
	e := newEnv(t, envOpts{conns: []connstore.Connection{ghWrite}, tools: ToolsCompact})
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	v := &mcpauth.Verifier{Key: key.Public().(ed25519.PublicKey), Issuer: "https://as.test", Resource: "https://mcp.test/", Subject: oauthSubject}
	ts := httptest.NewServer(e.srv.HandlerAuth(Auth{Token: httpToken, Verify: v.Verify}))
	t.Cleanup(ts.Close)
	tok, _ := jwt.NewWithClaims(jwt.SigningMethodEdDSA, mcpauth.Claims{RegisteredClaims: jwt.RegisteredClaims{Issuer: "https://as.test", Subject: oauthSubject,
		Audience: jwt.ClaimStrings{"https://mcp.test"}, IssuedAt: jwt.NewNumericDate(time.Now()), ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Minute))}, Scope: ScopeRead}).SignedString(key)
	for _, tc := range []struct {
		name, op string
		status   int
	}{{"write op", "create_issue", 403}, {"read op", "get_viewer", 200}} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{}
			if tc.op == "create_issue" {
				args = issueArgs
			}
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": "github_op", "arguments": map[string]any{"op": tc.op, "args": args},
				"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": Revision20260728, "io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}}, "io.modelcontextprotocol/clientInfo": map[string]any{"name": "t", "version": "1"}}}})
			req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(string(b)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", Revision20260728)
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "github_op")
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
	if n := requestsTo(e.fake, "POST", "/repos/"); n != 0 {
		t.Errorf("%d writes reached the fake", n)
	}
}
