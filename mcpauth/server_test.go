package mcpauth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

const (
	owner    = "owner-secret-0123456789abcdef"
	redirect = "http://127.0.0.1:33418/callback"
	subject  = "person:tester"
)

// stack is an authorization server on a loopback TLS server, and a
// second one serving client ID metadata documents: /client.json lists
// redirect; /foreign.json lists only a foreign redirect URI;
// /impostor.json names another client_id.
type stack struct {
	as       *Server
	ts, docs *httptest.Server
	key      ed25519.PrivateKey
	clock    time.Time
}

func newStack(t *testing.T) *stack {
	t.Helper()
	st := &stack{clock: time.Now()}
	st.docs = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, uris := "https://"+r.Host+r.URL.Path, redirect
		switch r.URL.Path {
		case "/foreign.json":
			uris = "https://attacker.example/callback"
		case "/impostor.json":
			id = "https://" + r.Host + "/client.json"
		case "/missing.json":
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"Test Assistant","redirect_uris":[%q]}`, id, uris)
	}))
	t.Cleanup(st.docs.Close)
	_, st.key, _ = ed25519.GenerateKey(rand.Reader)
	mux := http.NewServeMux()
	st.ts = httptest.NewTLSServer(mux)
	t.Cleanup(st.ts.Close)
	var err error
	st.as, err = New(Config{Issuer: st.ts.URL, Resource: st.ts.URL + "/mcp", Subject: subject, Key: st.key, OwnerSecret: owner,
		HTTPClient: st.docs.Client(), Now: func() time.Time { return st.clock }})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/", st.as.Handler())
	return st
}

func challengeOf(verifier string) string {
	s := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(s[:])
}

const verifier = "a-pkce-verifier-of-at-least-forty-three-characters-0123"

// authQuery is a valid authorization request, changed by edit.
func (st *stack) authQuery(edit func(url.Values)) url.Values {
	q := url.Values{"response_type": {"code"}, "client_id": {st.docs.URL + "/client.json"}, "redirect_uri": {redirect},
		"state": {"st-1"}, "code_challenge": {challengeOf(verifier)}, "code_challenge_method": {"S256"},
		"resource": {st.ts.URL + "/mcp"}, "scope": {"mcp:read mcp:write"}}
	if edit != nil {
		edit(q)
	}
	return q
}

// approve posts the person's approval; it returns the response.
func (st *stack) approve(t *testing.T, q url.Values, secret string) *http.Response {
	t.Helper()
	c := st.ts.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	f := url.Values{}
	for k, v := range q {
		f[k] = v
	}
	f.Set("owner_secret", secret)
	f.Set("decision", "approve")
	resp, err := c.PostForm(st.ts.URL+"/authorize", f)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func (st *stack) code(t *testing.T) string {
	t.Helper()
	resp := st.approve(t, st.authQuery(nil), owner)
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc.Query().Get("code") == "" || loc.Query().Get("iss") != st.ts.URL || loc.Query().Get("state") != "st-1" {
		t.Fatalf("approval: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code")
}

func (st *stack) exchange(t *testing.T, f url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := st.ts.Client().PostForm(st.ts.URL+"/token", f)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (st *stack) tokenForm(code string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
		"client_id": {st.docs.URL + "/client.json"}, "code_verifier": {verifier}, "resource": {st.ts.URL + "/mcp"}}
}

// TestAuthorizationCodeFlow: metadata, consent page, approval, and a
// token the Verifier accepts with the asked scopes, the resource and the
// person; the code is spent once.
func TestAuthorizationCodeFlow(t *testing.T) {
	st := newStack(t)
	resp, err := st.ts.Client().Get(st.ts.URL + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if meta["issuer"] != st.ts.URL || fmt.Sprint(meta["code_challenge_methods_supported"]) != "[S256]" || meta["client_id_metadata_document_supported"] != true {
		t.Errorf("metadata %v", meta)
	}
	resp, err = st.ts.Client().Get(st.ts.URL + "/authorize?" + st.authQuery(nil).Encode())
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "Test Assistant") || !strings.Contains(string(page), "mcp:read mcp:write") {
		t.Errorf("consent page %d: %s", resp.StatusCode, page)
	}
	code := st.code(t)
	status, out := st.exchange(t, st.tokenForm(code))
	if status != 200 || out["token_type"] != "Bearer" || out["scope"] != "mcp:read mcp:write" || out["expires_in"] != float64(600) {
		t.Fatalf("token: %d %v", status, out)
	}
	v := &Verifier{Key: st.key.Public().(ed25519.PublicKey), Issuer: st.ts.URL, Resource: st.ts.URL + "/mcp/", Subject: subject}
	ti, err := v.Verify(context.Background(), out["access_token"].(string), nil)
	if err != nil || ti.UserID != subject || fmt.Sprint(ti.Scopes) != "[mcp:read mcp:write]" || ti.Expiration.Unix() != st.clock.Add(DefaultTokenTTL).Unix() {
		t.Errorf("verify: %v %+v", err, ti)
	}
	if status, out := st.exchange(t, st.tokenForm(code)); status != 400 || out["error"] != "invalid_grant" {
		t.Errorf("the code spent twice: %d %v", status, out)
	}
}

// TestAuthorizationRefusals: hostile authorization and token requests
// are refused; a refused client or redirect URI is never redirected to.
func TestAuthorizationRefusals(t *testing.T) {
	st := newStack(t)
	for _, tc := range []struct {
		name     string
		edit     func(url.Values)
		secret   string
		status   int
		errParam string // the error sent to the redirect URI; "" when none is
	}{
		{"foreign redirect_uri in the document", func(q url.Values) { q.Set("client_id", st.docs.URL+"/foreign.json") }, owner, 400, ""},
		{"redirect_uri not in the document", func(q url.Values) { q.Set("redirect_uri", "https://attacker.example/callback") }, owner, 400, ""},
		{"document naming another client", func(q url.Values) { q.Set("client_id", st.docs.URL+"/impostor.json") }, owner, 400, ""},
		{"document not found", func(q url.Values) { q.Set("client_id", st.docs.URL+"/missing.json") }, owner, 400, ""},
		{"http client_id", func(q url.Values) {
			q.Set("client_id", strings.Replace(st.docs.URL, "https", "http", 1)+"/client.json")
		}, owner, 400, ""},
		{"client_id without a path", func(q url.Values) { q.Set("client_id", st.docs.URL) }, owner, 400, ""},
		{"PKCE plain", func(q url.Values) { q.Set("code_challenge_method", "plain") }, owner, 302, "invalid_request"},
		{"no PKCE", func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }, owner, 302, "invalid_request"},
		{"another resource", func(q url.Values) { q.Set("resource", "https://other.example/mcp") }, owner, 302, "invalid_target"},
		{"unknown scope", func(q url.Values) { q.Set("scope", "mcp:read admin") }, owner, 302, "invalid_scope"},
		{"implicit grant", func(q url.Values) { q.Set("response_type", "token") }, owner, 302, "unsupported_response_type"},
		{"wrong owner secret", nil, "not-the-owner-secret-000", 401, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := st.approve(t, st.authQuery(tc.edit), tc.secret)
			loc, _ := url.Parse(resp.Header.Get("Location"))
			if resp.StatusCode != tc.status || loc.Query().Get("code") != "" || loc.Query().Get("error") != tc.errParam {
				t.Errorf("%d %q, want %d with error %q and no code", resp.StatusCode, resp.Header.Get("Location"), tc.status, tc.errParam)
			}
			if tc.status != 302 && resp.Header.Get("Location") != "" {
				t.Errorf("redirected to %q", resp.Header.Get("Location"))
			}
		})
	}

	for _, tc := range []struct {
		name string
		edit func(url.Values)
		want string
	}{
		{"PKCE verifier mismatch", func(f url.Values) { f.Set("code_verifier", "another-verifier-of-at-least-forty-three-characters-00") }, "invalid_grant"},
		{"no verifier", func(f url.Values) { f.Del("code_verifier") }, "invalid_grant"},
		{"another client", func(f url.Values) { f.Set("client_id", st.docs.URL+"/foreign.json") }, "invalid_grant"},
		{"another redirect_uri", func(f url.Values) { f.Set("redirect_uri", "http://127.0.0.1:1/cb") }, "invalid_grant"},
		{"another resource", func(f url.Values) { f.Set("resource", "https://other.example/mcp") }, "invalid_target"},
		{"made-up code", func(f url.Values) { f.Set("code", "ABCDEFGHIJKLMNOPQRSTUVWXYZ") }, "invalid_grant"},
		{"refresh grant", func(f url.Values) { f.Set("grant_type", "refresh_token") }, "unsupported_grant_type"},
	} {
		t.Run("token "+tc.name, func(t *testing.T) {
			code := st.code(t)
			f := st.tokenForm(code)
			tc.edit(f)
			if status, out := st.exchange(t, f); status != 400 || out["error"] != tc.want || out["access_token"] != nil {
				t.Errorf("%d %v, want 400 %s", status, out, tc.want)
			}
			if tc.want == "invalid_grant" && f.Get("code") == code {
				// A refused exchange spends the code: the right verifier is late.
				if status, _ := st.exchange(t, st.tokenForm(code)); status != 400 {
					t.Errorf("the code was usable after a refused exchange: %d", status)
				}
			}
		})
	}
	t.Run("token expired code", func(t *testing.T) {
		code := st.code(t)
		st.clock = st.clock.Add(DefaultCodeTTL + time.Second)
		if status, out := st.exchange(t, st.tokenForm(code)); status != 400 || out["error"] != "invalid_grant" {
			t.Errorf("%d %v", status, out)
		}
	})
}

// FuzzVerify: any string is refused with auth.ErrInvalidToken or, for a
// real token, accepted; never a panic, never the token in the error.
func FuzzVerify(f *testing.F) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	f.Add("eyJhbGciOiJFZERTQSJ9.e30.AAAA")
	f.Add("a.b.c")
	f.Add("")
	v := &Verifier{Key: key.Public().(ed25519.PublicKey), Issuer: "https://as", Resource: "https://mcp", Subject: "s"}
	f.Fuzz(func(t *testing.T, tok string) {
		_, err := v.Verify(context.Background(), tok, nil)
		if err == nil || !errors.Is(err, auth.ErrInvalidToken) {
			t.Fatalf("accepted or wrong error: %v", err)
		}
		if len(tok) > 8 && strings.Contains(err.Error(), tok) {
			t.Fatal("the error echoes the token")
		}
	})
}

// TestClientDocumentPublicOnly: by default the server fetches client ID
// metadata documents from public addresses only, so a client_id on
// loopback (or a private network) is refused and never redirected to.
func TestClientDocumentPublicOnly(t *testing.T) {
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the document on loopback was fetched")
	}))
	t.Cleanup(docs.Close)
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	as, err := New(Config{Issuer: "https://as.test", Resource: "https://as.test/mcp", Subject: subject, Key: key, OwnerSecret: owner})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{docs.URL + "/client.json", "https://10.0.0.1/client.json", "https://[::1]/client.json", "https://169.254.169.254/latest"} {
		q := url.Values{"client_id": {id}, "redirect_uri": {redirect}, "response_type": {"code"}}
		rec := httptest.NewRecorder()
		as.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/authorize?"+q.Encode(), nil))
		if rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" || !strings.Contains(rec.Body.String(), "invalid_client") {
			t.Errorf("%s: %d %q %q", id, rec.Code, rec.Header().Get("Location"), rec.Body.String())
		}
	}
}
