package broker

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/internal/brokerapi"
	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/httperr"
	"github.com/elevenmessenger/pinned/registry"
)

func do(t *testing.T, e *env, method, path string, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, e.url+path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func TestRegistryEndpoint(t *testing.T) {
	e := newEnv(t, nil)
	etag := `"` + registry.Default().Digest() + `"`
	tests := []struct {
		name   string
		method string
		hdr    map[string]string
		status int
		body   bool
	}{
		{name: "get", method: "GET", status: 200, body: true},
		{name: "head", method: "HEAD", status: 200},
		{name: "if-none-match", method: "GET", hdr: map[string]string{"If-None-Match": etag}, status: 304},
		{name: "if-none-match weak", method: "GET", hdr: map[string]string{"If-None-Match": "W/" + etag}, status: 304},
		{name: "if-none-match list", method: "GET", hdr: map[string]string{"If-None-Match": `"x", ` + etag}, status: 304},
		{name: "if-none-match star", method: "GET", hdr: map[string]string{"If-None-Match": `*`}, status: 304},
		{name: "stale etag", method: "GET", hdr: map[string]string{"If-None-Match": `"sha256:00"`}, status: 200, body: true},
		{name: "preflight", method: "OPTIONS", status: 204},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, hdr, body := do(t, e, tt.method, "/registry", tt.hdr)
			if status != tt.status {
				t.Fatalf("status %d, want %d", status, tt.status)
			}
			if hdr.Get("Access-Control-Allow-Origin") != "*" {
				t.Errorf("not CORS-open: %v", hdr)
			}
			if tt.method != "OPTIONS" && hdr.Get("ETag") != etag {
				t.Errorf("ETag %q, want %q", hdr.Get("ETag"), etag)
			}
			if (len(body) > 0) != tt.body {
				t.Fatalf("body of %d bytes", len(body))
			}
			if !tt.body {
				return
			}
			var doc struct {
				Digest   string            `json:"digest"`
				Services []json.RawMessage `json:"services"`
			}
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Digest != registry.Default().Digest() || len(doc.Services) != len(registry.Default().Services()) {
				t.Fatalf("digest %s, %d services", doc.Digest, len(doc.Services))
			}
			for i, m := range registry.Default().Services() {
				if _, err := registry.Parse(m.ID+".json", doc.Services[i]); err != nil {
					t.Errorf("served manifest %s does not parse: %v", m.ID, err)
				}
			}
		})
	}
}

func TestOAuthConfigEndpoint(t *testing.T) {
	e := newEnv(t, func(c *Config) { delete(c.Clients, fakeapi.Linear) })
	tests := []struct {
		name    string
		query   string
		status  int
		code    brokerapi.Code
		enabled bool
		read    []string
		write   []string
		refresh bool
	}{
		{name: "github enabled", query: "service=github", status: 200, enabled: true, read: []string{}, write: []string{}, refresh: true},
		{name: "hubspot scopes per cap", query: "service=hubspot", status: 200, enabled: true,
			read:  []string{"oauth", "crm.objects.contacts.read", "crm.objects.companies.read"},
			write: []string{"oauth", "crm.objects.contacts.read", "crm.objects.companies.read", "crm.objects.contacts.write"}, refresh: true},
		{name: "linear without a client", query: "service=linear", status: 200, enabled: false, read: []string{"read"}, write: []string{"read", "issues:create"}, refresh: true},
		{name: "dnsimple", query: "service=dnsimple", status: 200, enabled: true, read: []string{}, write: []string{}},
		{name: "unknown", query: "service=gitlab", status: 404, code: brokerapi.CodeUnknownService},
		{name: "missing", query: "", status: 400, code: brokerapi.CodeBadRequest},
		{name: "repeated", query: "service=github&service=linear", status: 400, code: brokerapi.CodeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, hdr, body := do(t, e, "GET", "/api/oauth/config?"+tt.query, nil)
			if status != tt.status || hdr.Get("Access-Control-Allow-Origin") != "*" {
				t.Fatalf("%d %v %s", status, hdr, body)
			}
			if tt.code != "" {
				if got := apiError(t, body); got != tt.code {
					t.Fatalf("code %s, want %s", got, tt.code)
				}
				return
			}
			var doc oauthConfigDoc
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Enabled != tt.enabled || !slices.Equal(doc.CapScopes.Read, tt.read) || !slices.Equal(doc.CapScopes.Write, tt.write) ||
				doc.Refresh != tt.refresh || doc.Service != strings.TrimPrefix(tt.query, "service=") {
				t.Fatalf("%+v", doc)
			}
			if !strings.Contains(string(body), `"read":[`) {
				t.Errorf("an empty scope list must be [] not null: %s", body)
			}
		})
	}
}

func TestHealthMetricsNotFound(t *testing.T) {
	e := newEnv(t, nil)
	e.pairFor(t, fakeapi.GitHub)
	tests := []struct {
		name     string
		method   string
		path     string
		status   int
		contains string
	}{
		{name: "health", method: "GET", path: "/healthz", status: 200, contains: `"status":"ok"`},
		{name: "metrics", method: "GET", path: "/metrics", status: 200, contains: `pinned_broker_oauth_flows_total{outcome="ok",service="github",step="callback"} 1`},
		{name: "token metric", method: "GET", path: "/metrics", status: 200, contains: `pinned_broker_token_requests_total{grant="authorization_code",outcome="ok",service="github"} 1`},
		{name: "not found", method: "GET", path: "/nope", status: 404, contains: string(brokerapi.CodeNotFound)},
		{name: "wrong method", method: "GET", path: "/api/refresh", status: 405, contains: string(brokerapi.CodeMethodNotAllowed)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, hdr, body := do(t, e, tt.method, tt.path, nil)
			if status != tt.status || !strings.Contains(string(body), tt.contains) {
				t.Fatalf("%d, want %d with %q: %.500s", status, tt.status, tt.contains, body)
			}
			if hdr.Get("X-Content-Type-Options") != "nosniff" || hdr.Get("X-Request-Id") == "" {
				t.Errorf("headers %v", hdr)
			}
			if status == 405 && hdr.Get("Allow") != "POST" {
				t.Errorf("405 with Allow %q, want POST (RFC 9110 section 15.5.6)", hdr.Get("Allow"))
			}
		})
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	good := func() Config {
		return Config{PublicURL: "https://connect.example.com", StateKey: bytes32(1), Clients: clientsFor("github"),
			AllowedReturnOrigins: []string{"https://app.example.com"}, InstanceTokens: []string{testInstance}}
	}
	tests := []struct {
		name string
		edit func(*Config)
		want string // fragment of the error; "" = ok
	}{
		{name: "good", edit: func(*Config) {}},
		{name: "no state key", edit: func(c *Config) { c.StateKey = nil }, want: "--gen-state-key"},
		{name: "short state key", edit: func(c *Config) { c.StateKey = c.StateKey[:16] }, want: "32 bytes"},
		{name: "no public URL", edit: func(c *Config) { c.PublicURL = "" }, want: "public URL"},
		{name: "public URL not http", edit: func(c *Config) { c.PublicURL = "ftp://x" }, want: "public URL"},
		{name: "public URL with query", edit: func(c *Config) { c.PublicURL = "https://x/?a=b" }, want: "public URL"},
		{name: "origin with path", edit: func(c *Config) { c.AllowedReturnOrigins = []string{"https://app.example.com/cb"} }, want: "without path"},
		{name: "origin not http", edit: func(c *Config) { c.AllowedReturnOrigins = []string{"javascript:x"} }, want: "allowed return origin"},
		{name: "short instance token", edit: func(c *Config) { c.InstanceTokens = []string{"short"} }, want: "instance token #1"},
		{name: "client of an unknown service", edit: func(c *Config) { c.Clients["gitlab"] = Client{ID: "a", Secret: "b"} }, want: `"gitlab"`},
		{name: "client without secret", edit: func(c *Config) { c.Clients["github"] = Client{ID: "a"} }, want: "id and a secret"},
		{name: "bad override", edit: func(c *Config) { c.Override = &Override{Addr: "localhost:1"} }, want: "override"},
		{name: "override and proxy", edit: func(c *Config) {
			c.Override = &Override{Addr: "127.0.0.1:1"}
			c.Proxy, _ = url.Parse("http://proxy:3128")
		}, want: "cannot be combined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good()
			tt.edit(&c)
			b, err := New(c)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				b.Close()
				if got := b.RedirectURL("github"); got != "https://connect.example.com/oauth/github/callback" {
					t.Errorf("redirect %s", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
			if strings.Contains(fmt.Sprint(err), fakeapi.OAuthClientSecret("github")) {
				t.Fatal("a secret in the error")
			}
		})
	}
}

func TestClientsFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		want    map[string]Client
		wantErr string
	}{
		{name: "none", want: map[string]Client{}},
		{name: "github", env: []string{"LCHAT_OAUTH_GITHUB_CLIENT_ID=Iv1.x", "LCHAT_OAUTH_GITHUB_CLIENT_SECRET= s3cret "},
			want: map[string]Client{"github": {ID: "Iv1.x", Secret: "s3cret"}}},
		{name: "redirect override", env: []string{"LCHAT_OAUTH_LINEAR_CLIENT_ID=l", "LCHAT_OAUTH_LINEAR_CLIENT_SECRET=s", "LCHAT_OAUTH_LINEAR_REDIRECT_URI=https://b.example/oauth/linear/callback"},
			want: map[string]Client{"linear": {ID: "l", Secret: "s", RedirectURL: "https://b.example/oauth/linear/callback"}}},
		{name: "dnsimple legacy names", env: []string{"LCHAT_DNSIMPLE_CLIENT_ID=d", "LCHAT_DNSIMPLE_CLIENT_SECRET=s"},
			want: map[string]Client{"dnsimple": {ID: "d", Secret: "s"}}},
		{name: "dnsimple new names win", env: []string{"LCHAT_DNSIMPLE_CLIENT_ID=old", "LCHAT_DNSIMPLE_CLIENT_SECRET=old", "LCHAT_OAUTH_DNSIMPLE_CLIENT_ID=new", "LCHAT_OAUTH_DNSIMPLE_CLIENT_SECRET=new"},
			want: map[string]Client{"dnsimple": {ID: "new", Secret: "new"}}},
		{name: "half a pair", env: []string{"LCHAT_OAUTH_STRIPE_CLIENT_ID=ca_x"}, wantErr: "LCHAT_OAUTH_STRIPE_CLIENT_SECRET is empty"},
		{name: "half a legacy pair", env: []string{"LCHAT_DNSIMPLE_CLIENT_SECRET=topsecret"}, wantErr: "LCHAT_DNSIMPLE_CLIENT_ID is empty"},
		{name: "typo in a service", env: []string{"LCHAT_OAUTH_GITHUBB_CLIENT_ID=x"}, wantErr: `"githubb"`},
		{name: "other variables ignored", env: []string{"PATH=/bin", "LCHAT_OTHER=1", "noequals"}, want: map[string]Client{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ClientsFromEnv(nil, tt.env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "topsecret") || strings.Contains(err.Error(), "ca_x") {
					t.Fatal("a value in the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v", got)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s: %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

func TestStateKeyParsing(t *testing.T) {
	k := GenerateStateKey()
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{name: "generated", in: k, ok: true},
		{name: "with newline", in: k + "\n", ok: true},
		{name: "url alphabet unpadded", in: strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(k), "="), ok: true},
		{name: "too short", in: "AAAA"},
		{name: "not base64", in: "!!!!"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStateKey(tt.in)
			if (err == nil) != tt.ok || (tt.ok && len(got) != StateKeySize) {
				t.Fatalf("%v %d", err, len(got))
			}
		})
	}
	if GenerateStateKey() == k {
		t.Fatal("two generated keys are equal")
	}
}

// TestSecretsNeverLogged runs flows, refreshes and failures, then checks
// that no secret reached the log, and that Client redacts its secret.
func TestSecretsNeverLogged(t *testing.T) {
	e := newEnv(t, nil)
	var secrets []string
	for _, svc := range []string{fakeapi.GitHub, fakeapi.HubSpot, fakeapi.Linear} {
		f := e.connect(t, e.browser, svc, "write", testReturn)
		fr := frag(t, f.final)
		secrets = append(secrets, fr.Get("access_token"), fr.Get("refresh_token"), f.callback.Query().Get("code"),
			f.callback.Query().Get("state"), fakeapi.OAuthClientSecret(svc))
		_, _, ans := e.postRefresh(t, testInstance, "application/json", refreshBody(svc, fr.Get("refresh_token")))
		r := decodeRefresh(t, ans)
		secrets = append(secrets, r.AccessToken, r.RefreshToken)
		e.postRefresh(t, testInstance, "application/json", refreshBody(svc, fr.Get("refresh_token"))) // reuse: invalid_grant
	}
	e.fake.SetTokenFault(fakeapi.GitHub, fakeapi.FaultServerError, 0)
	e.postRefresh(t, testInstance, "application/json", refreshBody("github", "ghr_secret_refresh_in_a_failure"))
	e.postRefresh(t, "wrong-instance-token-0123456789abcdefghijklmn", "application/json", refreshBody("github", "x"))
	secrets = append(secrets, "ghr_secret_refresh_in_a_failure", testInstance, "wrong-instance-token")
	_, _, metrics := do(t, e, "GET", "/metrics", nil)
	logs := e.logs.String()
	if !strings.Contains(logs, "oauth flow completed") || !strings.Contains(logs, "token refreshed") || !strings.Contains(logs, string(brokerapi.CodeInvalidGrant)) {
		t.Fatalf("the log misses events:\n%s", logs)
	}
	for _, s := range secrets {
		if s == "" {
			t.Fatal("an empty secret")
		}
		if strings.Contains(logs, s) {
			t.Errorf("the log holds a secret %.8s…", s)
		}
		if strings.Contains(string(metrics), s) {
			t.Errorf("the metrics hold a secret %.8s…", s)
		}
	}
	c := Client{ID: "id", Secret: "hunter2"}
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		if strings.Contains(fmt.Sprintf(f, c), "hunter2") {
			t.Errorf("%s prints the secret", f)
		}
	}
}

func TestPanicIsInternal(t *testing.T) {
	e := newEnv(t, nil)
	h := e.b.routes()
	h.Get("/x", func(http.ResponseWriter, *http.Request) { panic("boom ghr_secret") })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
	if rec.Code != 500 || apiError(t, rec.Body.Bytes()) != brokerapi.CodeInternal || strings.Contains(rec.Body.String(), "boom") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(e.logs.String(), "panic: boom") {
		t.Fatalf("the panic is not logged: %s", e.logs.String())
	}
}

// TestOAuthDocListsEveryCode: docs/OAUTH.md's code table lists every code
// of the broker's status table with its status, and every fragment-only
// code as "fragment"; it documents no code the broker lacks.
func TestOAuthDocListsEveryCode(t *testing.T) {
	doc, err := os.ReadFile("../docs/OAUTH.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := httperr.DocumentedCodes(doc)
	for _, c := range brokerapi.Codes() {
		if got, ok := documented[string(c)]; !ok || got != c.Status() {
			t.Errorf("docs/OAUTH.md: code %s documented with status %d, want %d", c, got, c.Status())
		}
	}
	fragment := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| fragment \\|").FindAllStringSubmatch(string(doc), -1) {
		fragment[m[1]] = true
	}
	for _, c := range brokerapi.FragmentCodes() {
		if !fragment[string(c)] {
			t.Errorf("docs/OAUTH.md: fragment code %s is not documented as \"fragment\"", c)
		}
		delete(fragment, string(c))
	}
	for c := range fragment {
		t.Errorf("docs/OAUTH.md documents fragment code %s, which brokerapi does not have", c)
	}
	for c := range documented {
		if brokerapi.Code(c).Status() == http.StatusInternalServerError && c != string(brokerapi.CodeInternal) {
			t.Errorf("docs/OAUTH.md documents %s, which brokerapi does not have", c)
		}
	}
}

// TestErrorBodyHasRequestID: an error answer carries the answer's
// X-Request-Id in its body, the one status of its code, and no cause.
func TestErrorBodyHasRequestID(t *testing.T) {
	e := newEnv(t, nil)
	rec := httptest.NewRecorder()
	e.b.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/oauth/config?service=gitlab", nil))
	var eb httperr.Envelope[brokerapi.Code]
	if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil {
		t.Fatalf("not an error body: %s", rec.Body)
	}
	id := rec.Header().Get("X-Request-Id")
	if rec.Code != 404 || eb.Error.Code != brokerapi.CodeUnknownService || id == "" || eb.Error.RequestID != id {
		t.Fatalf("status %d, body %s, X-Request-Id %q", rec.Code, rec.Body, id)
	}
}
