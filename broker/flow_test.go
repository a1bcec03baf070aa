package broker

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/internal/brokerapi"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/registry"
)

func TestFullFlow(t *testing.T) {
	tests := []struct {
		name      string
		service   string
		cap       string
		scope     string        // the scope parameter the provider must see
		pkce      bool          // a code challenge is sent
		refresh   bool          // the pair has a refresh token
		expiresIn time.Duration // 0: expires_at must be empty (unknown)
		extra     url.Values    // authorize_params that must be present
	}{
		{name: "github read", service: fakeapi.GitHub, cap: "read", pkce: true, refresh: true, expiresIn: 8 * time.Hour},
		{name: "github write", service: fakeapi.GitHub, cap: "write", pkce: true, refresh: true, expiresIn: 8 * time.Hour},
		{name: "hubspot read", service: fakeapi.HubSpot, cap: "read", scope: "oauth crm.objects.contacts.read crm.objects.companies.read",
			refresh: true, expiresIn: 30 * time.Minute},
		{name: "hubspot write", service: fakeapi.HubSpot, cap: "write",
			scope: "oauth crm.objects.contacts.read crm.objects.companies.read crm.objects.contacts.write", refresh: true, expiresIn: 30 * time.Minute},
		{name: "linear read", service: fakeapi.Linear, cap: "read", scope: "read", pkce: true, refresh: true,
			expiresIn: 24*time.Hour - time.Second, extra: url.Values{"prompt": {"consent"}}},
		{name: "linear write", service: fakeapi.Linear, cap: "write", scope: "read,issues:create", pkce: true, refresh: true,
			expiresIn: 24*time.Hour - time.Second, extra: url.Values{"prompt": {"consent"}}},
		{name: "dnsimple has no refresh and no expiry", service: fakeapi.DNSimple, cap: "write"},
		{name: "stripe read asks read_write", service: fakeapi.Stripe, cap: "read", scope: "read_write", refresh: true},
		{name: "stripe write", service: fakeapi.Stripe, cap: "write", scope: "read_write", refresh: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			before := time.Now()
			f := e.connect(t, e.browser, tt.service, tt.cap, testReturn+"?tab=services")

			// Hop 1: the authorize URL, built from the manifest.
			m, _ := registry.Default().Service(tt.service)
			if got := f.authorize.Scheme + "://" + f.authorize.Host + f.authorize.Path; got != m.Auth.OAuth.AuthorizeURL {
				t.Errorf("authorize URL %s, want %s", got, m.Auth.OAuth.AuthorizeURL)
			}
			aq := f.authorize.Query()
			if aq.Get("scope") != tt.scope || aq.Get("response_type") != "code" || aq.Get("client_id") != fakeapi.OAuthClientID(tt.service) ||
				aq.Get("redirect_uri") != e.url+"/oauth/"+tt.service+"/callback" || aq.Get("state") == "" {
				t.Errorf("authorize query %v", aq)
			}
			if (aq.Get("code_challenge") != "") != tt.pkce || (tt.pkce && aq.Get("code_challenge_method") != "S256") {
				t.Errorf("pkce: challenge %q method %q, want pkce=%v", aq.Get("code_challenge"), aq.Get("code_challenge_method"), tt.pkce)
			}
			for k := range tt.extra {
				if aq.Get(k) != tt.extra.Get(k) {
					t.Errorf("authorize param %s = %q, want %q", k, aq.Get(k), tt.extra.Get(k))
				}
			}
			ars := e.fake.AuthorizeRequests(tt.service)
			if len(ars) != 1 || ars[0].Scope != tt.scope {
				t.Fatalf("the fake recorded %+v", ars)
			}

			// Hop 3: back to the return URL, the pair in the fragment only.
			if got := f.final.Scheme + "://" + f.final.Host + f.final.Path; got != testReturn || f.final.RawQuery != "tab=services" {
				t.Fatalf("final URL %s", f.final)
			}
			fr := frag(t, f.final)
			if fr.Get("error") != "" {
				t.Fatalf("flow failed: %v", fr)
			}
			if fr.Get("service") != tt.service || fr.Get("kind") != "oauth" || fr.Get("cap") != tt.cap || fr.Get("scope") != tt.scope {
				t.Errorf("fragment %v", fr)
			}
			at, rt := fr.Get("access_token"), fr.Get("refresh_token")
			if at == "" || (rt != "") != tt.refresh {
				t.Fatalf("pair: access %d bytes, refresh %d bytes", len(at), len(rt))
			}
			if strings.Contains(f.final.RawQuery, at) {
				t.Fatal("the access token leaked into the query")
			}
			if tt.expiresIn == 0 {
				if fr.Get("expires_at") != "" || !fr.Has("expires_at") {
					t.Errorf("expires_at = %q, want present and empty (unknown)", fr.Get("expires_at"))
				}
			} else {
				exp, err := time.Parse(time.RFC3339, fr.Get("expires_at"))
				if err != nil {
					t.Fatalf("expires_at %q: %v", fr.Get("expires_at"), err)
				}
				if lo, hi := before.Add(tt.expiresIn-2*time.Second), time.Now().Add(tt.expiresIn+time.Second); exp.Before(lo) || exp.After(hi) {
					t.Errorf("expires_at %v not within [%v, %v]", exp, lo, hi)
				}
			}
			// The pair is real: the fake's API takes the access token.
			if st := e.viewer(t, tt.service, at); st != http.StatusOK {
				t.Errorf("the issued access token gets %d", st)
			}
			if codes, refs := e.fake.TokenRequests(tt.service); codes != 1 || refs != 0 {
				t.Errorf("token requests: %d codes, %d refreshes", codes, refs)
			}
		})
	}
}

func TestStartRefusals(t *testing.T) {
	e := newEnv(t, func(c *Config) { delete(c.Clients, fakeapi.Linear) })
	tests := []struct {
		name   string
		path   string // after the broker URL
		status int
		code   brokerapi.Code
	}{
		{name: "unknown service", path: "/oauth/nosuchservice/start?return=" + url.QueryEscape(testReturn), status: 404, code: brokerapi.CodeUnknownService},
		{name: "no client configured", path: "/oauth/linear/start?return=" + url.QueryEscape(testReturn), status: 404, code: brokerapi.CodeOAuthNotConfigured},
		{name: "bad cap", path: "/oauth/github/start?cap=admin&return=" + url.QueryEscape(testReturn), status: 400, code: brokerapi.CodeBadCap},
		{name: "no return", path: "/oauth/github/start?cap=read", status: 400, code: brokerapi.CodeReturnNotAllowed},
		{name: "return off the allowlist", path: "/oauth/github/start?return=" + url.QueryEscape("https://evil.example/steal"), status: 400, code: brokerapi.CodeReturnNotAllowed},
		{name: "allowlisted host on another port", path: "/oauth/github/start?return=" + url.QueryEscape("https://app.example.test:8443/x"), status: 400, code: brokerapi.CodeReturnNotAllowed},
		{name: "allowlisted host on another scheme", path: "/oauth/github/start?return=" + url.QueryEscape("http://app.example.test/x"), status: 400, code: brokerapi.CodeReturnNotAllowed},
		{name: "subdomain of an allowlisted host", path: "/oauth/github/start?return=" + url.QueryEscape("https://evil.app.example.test/x"), status: 400, code: brokerapi.CodeReturnNotAllowed},
		{name: "suffix trick", path: "/oauth/github/start?return=" + url.QueryEscape("https://app.example.test.evil.example/x"), status: 400, code: brokerapi.CodeReturnNotAllowed},
		{name: "userinfo trick", path: "/oauth/github/start?return=" + url.QueryEscape("https://app.example.test@evil.example/x"), status: 400, code: brokerapi.CodeReturnNotAllowed},
		{name: "backslash trick", path: "/oauth/github/start?return=" + url.QueryEscape(`https://evil.example\@app.example.test/x`), status: 400, code: brokerapi.CodeReturnNotAllowed},
		{name: "relative", path: "/oauth/github/start?return=" + url.QueryEscape("//evil.example/x"), status: 400, code: brokerapi.CodeReturnNotAllowed},
		{name: "javascript", path: "/oauth/github/start?return=" + url.QueryEscape("javascript:alert(1)"), status: 400, code: brokerapi.CodeReturnNotAllowed},
		{name: "with a fragment", path: "/oauth/github/start?return=" + url.QueryEscape(testReturn+"#x"), status: 400, code: brokerapi.CodeReturnNotAllowed},
		{name: "too long", path: "/oauth/github/start?return=" + url.QueryEscape(testReturn+"?"+strings.Repeat("a", 3000)), status: 400, code: brokerapi.CodeReturnNotAllowed},
		{name: "repeated return", path: "/oauth/github/start?return=" + url.QueryEscape(testReturn) + "&return=" + url.QueryEscape("https://evil.example/"), status: 400, code: brokerapi.CodeBadRequest},
		{name: "POST", path: "/oauth/github/start", status: 405, code: brokerapi.CodeMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resp *http.Response
			var err error
			if tt.name == "POST" {
				resp, err = e.browser.Post(e.url+tt.path, "text/plain", nil)
			} else {
				resp, err = e.browser.Get(e.url + tt.path)
			}
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, resp)
			if resp.StatusCode != tt.status || apiError(t, body) != tt.code || resp.Header.Get("Location") != "" {
				t.Fatalf("%d %s (Location %q), want %d %s", resp.StatusCode, body, resp.Header.Get("Location"), tt.status, tt.code)
			}
		})
	}
	// Default ports are implied and hosts compare case-insensitively.
	for _, ret := range []string{"https://APP.example.test:443/ok", "http://localhost:3000/cb"} {
		if status, _, body := get(t, e.browser, startURL(e, fakeapi.GitHub, url.Values{"return": {ret}})); status != http.StatusFound {
			t.Errorf("return %s refused: %d %s", ret, status, body)
		}
	}
	// cap defaults to read.
	_, loc, _ := get(t, e.browser, startURL(e, fakeapi.HubSpot, url.Values{"return": {testReturn}}))
	if got := mustParse(t, loc).Query().Get("scope"); got != "oauth crm.objects.contacts.read crm.objects.companies.read" {
		t.Errorf("default cap asked %q", got)
	}
}

func TestCallbackRefusals(t *testing.T) {
	// begin runs start and authorize, returning the callback URL.
	begin := func(t *testing.T, e *env, browser *http.Client, service string) *url.URL {
		t.Helper()
		_, loc, _ := get(t, browser, startURL(e, service, url.Values{"cap": {"read"}, "return": {testReturn}}))
		_, loc, _ = get(t, browser, loc)
		return mustParse(t, loc)
	}
	withQuery := func(u *url.URL, set map[string]string) string {
		q := u.Query()
		for k, v := range set {
			if v == "" {
				q.Del(k)
			} else {
				q.Set(k, v)
			}
		}
		c := *u
		c.RawQuery = q.Encode()
		return c.String()
	}
	tests := []struct {
		name string
		run  func(t *testing.T, e *env) (status int, loc string, body []byte)
		// either a JSON error (status, code) or a redirect with #error=code
		status int
		code   brokerapi.Code
	}{
		{name: "tampered state", status: 400, code: brokerapi.CodeStateInvalid, run: func(t *testing.T, e *env) (int, string, []byte) {
			cb := begin(t, e, e.browser, fakeapi.GitHub)
			st := []byte(cb.Query().Get("state"))
			st[len(st)/2] ^= 1 // one bit anywhere breaks the seal
			if st[len(st)/2] == '-' || st[len(st)/2] == '_' {
				st[len(st)/2] = 'A'
			}
			return get(t, e.browser, withQuery(cb, map[string]string{"state": string(st)}))
		}},
		{name: "truncated state", status: 400, code: brokerapi.CodeStateInvalid, run: func(t *testing.T, e *env) (int, string, []byte) {
			cb := begin(t, e, e.browser, fakeapi.GitHub)
			st := cb.Query().Get("state")
			return get(t, e.browser, withQuery(cb, map[string]string{"state": st[:len(st)-4]}))
		}},
		{name: "state sealed with another key", status: 400, code: brokerapi.CodeStateInvalid, run: func(t *testing.T, e *env) (int, string, []byte) {
			cb := begin(t, e, e.browser, fakeapi.GitHub)
			aead, _ := newAEAD(make([]byte, StateKeySize))
			forged, _ := seal(aead, &flowState{V: 1, Service: "github", Cap: "write", Return: testReturn, Expires: time.Now().Add(time.Hour).Unix(), Nonce: "AAAAAAAAAAAAAAAAAAAAAA"})
			return get(t, e.browser, withQuery(cb, map[string]string{"state": forged}))
		}},
		{name: "no state", status: 400, code: brokerapi.CodeStateMissing, run: func(t *testing.T, e *env) (int, string, []byte) {
			cb := begin(t, e, e.browser, fakeapi.GitHub)
			return get(t, e.browser, withQuery(cb, map[string]string{"state": ""}))
		}},
		{name: "expired state", status: 400, code: brokerapi.CodeStateExpired, run: func(t *testing.T, e *env) (int, string, []byte) {
			cb := begin(t, e, e.browser, fakeapi.GitHub)
			e.clock.Advance(DefaultStateTTL + time.Second)
			return get(t, e.browser, cb.String())
		}},
		{name: "another service's state", status: 400, code: brokerapi.CodeStateServiceMismatch, run: func(t *testing.T, e *env) (int, string, []byte) {
			cb := begin(t, e, e.browser, fakeapi.GitHub)
			u := *cb
			u.Path = strings.Replace(u.Path, "/github/", "/hubspot/", 1)
			return get(t, e.browser, u.String())
		}},
		{name: "return origin dropped from the allowlist since the start", status: 400, code: brokerapi.CodeReturnNotAllowed, run: func(t *testing.T, e *env) (int, string, []byte) {
			cb := begin(t, e, e.browser, fakeapi.GitHub)
			// The same state key, restarted with a narrower allowlist.
			e2 := newEnv(t, func(c *Config) { c.AllowedReturnOrigins = []string{"http://localhost:3000"} })
			u := *cb
			u.Host = strings.TrimPrefix(e2.url, "http://")
			return get(t, e2.browser, u.String())
		}},
		{name: "another browser", code: brokerapi.CodeStateBrowserMismatch, run: func(t *testing.T, e *env) (int, string, []byte) {
			cb := begin(t, e, e.browser, fakeapi.GitHub) // the attacker's flow ...
			return get(t, e.newBrowser(), cb.String())   // ... lands in the victim's browser
		}},
		{name: "replayed callback", code: brokerapi.CodeStateBrowserMismatch, run: func(t *testing.T, e *env) (int, string, []byte) {
			cb := begin(t, e, e.browser, fakeapi.GitHub)
			if status, _, _ := get(t, e.browser, cb.String()); status != http.StatusFound {
				t.Fatal("first callback failed")
			}
			return get(t, e.browser, cb.String()) // the binding cookie is gone
		}},
		{name: "member cancels", code: "access_denied", run: func(t *testing.T, e *env) (int, string, []byte) {
			e.fake.SetAuthorizeError(fakeapi.HubSpot, "access_denied")
			return get(t, e.browser, begin(t, e, e.browser, fakeapi.HubSpot).String())
		}},
		{name: "non-standard provider error", code: brokerapi.CodeProviderError, run: func(t *testing.T, e *env) (int, string, []byte) {
			e.fake.SetAuthorizeError(fakeapi.HubSpot, "<script>")
			return get(t, e.browser, begin(t, e, e.browser, fakeapi.HubSpot).String())
		}},
		{name: "no code", code: brokerapi.CodeCodeMissing, run: func(t *testing.T, e *env) (int, string, []byte) {
			cb := begin(t, e, e.browser, fakeapi.GitHub)
			return get(t, e.browser, withQuery(cb, map[string]string{"code": ""}))
		}},
		{name: "code refused", code: brokerapi.CodeInvalidGrant, run: func(t *testing.T, e *env) (int, string, []byte) {
			cb := begin(t, e, e.browser, fakeapi.GitHub)
			return get(t, e.browser, withQuery(cb, map[string]string{"code": "0123456789abcdef0123"}))
		}},
		{name: "pkce verifier checked by the provider", code: brokerapi.CodeInvalidGrant, run: func(t *testing.T, e *env) (int, string, []byte) {
			// A code obtained with one flow's challenge, redeemed with
			// another flow's state (and so its verifier), is refused.
			cb1 := begin(t, e, e.browser, fakeapi.Linear)
			cb2 := begin(t, e, e.browser, fakeapi.Linear)
			return get(t, e.browser, withQuery(cb2, map[string]string{"code": cb1.Query().Get("code")}))
		}},
		{name: "provider 5xx", code: brokerapi.CodeProviderUnavailable, run: func(t *testing.T, e *env) (int, string, []byte) {
			cb := begin(t, e, e.browser, fakeapi.HubSpot)
			e.fake.SetTokenFault(fakeapi.HubSpot, fakeapi.FaultServerError, 0)
			return get(t, e.browser, cb.String())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			status, loc, body := tt.run(t, e)
			if tt.status != 0 {
				if status != tt.status || apiError(t, body) != tt.code || loc != "" {
					t.Fatalf("%d %s (Location %q), want %d %s", status, body, loc, tt.status, tt.code)
				}
				return
			}
			if status != http.StatusFound {
				t.Fatalf("status %d %s, want a redirect", status, body)
			}
			u := mustParse(t, loc)
			fr := frag(t, u)
			if !strings.HasPrefix(loc, testReturn+"#") || fr.Get("error") != string(tt.code) || fr.Get("access_token") != "" {
				t.Fatalf("redirect %s, want %s#...error=%s", loc, testReturn, tt.code)
			}
		})
	}
}

func TestStateSealing(t *testing.T) {
	aead, _ := newAEAD(bytes32(1))
	now := time.Unix(1_800_000_000, 0)
	st := &flowState{V: 1, Service: "github", Cap: "write", Return: testReturn, Verifier: "v", Expires: now.Add(time.Minute).Unix(), Nonce: "0123456789abcdefghijkl"}
	sealed, err := seal(aead, st)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := seal(aead, st)
	if again == sealed {
		t.Error("two seals of one state are equal (no random nonce)")
	}
	if strings.Contains(sealed, "github") || strings.Contains(sealed, "app.example") {
		t.Error("the state is readable")
	}
	got, e := open(aead, sealed, "github", now)
	if e != nil || *got != *st {
		t.Fatalf("open: %v %+v", e, got)
	}
	other, _ := newAEAD(bytes32(2))
	tests := []struct {
		name string
		svc  string
		now  time.Time
		code brokerapi.Code
	}{
		{name: "every flipped byte", code: brokerapi.CodeStateInvalid},
		{name: "other key", code: brokerapi.CodeStateInvalid},
		{name: "expired", now: now.Add(time.Minute), code: brokerapi.CodeStateExpired},
		{name: "other service", svc: "linear", code: brokerapi.CodeStateServiceMismatch},
		{name: "garbage", code: brokerapi.CodeStateInvalid},
		{name: "huge", code: brokerapi.CodeStateInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, at := "github", now
			if tt.svc != "" {
				svc = tt.svc
			}
			if !tt.now.IsZero() {
				at = tt.now
			}
			var inputs []string
			switch tt.name {
			case "every flipped byte":
				raw := []byte(sealed)
				for i := range raw {
					b := append([]byte(nil), raw...)
					b[i] = map[bool]byte{true: 'B', false: 'A'}[b[i] == 'A']
					inputs = append(inputs, string(b))
				}
			case "other key":
				s, _ := seal(other, st)
				inputs = []string{s}
			case "garbage":
				inputs = []string{"!!", "AAAA", "a"}
			case "huge":
				inputs = []string{strings.Repeat("A", maxStateLen+1)}
			default:
				inputs = []string{sealed}
			}
			for _, in := range inputs {
				if _, e := open(aead, in, svc, at); e == nil || e.Code != tt.code {
					t.Fatalf("open(%.20q…) = %v, want %s", in, e, tt.code)
				}
			}
		})
	}
}

func bytes32(b byte) []byte {
	k := make([]byte, StateKeySize)
	for i := range k {
		k[i] = b
	}
	return k
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
