package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"github.com/elevenmessenger/pinned/internal/brokerapi"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/rotate"
	"github.com/elevenmessenger/pinned/secret"
)

// pairFor connects a service through the full flow and returns the
// fragment.
func (e *env) pairFor(t *testing.T, service string) url.Values {
	t.Helper()
	f := e.connect(t, e.browser, service, "write", testReturn)
	fr := frag(t, f.final)
	if fr.Get("access_token") == "" {
		t.Fatalf("connect %s: %v", service, fr)
	}
	return fr
}

func decodeRefresh(t *testing.T, body []byte) RefreshResponse {
	t.Helper()
	var r RefreshResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("not a refresh answer: %s", body)
	}
	return r
}

func TestRefresh(t *testing.T) {
	tests := []struct {
		name    string
		service string
		edit    func(*Config)
		prepare func(e *env) // before the refresh
		token   string       // instance token; "" = none
		ctype   string
		body    func(rt string) string
		status  int
		code    brokerapi.Code // "" = success
		quiet   bool           // the provider must see no refresh
	}{
		{name: "github success", service: fakeapi.GitHub, status: 200},
		{name: "hubspot success", service: fakeapi.HubSpot, status: 200},
		{name: "linear success", service: fakeapi.Linear, status: 200},
		{name: "stripe success without expiry", service: fakeapi.Stripe, status: 200},
		{name: "the second instance token works", service: fakeapi.GitHub, token: testInstance2, status: 200},
		{name: "missing instance token", service: fakeapi.GitHub, token: "-", status: 401, code: brokerapi.CodeUnauthorized},
		{name: "wrong instance token", service: fakeapi.GitHub, token: testInstance + "x", status: 401, code: brokerapi.CodeUnauthorized},
		{name: "no instance tokens configured", service: fakeapi.GitHub, edit: func(c *Config) { c.InstanceTokens = nil }, status: 503, code: brokerapi.CodeRefreshDisabled},
		{name: "provider 5xx is retryable", service: fakeapi.GitHub, prepare: func(e *env) { e.fake.SetTokenFault(fakeapi.GitHub, fakeapi.FaultServerError, 0) },
			status: 502, code: brokerapi.CodeProviderUnavailable},
		{name: "provider timeout is retryable", service: fakeapi.HubSpot, edit: func(c *Config) { c.ProviderTimeout = 300 * time.Millisecond },
			prepare: func(e *env) { e.fake.SetTokenFault(fakeapi.HubSpot, fakeapi.FaultHang, 0) }, status: 504, code: brokerapi.CodeProviderTimeout},
		{name: "provider invalid_grant", service: fakeapi.Linear, prepare: func(e *env) { e.fake.SetTokenFault(fakeapi.Linear, fakeapi.FaultInvalidGrant, 0) },
			status: 400, code: brokerapi.CodeInvalidGrant},
		{name: "github 200-with-error is invalid_grant", service: fakeapi.GitHub, prepare: func(e *env) { e.fake.SetTokenFault(fakeapi.GitHub, fakeapi.FaultInvalidGrant, 0) },
			status: 400, code: brokerapi.CodeInvalidGrant},
		{name: "hubspot BAD_REFRESH_TOKEN is invalid_grant", service: fakeapi.HubSpot, prepare: func(e *env) { e.fake.SetTokenFault(fakeapi.HubSpot, fakeapi.FaultInvalidGrant, 0) },
			status: 400, code: brokerapi.CodeInvalidGrant},
		{name: "dnsimple has no refresh", service: fakeapi.DNSimple, body: func(string) string { return refreshBody("dnsimple", "x") }, status: 400, code: brokerapi.CodeRefreshUnsupported},
		{name: "unknown service", service: fakeapi.GitHub, body: func(rt string) string { return refreshBody("gitlab", rt) }, status: 404, code: brokerapi.CodeUnknownService},
		{name: "unconfigured service", service: fakeapi.GitHub, edit: func(c *Config) { delete(c.Clients, fakeapi.HubSpot) },
			body: func(rt string) string { return refreshBody("hubspot", rt) }, status: 404, code: brokerapi.CodeOAuthNotConfigured},
		{name: "not JSON", service: fakeapi.GitHub, ctype: "application/x-www-form-urlencoded", status: 415, code: brokerapi.CodeUnsupportedMediaType},
		{name: "unknown field", service: fakeapi.GitHub, body: func(rt string) string { return `{"service":"github","refresh_token":"x","scope":"all"}` }, status: 400, code: brokerapi.CodeBadRequest},
		{name: "two objects", service: fakeapi.GitHub, body: func(rt string) string { return refreshBody("github", rt) + "{}" }, status: 400, code: brokerapi.CodeBadRequest},
		{name: "missing refresh token", service: fakeapi.GitHub, body: func(string) string { return `{"service":"github"}` }, status: 400, code: brokerapi.CodeBadRequest},
		// A key twice is ambiguous (which token would be refreshed?): the
		// sidecar and pinned web refuse it, so the broker does too.
		{name: "refresh_token twice", service: fakeapi.GitHub, body: func(rt string) string {
			return `{"service":"github","refresh_token":"` + rt + `","refresh_token":"` + rt + `x"}`
		}, status: 400, code: brokerapi.CodeBadRequest, quiet: true},
		{name: "service twice, escaped", service: fakeapi.GitHub, body: func(rt string) string {
			return `{"service":"hubspot","refresh_token":"` + rt + `","s\u0065rvice":"github"}`
		}, status: 400, code: brokerapi.CodeBadRequest, quiet: true},
		{name: "invalid UTF-8", service: fakeapi.GitHub, body: func(rt string) string {
			return `{"service":"github","refresh_token":"` + rt + "\xff" + `"}`
		}, status: 400, code: brokerapi.CodeBadRequest, quiet: true},
		{name: "huge body", service: fakeapi.GitHub, body: func(string) string { return refreshBody("github", strings.Repeat("x", 20000)) }, status: 413, code: brokerapi.CodeTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.edit)
			fr := e.pairFor(t, tt.service)
			rt := fr.Get("refresh_token")
			if tt.prepare != nil {
				tt.prepare(e)
			}
			token := tt.token
			switch token {
			case "":
				token = testInstance
			case "-":
				token = ""
			}
			ctype := tt.ctype
			if ctype == "" {
				ctype = "application/json; charset=utf-8"
			}
			body := refreshBody(tt.service, rt)
			if tt.body != nil {
				body = tt.body(rt)
			}
			start := time.Now()
			status, hdr, ans := e.postRefresh(t, token, ctype, body)
			if status != tt.status {
				t.Fatalf("status %d %s, want %d", status, ans, tt.status)
			}
			if hdr.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q", hdr.Get("Cache-Control"))
			}
			if tt.code != "" {
				if got := apiError(t, ans); got != tt.code {
					t.Fatalf("code %s, want %s", got, tt.code)
				}
				if strings.Contains(string(ans), rt) && rt != "" {
					t.Fatal("the refresh token is echoed in the error")
				}
				if _, refs := e.fake.TokenRequests(tt.service); tt.quiet && refs != 0 {
					t.Errorf("the provider saw %d refreshes, want none", refs)
				}
				if tt.code == brokerapi.CodeProviderUnavailable && time.Since(start) > 15*time.Second { // the fault hangs until canceled
					t.Errorf("the timeout took %v", time.Since(start))
				}
				return
			}
			r := decodeRefresh(t, ans)
			if r.AccessToken == "" || r.AccessToken == fr.Get("access_token") || r.RefreshToken == "" || r.RefreshToken == rt || r.TokenType != "Bearer" {
				t.Fatalf("answer %+v", r)
			}
			if (r.ExpiresAt == "") != (fr.Get("expires_at") == "") {
				t.Errorf("expires_at %q after a flow with %q", r.ExpiresAt, fr.Get("expires_at"))
			}
			if st := e.viewer(t, tt.service, r.AccessToken); st != http.StatusOK {
				t.Errorf("the refreshed token gets %d", st)
			}
			// Refresh tokens are single-use: presenting the old one again is
			// invalid_grant, whatever the provider's spelling.
			status, _, ans = e.postRefresh(t, token, ctype, body)
			if status != 400 || apiError(t, ans) != brokerapi.CodeInvalidGrant {
				t.Fatalf("reuse: %d %s", status, ans)
			}
			if _, refs := e.fake.TokenRequests(tt.service); refs != 2 {
				t.Errorf("the fake saw %d refreshes, want 2", refs)
			}
		})
	}
}

func TestRefreshRateLimit(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.RefreshRate = 0.001; c.RefreshBurst = 2 })
	body := refreshBody("dnsimple", "x") // answers 400 without calling a provider
	tests := []struct {
		name   string
		token  string
		status int
		code   brokerapi.Code
	}{
		{name: "first", token: testInstance, status: 400, code: brokerapi.CodeRefreshUnsupported},
		{name: "second", token: testInstance, status: 400, code: brokerapi.CodeRefreshUnsupported},
		{name: "third is limited", token: testInstance, status: 429, code: brokerapi.CodeRateLimited},
		{name: "another instance has its own bucket", token: testInstance2, status: 400, code: brokerapi.CodeRefreshUnsupported},
		{name: "unauthenticated 1", token: "nope", status: 401, code: brokerapi.CodeUnauthorized},
		{name: "unauthenticated 2", token: "nope2", status: 401, code: brokerapi.CodeUnauthorized},
		{name: "unauthenticated attempts are limited per address", token: "nope3", status: 429, code: brokerapi.CodeRateLimited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, hdr, ans := e.postRefresh(t, tt.token, "application/json", body)
			if status != tt.status || apiError(t, ans) != tt.code {
				t.Fatalf("%d %s, want %d %s", status, ans, tt.status, tt.code)
			}
			if status == 429 {
				if ra, err := strconv.Atoi(hdr.Get("Retry-After")); err != nil || ra < 1 {
					t.Errorf("Retry-After %q", hdr.Get("Retry-After"))
				}
			}
		})
	}
	// The bucket refills with time.
	e.clock.Advance(time.Hour)
	if status, _, ans := e.postRefresh(t, testInstance, "application/json", body); status != 400 {
		t.Fatalf("after refill: %d %s", status, ans)
	}
}

// TestTokenAnswerShapes drives the exchange and the refresh through the
// token-endpoint answers providers really send, by taking the fake's
// token endpoint over.
func TestTokenAnswerShapes(t *testing.T) {
	type answer struct {
		status int
		ctype  string
		body   string
	}
	tests := []struct {
		name string
		ans  answer
		// refresh outcome
		status  int
		code    brokerapi.Code
		expires bool // expires_at non-empty on success
	}{
		{name: "json", ans: answer{200, "application/json", `{"access_token":"a1","refresh_token":"r1","expires_in":3600,"token_type":"bearer"}`}, status: 200, expires: true},
		{name: "form-encoded", ans: answer{200, "application/x-www-form-urlencoded", `access_token=a1&refresh_token=r1&expires_in=3600&token_type=bearer`}, status: 200, expires: true},
		{name: "text/plain form", ans: answer{200, "text/plain", `access_token=a1&refresh_token=r1&token_type=bearer`}, status: 200},
		{name: "json without expires_in is unknown", ans: answer{200, "application/json", `{"access_token":"a1","refresh_token":"r1"}`}, status: 200},
		{name: "json 200 with error", ans: answer{200, "application/json", `{"error":"invalid_grant","error_description":"used"}`}, status: 400, code: brokerapi.CodeInvalidGrant},
		{name: "form 200 with error", ans: answer{200, "application/x-www-form-urlencoded", `error=bad_refresh_token&error_description=x`}, status: 400, code: brokerapi.CodeInvalidGrant},
		{name: "form 200 with error and a token", ans: answer{200, "application/x-www-form-urlencoded", `error=invalid_grant&access_token=a1`}, status: 400, code: brokerapi.CodeInvalidGrant},
		{name: "json 200 with another error", ans: answer{200, "application/json", `{"error":"unauthorized_client"}`}, status: 502, code: brokerapi.CodeProviderRejected},
		{name: "400 invalid_grant", ans: answer{400, "application/json", `{"error":"invalid_grant"}`}, status: 400, code: brokerapi.CodeInvalidGrant},
		{name: "401 invalid_client", ans: answer{401, "application/json", `{"error":"invalid_client"}`}, status: 502, code: brokerapi.CodeProviderRejected},
		{name: "hubspot status shape", ans: answer{400, "application/json", `{"status":"BAD_REFRESH_TOKEN","message":"missing or unknown refresh token"}`}, status: 400, code: brokerapi.CodeInvalidGrant},
		{name: "500 even with invalid_grant stays retryable", ans: answer{500, "application/json", `{"error":"invalid_grant"}`}, status: 502, code: brokerapi.CodeProviderUnavailable},
		{name: "503 html", ans: answer{503, "text/html", `<h1>down</h1>`}, status: 502, code: brokerapi.CodeProviderUnavailable},
		{name: "429", ans: answer{429, "application/json", `{"error":"slow_down"}`}, status: 502, code: brokerapi.CodeProviderUnavailable},
		{name: "200 html", ans: answer{200, "text/html", `<html>captive portal</html>`}, status: 502, code: brokerapi.CodeProviderUnavailable},
		{name: "200 without access_token", ans: answer{200, "application/json", `{"token_type":"bearer"}`}, status: 502, code: brokerapi.CodeProviderRejected},
		{name: "redirect is not followed", ans: answer{302, "text/html", ``}, status: 502, code: brokerapi.CodeProviderRejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
				if r.Host != "api.hubapi.com" || r.URL.Path != "/oauth/v1/token" {
					return false
				}
				w.Header().Set("Content-Type", tt.ans.ctype)
				if tt.ans.status == 302 {
					w.Header().Set("Location", "https://api.hubapi.com/elsewhere")
				}
				w.WriteHeader(tt.ans.status)
				_, _ = w.Write([]byte(tt.ans.body))
				return true
			})
			status, _, ans := e.postRefresh(t, testInstance, "application/json", refreshBody("hubspot", "r0"))
			if status != tt.status {
				t.Fatalf("refresh: %d %s, want %d", status, ans, tt.status)
			}
			if tt.code != "" {
				if got := apiError(t, ans); got != tt.code {
					t.Fatalf("code %s, want %s", got, tt.code)
				}
			} else if status == 200 {
				r := decodeRefresh(t, ans)
				if r.AccessToken != "a1" || r.RefreshToken != "r1" || (r.ExpiresAt != "") != tt.expires {
					t.Fatalf("answer %+v", r)
				}
			}
			// The same answer to a code exchange.
			_, loc, _ := get(t, e.browser, startURL(e, "hubspot", url.Values{"return": {testReturn}}))
			q := mustParse(t, loc).Query()
			cb := e.url + "/oauth/hubspot/callback?" + url.Values{"code": {"c0"}, "state": {q.Get("state")}}.Encode()
			st, loc, body := get(t, e.browser, cb)
			if st != http.StatusFound {
				t.Fatalf("callback %d %s", st, body)
			}
			fr := frag(t, mustParse(t, loc))
			if tt.code != "" {
				if fr.Get("error") != string(tt.code) || fr.Has("access_token") {
					t.Fatalf("callback fragment %v, want error %s", fr, tt.code)
				}
			} else if status == 200 && (fr.Get("access_token") != "a1" || !fr.Has("expires_at") || (fr.Get("expires_at") != "") != tt.expires) {
				t.Fatalf("callback fragment %v", fr)
			}
		})
	}
}

// TestGitHubFormEncoded checks the broker reads GitHub's default
// form-encoded answers (x/oauth2 sends no Accept: application/json).
func TestGitHubFormEncoded(t *testing.T) {
	e := newEnv(t, nil)
	fr := e.pairFor(t, fakeapi.GitHub)
	if fr.Get("expires_at") == "" {
		t.Fatal("expires_at lost from a form-encoded answer")
	}
	var saw int
	for _, r := range e.fake.Requests() {
		if r.Host == "github.com" && r.Path == "/login/oauth/access_token" {
			saw++
			if strings.Contains(r.Header.Get("Accept"), "application/json") {
				t.Error("the token request asked for JSON; the form-encoded path is untested")
			}
			form, _ := url.ParseQuery(string(r.Body))
			if form.Get("client_secret") == "" || form.Get("code_verifier") == "" || r.Header.Get("Authorization") != "" {
				t.Errorf("token request: client_secret_post and the verifier expected: %v", r.Header)
			}
		}
	}
	if saw != 1 {
		t.Fatalf("%d token requests, want 1 (no auth-style probing)", saw)
	}
}

// TestRotateThroughBroker is the sidecar's rotation core against the real
// broker and the fake: 50 concurrent callers with one expired single-use
// pair cause exactly one refresh at the provider.
func TestRotateThroughBroker(t *testing.T) {
	e := newEnv(t, nil)
	fr := e.pairFor(t, fakeapi.GitHub)
	exp, _ := time.Parse(time.RFC3339, fr.Get("expires_at"))
	old := api.Pair{Access: secret.Secret(fr.Get("access_token")), Refresh: secret.Secret(fr.Get("refresh_token")), ExpiresAt: exp}

	bc, err := rotate.NewBrokerClient(e.url, testInstance, rotate.BrokerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(8 * time.Hour) // the pair is stale by then
	rot := rotate.New(bc, rotate.Options{Now: func() time.Time { return later }})

	const n = 50
	var wg sync.WaitGroup
	got := make([]api.Pair, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, rotated, err := rot.Before(context.Background(), fakeapi.GitHub, old)
			if err == nil && !rotated {
				err = context.Canceled // marker: not rotated
			}
			got[i], errs[i] = p, err
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || got[i] != got[0] || got[i].Access == old.Access {
			t.Fatalf("caller %d: %v %v", i, errs[i], got[i])
		}
	}
	if _, refs := e.fake.TokenRequests(fakeapi.GitHub); refs != 1 {
		t.Fatalf("the provider saw %d refreshes, want exactly 1", refs)
	}
	if st := e.viewer(t, fakeapi.GitHub, string(got[0].Access)); st != http.StatusOK {
		t.Fatalf("rotated token gets %d", st)
	}
	// The burned refresh token through the broker is a reconnect.
	_, err = bc.Refresh(context.Background(), fakeapi.GitHub, old.Refresh)
	if !errors.Is(err, api.ErrReconnectRequired) {
		t.Fatalf("burned token: %v", err)
	}
	e.fake.SetTokenFault(fakeapi.GitHub, fakeapi.FaultServerError, 0)
	_, err = bc.Refresh(context.Background(), fakeapi.GitHub, got[0].Refresh)
	if !errors.Is(err, api.ErrRetryable) || errors.Is(err, api.ErrReconnectRequired) {
		t.Fatalf("5xx: %v", err)
	}
}

// TestRefreshRequestNeverPrints: the decoded body of POST /api/refresh
// holds the real token and prints "[redacted]" with every verb.
func TestRefreshRequestNeverPrints(t *testing.T) {
	var req refreshRequest
	if err := json.Unmarshal([]byte(`{"service":"github","refresh_token":"rt-hunter2"}`), &req); err != nil || string(req.RefreshToken) != "rt-hunter2" {
		t.Fatalf("decoded %q, %v; want the real token", string(req.RefreshToken), err)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(verb, req); strings.Contains(out, "hunter2") {
			t.Errorf("%s shows the token: %s", verb, out)
		}
	}
}
