package fakeapi

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

const testRedirect = "http://127.0.0.1:8081/oauth/cb"

// testVerifier is a valid RFC 7636 code verifier (43 characters).
const testVerifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"

func challengeOf(v string) string {
	h := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// authorize sends an authorization request and returns the redirect
// query (or fails the test when there is no redirect).
func authorize(t *testing.T, s *Server, service string, q url.Values) url.Values {
	t.Helper()
	authURL, _ := OAuthEndpoints(service)
	status, hdr, body := do(t, s, http.MethodGet, authURL+"?"+q.Encode(), nil, "")
	if status != http.StatusFound {
		t.Fatalf("authorize: status %d, want 302: %s", status, body)
	}
	loc, err := url.Parse(hdr.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != strings.Split(q.Get("redirect_uri"), "?")[0] {
		t.Fatalf("redirected to %s, want %s", got, q.Get("redirect_uri"))
	}
	return loc.Query()
}

func authQuery(service, scope string, pkce bool) url.Values {
	q := url.Values{
		"client_id": {OAuthClientID(service)}, "redirect_uri": {testRedirect},
		"response_type": {"code"}, "state": {"st-123"},
	}
	if scope != "" {
		q.Set("scope", scope)
	}
	if pkce {
		q.Set("code_challenge", challengeOf(testVerifier))
		q.Set("code_challenge_method", "S256")
	}
	return q
}

// tokenCall posts a form to a service's token endpoint with the default
// client's credentials in the body and decodes the answer (JSON or form).
func tokenCall(t *testing.T, s *Server, service string, form url.Values, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	_, tokenURL := OAuthEndpoints(service)
	if !form.Has("client_id") {
		form.Set("client_id", OAuthClientID(service))
		form.Set("client_secret", OAuthClientSecret(service))
	}
	h := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for k, v := range hdr {
		h[k] = v
	}
	status, rh, body := do(t, s, http.MethodPost, tokenURL, h, form.Encode())
	out := map[string]any{}
	if strings.HasPrefix(rh.Get("Content-Type"), "application/x-www-form-urlencoded") {
		v, err := url.ParseQuery(string(body))
		if err != nil {
			t.Fatal(err)
		}
		for k := range v {
			out[k] = v.Get(k)
		}
		out["_form"] = true
		return status, out
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("token answer is neither form nor JSON: %v: %s", err, body)
	}
	return status, out
}

// apiWorks reports the status of the service's viewer call with an OAuth
// access token (always Bearer).
func viewerStatus(t *testing.T, s *Server, service, token string) int {
	t.Helper()
	var method, u, body string
	hdr := bearer(token)
	switch service {
	case GitHub:
		method, u = http.MethodGet, "https://api.github.com/user"
	case DNSimple:
		method, u = http.MethodGet, "https://api.dnsimple.com/v2/whoami"
	case Stripe:
		method, u = http.MethodGet, "https://api.stripe.com/v1/account"
	case HubSpot:
		method, u = http.MethodGet, "https://api.hubapi.com/account-info/v3/details"
	case Linear:
		method, u, body = http.MethodPost, "https://api.linear.app/graphql", `{"query":"query { viewer { id } }"}`
		hdr["Content-Type"] = "application/json"
	}
	status, _, _ := do(t, s, method, u, hdr, body)
	return status
}

func TestOAuthEndpointsMatchManifests(t *testing.T) {
	files, err := filepath.Glob("../../../registry/manifests/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("manifests: %v", err)
	}
	for _, f := range files {
		var m struct {
			ID   string `json:"id"`
			Auth struct {
				OAuth *struct {
					AuthorizeURL string `json:"authorize_url"`
					TokenURL     string `json:"token_url"`
					PKCE         bool   `json:"pkce"`
					Refresh      bool   `json:"refresh"`
				} `json:"oauth"`
			} `json:"auth"`
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		t.Run(m.ID, func(t *testing.T) {
			if m.Auth.OAuth == nil {
				t.Skip("no oauth")
			}
			a, tok := OAuthEndpoints(m.ID)
			if a != m.Auth.OAuth.AuthorizeURL || tok != m.Auth.OAuth.TokenURL {
				t.Errorf("fake serves %s %s, manifest says %s %s", a, tok, m.Auth.OAuth.AuthorizeURL, m.Auth.OAuth.TokenURL)
			}
			p := oauthOf(m.ID)
			if p.PKCE != m.Auth.OAuth.PKCE || p.Refresh != m.Auth.OAuth.Refresh {
				t.Errorf("fake pkce=%v refresh=%v, manifest pkce=%v refresh=%v", p.PKCE, p.Refresh, m.Auth.OAuth.PKCE, m.Auth.OAuth.Refresh)
			}
		})
	}
}

func TestOAuthFlowPerService(t *testing.T) {
	tests := []struct {
		name, service, scope string
		pkce                 bool
		expiresIn            float64 // 0: not reported
		refresh              bool
	}{
		{name: "github", service: GitHub, pkce: true, expiresIn: 28800, refresh: true},
		{name: "hubspot", service: HubSpot, scope: "oauth crm.objects.contacts.read", expiresIn: 1800, refresh: true},
		{name: "linear", service: Linear, scope: "read,issues:create", pkce: true, expiresIn: 86399, refresh: true},
		{name: "dnsimple", service: DNSimple},
		{name: "stripe", service: Stripe, scope: "read_write", refresh: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			red := authorize(t, s, tt.service, authQuery(tt.service, tt.scope, tt.pkce))
			if red.Get("state") != "st-123" || red.Get("code") == "" {
				t.Fatalf("redirect query %v", red)
			}
			ars := s.AuthorizeRequests(tt.service)
			if len(ars) != 1 || ars[0].Scope != tt.scope {
				t.Fatalf("recorded %+v", ars)
			}
			form := url.Values{"grant_type": {"authorization_code"}, "code": {red.Get("code")}, "redirect_uri": {testRedirect}}
			if tt.pkce {
				form.Set("code_verifier", testVerifier)
			}
			hdr := map[string]string{"Accept": "application/json"}
			status, tok := tokenCall(t, s, tt.service, form, hdr)
			if status != http.StatusOK || tok["error"] != nil || tok["status"] != nil {
				t.Fatalf("exchange: %d %v", status, tok)
			}
			access, _ := tok["access_token"].(string)
			refresh, _ := tok["refresh_token"].(string)
			if access == "" || (refresh != "") != tt.refresh {
				t.Fatalf("exchange answer %v", tok)
			}
			if got, _ := tok["expires_in"].(float64); got != tt.expiresIn {
				t.Errorf("expires_in = %v, want %v", tok["expires_in"], tt.expiresIn)
			}
			if st := viewerStatus(t, s, tt.service, access); st != http.StatusOK {
				t.Fatalf("issued token on the API: %d", st)
			}
			// The code is single-use.
			if status, again := tokenCall(t, s, tt.service, form, hdr); status == http.StatusOK && again["error"] == nil {
				t.Fatalf("code reuse accepted: %v", again)
			}
			if codes, refs := s.TokenRequests(tt.service); codes != 2 || refs != 0 {
				t.Errorf("TokenRequests = %d, %d", codes, refs)
			}
			if !tt.refresh {
				st, ans := tokenCall(t, s, tt.service, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}}, nil)
				if st != http.StatusBadRequest || ans["error"] != "unsupported_grant_type" {
					t.Errorf("refresh on a provider without refresh: %d %v", st, ans)
				}
				return
			}
			rf := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}
			status, tok2 := tokenCall(t, s, tt.service, rf, hdr)
			if status != http.StatusOK || tok2["access_token"] == "" || tok2["refresh_token"] == refresh {
				t.Fatalf("refresh: %d %v", status, tok2)
			}
			if st := viewerStatus(t, s, tt.service, tok2["access_token"].(string)); st != http.StatusOK {
				t.Fatalf("refreshed token on the API: %d", st)
			}
			// Single-use: the old refresh token is dead.
			status, dead := tokenCall(t, s, tt.service, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}, hdr)
			switch tt.service {
			case GitHub:
				if status != http.StatusOK || dead["error"] != "bad_refresh_token" {
					t.Errorf("github reuse: %d %v", status, dead)
				}
			case HubSpot:
				if status != http.StatusBadRequest || dead["status"] != "BAD_REFRESH_TOKEN" || dead["error"] != nil {
					t.Errorf("hubspot reuse: %d %v", status, dead)
				}
			default:
				if status != http.StatusBadRequest || dead["error"] != "invalid_grant" {
					t.Errorf("reuse: %d %v", status, dead)
				}
			}
			if _, refs := s.TokenRequests(tt.service); refs != 2 {
				t.Errorf("refreshes = %d, want 2", refs)
			}
		})
	}
}

func TestOAuthTokensExpire(t *testing.T) {
	s := newServer(t)
	var mu sync.Mutex
	now := time.Now()
	s.SetClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	issue := func(service, scope string) string {
		red := authorize(t, s, service, authQuery(service, scope, false))
		_, tok := tokenCall(t, s, service, url.Values{"grant_type": {"authorization_code"}, "code": {red.Get("code")}, "redirect_uri": {testRedirect}}, nil)
		return tok["access_token"].(string)
	}
	hub := issue(HubSpot, "oauth")
	lin := issue(Linear, "read")
	s.SetOAuthLifetime(Stripe, 5*time.Minute)
	str := issue(Stripe, "read_write")
	dns := issue(DNSimple, "")
	tests := []struct {
		name    string
		advance time.Duration
		want    map[string]int // service -> viewer status
	}{
		{name: "fresh", want: map[string]int{HubSpot: 200, Linear: 200, Stripe: 200, DNSimple: 200}},
		{name: "after 29m59s", advance: 29*time.Minute + 59*time.Second, want: map[string]int{HubSpot: 200, Stripe: 401}},
		{name: "after 30m", advance: time.Second, want: map[string]int{HubSpot: 401, Linear: 200}},
		{name: "after 24h", advance: 24 * time.Hour, want: map[string]int{Linear: 401, DNSimple: 200}},
	}
	toks := map[string]string{HubSpot: hub, Linear: lin, Stripe: str, DNSimple: dns}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			advance(tt.advance)
			for svc, want := range tt.want {
				if got := viewerStatus(t, s, svc, toks[svc]); got != want {
					t.Errorf("%s: %d, want %d", svc, got, want)
				}
			}
		})
	}
}

func TestOAuthPKCE(t *testing.T) {
	other := "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5X2ZyZWQ"
	tests := []struct {
		name      string
		challenge bool
		verifier  string
		ok        bool
	}{
		{name: "right verifier", challenge: true, verifier: testVerifier, ok: true},
		{name: "wrong verifier", challenge: true, verifier: other},
		{name: "missing verifier", challenge: true},
		{name: "short verifier", challenge: true, verifier: "abc"},
		{name: "verifier without challenge", verifier: testVerifier},
		{name: "neither", ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			red := authorize(t, s, Linear, authQuery(Linear, "read", tt.challenge))
			form := url.Values{"grant_type": {"authorization_code"}, "code": {red.Get("code")}, "redirect_uri": {testRedirect}}
			if tt.verifier != "" {
				form.Set("code_verifier", tt.verifier)
			}
			status, tok := tokenCall(t, s, Linear, form, nil)
			if ok := status == http.StatusOK && tok["access_token"] != nil; ok != tt.ok {
				t.Fatalf("ok = %v (%d %v), want %v", ok, status, tok, tt.ok)
			}
			if !tt.ok && tok["error"] != "invalid_grant" {
				t.Errorf("error %v, want invalid_grant", tok["error"])
			}
		})
	}
}

func TestOAuthAuthorizeValidation(t *testing.T) {
	tests := []struct {
		name    string
		service string
		edit    func(q url.Values)
		deny    string
		status  int    // when not a redirect
		errCode string // error in the redirect
	}{
		{name: "unknown client", service: GitHub, edit: func(q url.Values) { q.Set("client_id", "nope") }, status: 404},
		{name: "redirect not loopback", service: GitHub, edit: func(q url.Values) { q.Set("redirect_uri", "https://evil.example/cb") }, status: 400},
		{name: "missing redirect", service: GitHub, edit: func(q url.Values) { q.Del("redirect_uri") }, status: 400},
		{name: "duplicate parameter", service: GitHub, edit: func(q url.Values) { q.Add("state", "x") }, status: 400},
		{name: "implicit grant", service: GitHub, edit: func(q url.Values) { q.Set("response_type", "token") }, errCode: "unsupported_response_type"},
		{name: "no state", service: GitHub, edit: func(q url.Values) { q.Del("state") }, errCode: "invalid_request"},
		{name: "plain pkce", service: GitHub, edit: func(q url.Values) { q.Set("code_challenge", testVerifier); q.Set("code_challenge_method", "plain") }, errCode: "invalid_request"},
		{name: "linear space separator", service: Linear, edit: func(q url.Values) { q.Set("scope", "read issues:create") }, errCode: "invalid_scope"},
		{name: "hubspot unknown scope", service: HubSpot, edit: func(q url.Values) { q.Set("scope", "oauth tickets") }, errCode: "invalid_scope"},
		{name: "stripe read_only needs approval", service: Stripe, edit: func(q url.Values) { q.Set("scope", "read_only") }, errCode: "invalid_scope"},
		{name: "member cancels", service: HubSpot, deny: "access_denied", errCode: "access_denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			s.SetAuthorizeError(tt.service, tt.deny)
			q := authQuery(tt.service, "", false)
			if tt.edit != nil {
				tt.edit(q)
			}
			authURL, _ := OAuthEndpoints(tt.service)
			status, hdr, body := do(t, s, http.MethodGet, authURL+"?"+q.Encode(), nil, "")
			if tt.status != 0 {
				if status != tt.status || hdr.Get("Location") != "" {
					t.Fatalf("status %d location %q, want %d without redirect: %s", status, hdr.Get("Location"), tt.status, body)
				}
				return
			}
			if status != http.StatusFound {
				t.Fatalf("status %d: %s", status, body)
			}
			loc, _ := url.Parse(hdr.Get("Location"))
			if got := loc.Query().Get("error"); got != tt.errCode || loc.Query().Get("code") != "" {
				t.Fatalf("redirect %s, want error=%s", loc, tt.errCode)
			}
			if st := q.Get("state"); st != "" && loc.Query().Get("state") != st {
				t.Errorf("state not echoed: %s", loc)
			}
		})
	}
}

func TestOAuthRegisteredClient(t *testing.T) {
	s := newServer(t)
	s.RegisterOAuthClient(Linear, "my-id", "my-secret", "https://broker.example/oauth/linear/callback")
	q := authQuery(Linear, "read", false)
	authURL, tokenURL := OAuthEndpoints(Linear)
	if status, _, _ := do(t, s, http.MethodGet, authURL+"?"+q.Encode(), nil, ""); status != http.StatusNotFound {
		t.Fatalf("the replaced default client still works: %d", status)
	}
	q.Set("client_id", "my-id")
	if status, _, _ := do(t, s, http.MethodGet, authURL+"?"+q.Encode(), nil, ""); status != http.StatusBadRequest {
		t.Fatalf("an unregistered loopback redirect is accepted: %d", status)
	}
	q.Set("redirect_uri", "https://broker.example/oauth/linear/callback")
	red := authorize(t, s, Linear, q)
	tests := []struct {
		name   string
		basic  [2]string
		form   url.Values
		status int
	}{
		{name: "wrong secret in body", form: url.Values{"client_id": {"my-id"}, "client_secret": {"nope"}}, status: 401},
		{name: "both basic and body secret", basic: [2]string{"my-id", "my-secret"}, form: url.Values{"client_secret": {"my-secret"}}, status: 401},
		{name: "basic", basic: [2]string{"my-id", "my-secret"}, form: url.Values{}, status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.form
			f.Set("grant_type", "authorization_code")
			f.Set("code", red.Get("code"))
			f.Set("redirect_uri", "https://broker.example/oauth/linear/callback")
			req, _ := http.NewRequest(http.MethodPost, tokenURL, strings.NewReader(f.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tt.basic[0] != "" {
				req.SetBasicAuth(tt.basic[0], tt.basic[1])
			}
			resp, err := s.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
		})
	}
}

func TestGitHubTokenQuirks(t *testing.T) {
	s := newServer(t)
	tests := []struct {
		name   string
		accept string
		form   bool
	}{
		{name: "form by default", form: true},
		{name: "json when asked", accept: "application/json"},
		{name: "json among others", accept: "text/html, application/json;q=0.9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr map[string]string
			if tt.accept != "" {
				hdr = map[string]string{"Accept": tt.accept}
			}
			red := authorize(t, s, GitHub, authQuery(GitHub, "", true))
			status, tok := tokenCall(t, s, GitHub, url.Values{"grant_type": {"authorization_code"}, "code": {red.Get("code")},
				"redirect_uri": {testRedirect}, "code_verifier": {testVerifier}}, hdr)
			if status != http.StatusOK || tok["_form"] != (map[bool]any{true: true, false: nil})[tt.form] {
				t.Fatalf("answer %d %v", status, tok)
			}
			if tt.form && tok["expires_in"] != "28800" {
				t.Errorf("form expires_in %v", tok["expires_in"])
			}
			// Errors are HTTP 200 with an error field, in the same encoding.
			status, bad := tokenCall(t, s, GitHub, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"ghr_nope"}}, hdr)
			if status != http.StatusOK || bad["error"] != "bad_refresh_token" || bad["access_token"] != nil {
				t.Fatalf("error answer %d %v", status, bad)
			}
			status, bad = tokenCall(t, s, GitHub, url.Values{"grant_type": {"authorization_code"}, "code": {"nope"},
				"client_id": {OAuthClientID(GitHub)}, "client_secret": {"wrong"}}, hdr)
			if status != http.StatusOK || bad["error"] != "incorrect_client_credentials" {
				t.Fatalf("bad client %d %v", status, bad)
			}
		})
	}
}

func TestTokenFaults(t *testing.T) {
	s := newServer(t)
	issue := func() string {
		red := authorize(t, s, HubSpot, authQuery(HubSpot, "oauth", false))
		_, tok := tokenCall(t, s, HubSpot, url.Values{"grant_type": {"authorization_code"}, "code": {red.Get("code")}, "redirect_uri": {testRedirect}}, nil)
		return tok["refresh_token"].(string)
	}
	rt := issue()
	refresh := func() (int, map[string]any) {
		return tokenCall(t, s, HubSpot, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}, nil)
	}
	s.SetTokenFault(HubSpot, FaultInvalidGrant, 1)
	if status, ans := refresh(); status != 400 || ans["status"] != "BAD_REFRESH_TOKEN" {
		t.Fatalf("invalid grant fault: %d %v", status, ans)
	}
	s.SetTokenFault(HubSpot, FaultServerError, 2)
	for range 2 {
		_, tokenURL := OAuthEndpoints(HubSpot)
		status, hdr, _ := do(t, s, http.MethodPost, tokenURL, map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
			url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}.Encode())
		if status != http.StatusServiceUnavailable || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
			t.Fatalf("5xx fault: %d", status)
		}
	}
	// Faults consumed nothing: the refresh token still works, once.
	if status, ans := refresh(); status != 200 || ans["access_token"] == nil {
		t.Fatalf("after faults: %d %v", status, ans)
	}
	if _, refs := s.TokenRequests(HubSpot); refs != 4 {
		t.Errorf("refreshes = %d, want 4", refs)
	}

	s.SetTokenFault(HubSpot, FaultHang, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, tokenURL := OAuthEndpoints(HubSpot)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader("grant_type=refresh_token&refresh_token=x"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	start := time.Now()
	_, err := s.Client().Do(req)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 15*time.Second {
		t.Fatalf("hang fault: %v after %v", err, time.Since(start))
	}
	s.SetTokenFault(HubSpot, FaultNone, 0)
	if status, _ := refresh(); status != 400 {
		t.Fatalf("the used refresh token was accepted again: %d", status)
	}
}

func TestHangReleasedOnClose(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	s.SetTokenFault(Linear, FaultHang, 0)
	done := make(chan error, 1)
	go func() {
		_, tokenURL := OAuthEndpoints(Linear)
		resp, err := s.Client().Post(tokenURL, "application/x-www-form-urlencoded", strings.NewReader("grant_type=refresh_token"))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	// Close once the request is held in the hanging handler (it counts the
	// refresh before it hangs), not after a guessed delay.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, refreshes := s.TokenRequests(Linear); refreshes == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the token request never reached the fake")
		}
		runtime.Gosched()
	}
	s.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a hanging token request outlived Close")
	}
}
