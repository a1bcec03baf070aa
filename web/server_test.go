package web

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/internal/httpserve"
	"github.com/elevenmessenger/pinned/internal/testing/testutil"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
)

// stubSidecar speaks the sidecar's wire format for /v1/identity, /v1/ops
// and /v1/consent and records what reached it.
type stubSidecar struct {
	mu     sync.Mutex
	bodies []string
	auth   []string
	ids    []string
	status int    // answer status of /v1/ops
	answer string // answer body of /v1/ops
}

func (s *stubSidecar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, r.URL.Path+" "+string(b))
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.ids = append(s.ids, r.Header.Get("X-Request-Id"))
	status, answer := s.status, s.answer
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	switch r.URL.Path {
	case "/v1/identity":
		_, _ = io.WriteString(w, `{"public_key":"`+base64.StdEncoding.EncodeToString(make([]byte, 32))+`","registry":"sha256:x"}`)
	case "/v1/ops":
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	default:
		_, _ = io.WriteString(w, `{"service":"github","op":"create_issue","access":"write","confirm":"Open?","args_sha256":"00"}`)
	}
}

func (s *stubSidecar) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

func newTestServer(t *testing.T, brokerURL string) (*Server, *stubSidecar, *testutil.SyncBuffer) {
	t.Helper()
	stub := &stubSidecar{status: 200, answer: `{"status":200,"data":{"login":"pinned-tester"}}`}
	sc := httptest.NewServer(stub)
	t.Cleanup(sc.Close)
	logs := &testutil.SyncBuffer{}
	l := zerolog.New(logs)
	s, err := New(Config{
		Bots:      []Bot{{Name: "eleven", URL: sc.URL, Token: secret.Secret("caller-token-0123456789")}},
		BrokerURL: brokerURL, Logger: &l,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, stub, logs
}

// validGrant is standard base64 of 100 bytes: the shape of a sealed box.
var validGrant = base64.StdEncoding.EncodeToString(make([]byte, 100))

func TestNewRefusesBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{name: "no bot", cfg: Config{}, want: "at least one bot"},
		{name: "bad name", cfg: Config{Bots: []Bot{{Name: "Bad Name", URL: "http://127.0.0.1:1"}}}, want: "bot name"},
		{name: "twice", cfg: Config{Bots: []Bot{{Name: "a", URL: "http://127.0.0.1:1"}, {Name: "a", URL: "http://127.0.0.1:2"}}}, want: "twice"},
		{name: "bad url", cfg: Config{Bots: []Bot{{Name: "a", URL: "ftp://x"}}}, want: "URL must be"},
		{name: "url with userinfo", cfg: Config{Bots: []Bot{{Name: "a", URL: "http://u:p@x"}}}, want: "URL must be"},
		{name: "bad broker", cfg: Config{Bots: []Bot{{Name: "a", URL: "https://x"}}, BrokerURL: "javascript:alert(1)"}, want: "broker URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestSecurityHeaders(t *testing.T) {
	s, _, _ := newTestServer(t, "")
	for _, path := range []string{"/", "/apps/github", "/static/pinned.js", "/api/integrations", "/nope"} {
		t.Run(path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
			h := rec.Header()
			if got := h.Get("Content-Security-Policy"); got != contentSecurityPolicy {
				t.Errorf("CSP = %q", got)
			}
			for k, want := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
				if h.Get(k) != want {
					t.Errorf("%s = %q, want %q", k, h.Get(k), want)
				}
			}
		})
	}
	for _, want := range []string{"default-src 'none'", "script-src 'self' 'wasm-unsafe-eval';", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(contentSecurityPolicy, want) {
			t.Errorf("the CSP lacks %q", want)
		}
	}
	if strings.Contains(contentSecurityPolicy, "unsafe-inline") || strings.Contains(contentSecurityPolicy, "'unsafe-eval'") || strings.Contains(contentSecurityPolicy, "http") {
		t.Error("the CSP allows inline code, eval or another origin")
	}
}

// TestNoInlineCode: the pages have no inline script, style or event
// handler (the CSP would block them anyway; this keeps the pages honest).
func TestNoInlineCode(t *testing.T) {
	script := regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`)
	inline := regexp.MustCompile(`(?i)\son[a-z]+\s*=|\sstyle\s*=|<style|javascript:`)
	pages := 0
	err := fs.WalkDir(Static(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".html") {
			return err
		}
		pages++
		b, _ := fs.ReadFile(Static(), path)
		for _, m := range script.FindAllSubmatch(b, -1) {
			if !regexp.MustCompile(`\ssrc="/static/`).Match(m[1]) || strings.TrimSpace(string(m[2])) != "" {
				t.Errorf("%s: a script that is not a same-origin file: %q", path, m[0])
			}
		}
		if m := inline.Find(b); m != nil {
			t.Errorf("%s has inline code or style: %q", path, m)
		}
		return nil
	})
	if err != nil || pages != 2 {
		t.Fatalf("walked %d pages: %v", pages, err)
	}
}

// TestVendoredSHA256: the vendored libsodium files are byte for byte what
// web/static/vendor/VENDOR records ('make web-vendor' writes both), and
// the pages load exactly those files.
func TestVendoredSHA256(t *testing.T) {
	f, err := Static().Open("vendor/VENDOR")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var pkg, version, file, sum string
		if parts := strings.Fields(line); len(parts) == 4 {
			pkg, version, file, sum = parts[0], parts[1], parts[2], parts[3]
		} else {
			t.Fatalf("VENDOR line %q: want 'package version file sha256'", line)
		}
		b, err := fs.ReadFile(Static(), "vendor/"+file)
		if err != nil {
			t.Fatalf("%s@%s: %v", pkg, version, err)
		}
		got := sha256.Sum256(b)
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("vendor/%s (%s@%s): SHA-256 %x, VENDOR records %s; run make web-vendor", file, pkg, version, got, sum)
		}
		for _, page := range []string{"index.html", "github.html"} {
			html, _ := fs.ReadFile(Static(), page)
			if !strings.Contains(string(html), `src="/static/vendor/`+file+`"`) {
				t.Errorf("%s does not load vendor/%s", page, file)
			}
		}
		seen++
	}
	if seen != 2 {
		t.Fatalf("VENDOR lists %d files, want libsodium and libsodium-wrappers", seen)
	}
}

func TestCrossOriginRefused(t *testing.T) {
	s, stub, _ := newTestServer(t, "")
	body := `{"service":"github","op":"get_viewer","args":{},"grant":"` + validGrant + `"}`
	tests := []struct {
		name    string
		method  string
		path    string
		headers map[string]string
		status  int
	}{
		{name: "same origin", method: "POST", path: "/api/bots/eleven/ops", headers: map[string]string{"Origin": "http://example.test", "Sec-Fetch-Site": "same-origin"}, status: 200},
		{name: "other origin", method: "POST", path: "/api/bots/eleven/ops", headers: map[string]string{"Origin": "http://evil.test"}, status: 403},
		{name: "other port", method: "POST", path: "/api/bots/eleven/ops", headers: map[string]string{"Origin": "http://example.test:8080"}, status: 403},
		{name: "null origin", method: "POST", path: "/api/bots/eleven/ops", headers: map[string]string{"Origin": "null"}, status: 403},
		{name: "cross-site fetch", method: "POST", path: "/api/bots/eleven/ops", headers: map[string]string{"Origin": "http://example.test", "Sec-Fetch-Site": "cross-site"}, status: 403},
		{name: "same-site fetch", method: "POST", path: "/api/bots/eleven/consent", headers: map[string]string{"Origin": "http://example.test", "Sec-Fetch-Site": "same-site"}, status: 403},
		{name: "post without origin", method: "POST", path: "/api/bots/eleven/ops", status: 403},
		{name: "typed URL posting", method: "POST", path: "/api/bots/eleven/ops", headers: map[string]string{"Origin": "http://example.test", "Sec-Fetch-Site": "none"}, status: 403},
		{name: "cross-site read of the catalog", method: "GET", path: "/api/integrations", headers: map[string]string{"Sec-Fetch-Site": "cross-site"}, status: 403},
		{name: "cross-origin read of the bots", method: "GET", path: "/api/bots", headers: map[string]string{"Origin": "http://evil.test"}, status: 403},
		{name: "typed URL read", method: "GET", path: "/api/integrations", headers: map[string]string{"Sec-Fetch-Site": "none"}, status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(stub.calls())
			req := httptest.NewRequest(tt.method, "http://example.test"+tt.path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if tt.status == 403 {
				if !strings.Contains(rec.Body.String(), `"code":"cross_origin"`) {
					t.Errorf("body = %s", rec.Body)
				}
				if n := len(stub.calls()) - before; n != 0 {
					t.Errorf("a refused request reached the sidecar %d times", n)
				}
			}
		})
	}
}

// TestRelayRelaysSealedGrantsOnly: a body that is not exactly the
// endpoint's object, or whose grant is not a sealed box (a token pasted
// in the clear), is refused before the sidecar is called.
func TestRelayRelaysSealedGrantsOnly(t *testing.T) {
	s, stub, logs := newTestServer(t, "")
	pat := "ghp_fake_pinned_github_token_000000000000"
	tests := []struct {
		name   string
		path   string
		ctype  string
		body   string
		status int
		code   string
	}{
		{name: "sealed grant", path: "/api/bots/eleven/ops", body: `{"service":"github","op":"get_viewer","args":{},"grant":"` + validGrant + `"}`, status: 200},
		{name: "token in the clear as grant", path: "/api/bots/eleven/ops", body: `{"service":"github","op":"get_viewer","grant":"` + pat + `"}`, status: 400, code: "bad_request"},
		{name: "grant too short", path: "/api/bots/eleven/ops", body: `{"service":"github","op":"get_viewer","grant":"` + base64.StdEncoding.EncodeToString(make([]byte, 48)) + `"}`, status: 400, code: "bad_request"},
		{name: "extra member", path: "/api/bots/eleven/ops", body: `{"service":"github","op":"get_viewer","grant":"` + validGrant + `","secret":"` + pat + `"}`, status: 400, code: "bad_request"},
		{name: "duplicate key", path: "/api/bots/eleven/ops", body: `{"service":"github","op":"get_viewer","grant":"` + validGrant + `","grant":"` + validGrant + `"}`, status: 400, code: "bad_request"},
		{name: "not an object", path: "/api/bots/eleven/ops", body: `["x"]`, status: 400, code: "bad_request"},
		{name: "trailing data", path: "/api/bots/eleven/ops", body: `{"service":"github","op":"get_viewer","grant":"` + validGrant + `"} {}`, status: 400, code: "bad_request"},
		{name: "consent", path: "/api/bots/eleven/consent", body: `{"service":"github","op":"create_issue","args":{"title":"x"}}`, status: 200},
		{name: "consent with a grant", path: "/api/bots/eleven/consent", body: `{"service":"github","op":"create_issue","grant":"` + validGrant + `"}`, status: 400, code: "bad_request"},
		{name: "not json", path: "/api/bots/eleven/ops", ctype: "text/plain", body: `{}`, status: 415, code: "unsupported_media_type"},
		{name: "unknown bot", path: "/api/bots/nobody/ops", body: `{}`, status: 404, code: "unknown_bot"},
		{name: "too large", path: "/api/bots/eleven/ops", body: `{"service":"` + strings.Repeat("a", DefaultMaxBodyBytes) + `"}`, status: 413, code: "request_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(stub.calls())
			req := httptest.NewRequest("POST", "http://example.test"+tt.path, strings.NewReader(tt.body))
			ct := tt.ctype
			if ct == "" {
				ct = "application/json"
			}
			req.Header.Set("Content-Type", ct)
			req.Header.Set("Origin", "http://example.test")
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			calls := len(stub.calls()) - before
			if tt.status == 200 {
				if calls != 1 {
					t.Fatalf("the sidecar was called %d times, want 1", calls)
				}
				return
			}
			if calls != 0 {
				t.Errorf("a refused body reached the sidecar")
			}
			var e struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code != tt.code {
				t.Errorf("answer %s, want code %s", rec.Body, tt.code)
			}
			if strings.Contains(rec.Body.String(), pat) {
				t.Error("the error answer repeats the token")
			}
		})
	}
	if strings.Contains(logs.String(), pat) || strings.Contains(logs.String(), validGrant) {
		t.Error("the log holds a body")
	}
	for _, a := range stub.auth {
		if a != "Bearer caller-token-0123456789" {
			t.Errorf("the sidecar got Authorization %q, want the caller token", a)
		}
	}
}

// TestRelayPassesAnswers: the sidecar's status and body, rotated pair
// included, reach the page unchanged; its error code goes to the log.
func TestRelayPassesAnswers(t *testing.T) {
	s, stub, logs := newTestServer(t, "")
	stub.status = 502
	stub.answer = `{"error":{"code":"upstream_error","message":"Not Found","upstream_status":404},"rotated":"Hf2b=="}`
	req := httptest.NewRequest("POST", "http://example.test/api/bots/eleven/ops",
		strings.NewReader(`{"service":"hubspot","op":"get_viewer","grant":"`+validGrant+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://example.test")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != 502 || strings.TrimSpace(rec.Body.String()) != stub.answer {
		t.Fatalf("relayed %d %s", rec.Code, rec.Body)
	}
	if rec.Header().Get("Cache-Control") != "no-store" {
		t.Error("a relayed answer must not be cached")
	}

	stub.mu.Lock()
	stub.status, stub.answer = 503, `{"error":{"code":"busy","message":"every op slot is taken","retry_after":5}}`
	stub.mu.Unlock()
	req = httptest.NewRequest("POST", "http://example.test/api/bots/eleven/ops",
		strings.NewReader(`{"service":"hubspot","op":"get_viewer","grant":"`+validGrant+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://example.test")
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "5" {
		t.Errorf("busy relayed as %d with Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	if !strings.Contains(logs.String(), `"outcome":"upstream_error"`) || !strings.Contains(logs.String(), `"service":"hubspot"`) {
		t.Errorf("log = %s", logs)
	}
	if strings.Contains(logs.String(), "Hf2b") {
		t.Error("the log holds the rotated pair")
	}
	// One id per request in both logs: generated, or a clean one kept.
	id := rec.Header().Get("X-Request-Id")
	if id == "" || !strings.Contains(logs.String(), `"request_id":"`+id+`"`) || stub.ids[len(stub.ids)-1] != id {
		t.Errorf("request id %q: log %s, sidecar got %q", id, logs, stub.ids)
	}
	for _, tt := range []struct{ sent, kept string }{{"web-123.abc", "web-123.abc"}, {"bad id\nwith newline", ""}} {
		req := httptest.NewRequest("GET", "http://example.test/healthz", nil)
		req.Header.Set("X-Request-Id", tt.sent)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		got := rec.Header().Get("X-Request-Id")
		if tt.kept != "" && got != tt.kept || tt.kept == "" && (got == "" || got == tt.sent) {
			t.Errorf("sent X-Request-Id %q, answered %q", tt.sent, got)
		}
	}
}

func TestIntegrationsAndBots(t *testing.T) {
	broker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/oauth/config" {
			http.NotFound(w, r)
			return
		}
		id := r.URL.Query().Get("service")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"service":"`+id+`","enabled":`+map[bool]string{true: "true", false: "false"}[id == "hubspot"]+`}`)
	}))
	defer broker.Close()
	s, _, _ := newTestServer(t, broker.URL)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/integrations", nil))
	var c Catalog
	if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Services) != len(registry.Default().IDs()) || c.Broker != broker.URL {
		t.Fatalf("services %d, broker %q", len(c.Services), c.Broker)
	}
	byID := map[string]CatalogService{}
	for _, svc := range c.Services {
		byID[svc.ID] = svc
	}
	gh, hs := byID["github"], byID["hubspot"]
	if gh.Host != "api.github.com" || gh.PATHelp == "" || gh.Viewer != "get_viewer" || !gh.OAuth || gh.OAuthEnabled {
		t.Errorf("github = %+v", gh)
	}
	if !hs.OAuthEnabled {
		t.Error("hubspot: the broker says the flow can start")
	}
	var create, repos *CatalogOp
	for i := range gh.Ops {
		switch gh.Ops[i].Name {
		case "create_issue":
			create = &gh.Ops[i]
		case "list_repos":
			repos = &gh.Ops[i]
		}
	}
	if create == nil || create.Access != "write" || create.Confirm != `Open an issue titled "{title}" in {owner}/{repo}?` || !create.Args["title"].Required {
		t.Errorf("create_issue = %+v", create)
	}
	if repos == nil || repos.Access != "read" || repos.Fields[0] != "full_name" {
		t.Errorf("list_repos = %+v", repos)
	}

	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/bots", nil))
	var bots []BotInfo
	if err := json.Unmarshal(rec.Body.Bytes(), &bots); err != nil || len(bots) != 1 || bots[0].Name != "eleven" || len(bots[0].PublicKey) != 44 {
		t.Fatalf("bots = %s", rec.Body)
	}

	// A broker that cannot be reached means paste-a-token only.
	broker.Close()
	s2, _, _ := newTestServer(t, broker.URL)
	rec = httptest.NewRecorder()
	s2.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/integrations", nil))
	if strings.Contains(rec.Body.String(), `"oauth_enabled":true`) {
		t.Error("OAuth offered while the broker is down")
	}
}

// FuzzCheckBody: the relay's body check never panics, and whatever it
// accepts for an op or a revocation is exactly {service, op, args?,
// grant} or {grant}, with a grant that is standard base64 longer than a
// sealed box's overhead.
func FuzzCheckBody(f *testing.F) {
	f.Add([]byte(`{"service":"github","op":"get_viewer","args":{},"grant":"`+validGrant+`"}`), uint8(0))
	f.Add([]byte(`{"service":"github","op":"x","args":{"a":[1,{"b":null}]}}`), uint8(1))
	f.Add([]byte(`{"grant":"ghp_x"}`), uint8(0))
	f.Add([]byte(`{"grant":"`+validGrant+`"}`), uint8(2))
	f.Add([]byte(`{"grant":"ghp_x"}`), uint8(2))
	f.Add([]byte(`{"service":"a","service":"b","grant":"`+validGrant+`"}`), uint8(0))
	kinds := []string{bodyOp, bodyConsent, bodyRevoke}
	f.Fuzz(func(t *testing.T, body []byte, k uint8) {
		kind := kinds[int(k)%len(kinds)]
		if e := checkBody(body, kind, &httpserve.Basic{}); e != nil || kind == bodyConsent {
			return
		}
		var ob opBody
		var rb revokeBody
		var target any = &ob
		if kind == bodyRevoke {
			target = &rb
		}
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(target); err != nil {
			t.Fatalf("accepted a body that does not decode: %v", err)
		}
		g := ob.Grant + rb.Grant
		raw, err := base64.StdEncoding.Strict().DecodeString(g)
		if err != nil || len(raw) <= sealedBoxOverhead {
			t.Fatalf("accepted grant %q", g)
		}
	})
}

// TestConfigDefaults: a zero or negative field is its documented default;
// a positive one is kept.
func TestConfigDefaults(t *testing.T) {
	tests := []struct {
		name       string
		cfg        Config
		body       int64
		botTimeout time.Duration
	}{
		{name: "zero", cfg: Config{}, body: DefaultMaxBodyBytes, botTimeout: DefaultBotTimeout},
		{name: "negative", cfg: Config{MaxBodyBytes: -1, BotTimeout: -time.Second}, body: DefaultMaxBodyBytes, botTimeout: DefaultBotTimeout},
		{name: "set", cfg: Config{MaxBodyBytes: 10, BotTimeout: time.Second}, body: 10, botTimeout: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cfg.maxBodyBytes(); got != tt.body {
				t.Errorf("maxBodyBytes %d, want %d", got, tt.body)
			}
			if got := tt.cfg.botTimeout(); got != tt.botTimeout {
				t.Errorf("botTimeout %v, want %v", got, tt.botTimeout)
			}
		})
	}
	if (&Config{}).registry() != registry.Default() {
		t.Error("a nil Registry is not registry.Default()")
	}
}
