package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/host"
	hostapi "github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/httperr"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

func TestNewRequires(t *testing.T) {
	k, _ := grant.GenerateKey(nil)
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{name: "no engine", cfg: Config{Key: k}, want: "Engine is required"},
		{name: "no key", cfg: Config{Engine: &host.Engine{}}, want: "Key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestEndpoints(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.MaxBodyBytes = 4096 })
	big := `{"service":"github","op":"get_viewer","args":{"x":"` + strings.Repeat("a", 5000) + `"}}`
	tests := []struct {
		name    string
		method  string
		path    string
		body    any
		header  []string
		status  int
		code    string   // error code, for non-200
		contain []string // fragments of a 200 body
	}{
		{name: "healthz", method: "GET", path: "/healthz", status: 200, contain: []string{`{"status":"ok"}`}},
		{name: "readyz", method: "GET", path: "/readyz", status: 200, contain: []string{`{"status":"ready"}`}},
		{name: "tools default", method: "GET", path: "/v1/tools", status: 200, contain: []string{`"name":"service_op"`, `"input_schema":{"type":"object"`}},
		{name: "tools anthropic", method: "GET", path: "/v1/tools?format=anthropic", status: 200, contain: []string{`"input_schema"`}},
		{name: "tools mcp", method: "GET", path: "/v1/tools?format=mcp", status: 200, contain: []string{`{"tools":[{"name":"service_op"`, `"inputSchema":{"type":"object"`}},
		{name: "tools bad format", method: "GET", path: "/v1/tools?format=openai", status: 400, code: "bad_request"},
		{name: "registry", method: "GET", path: "/v1/registry", status: 200, contain: []string{`"digest":"` + registry.Default().Digest() + `"`, `"services":[{"manifest":1,"id":"dnsimple"`}},
		{name: "identity", method: "GET", path: "/v1/identity", status: 200, contain: []string{`{"public_key":"` + env.key.Public().String() + `","registry":"` + registry.Default().Digest() + `"}`}},
		{name: "metrics", method: "GET", path: "/metrics", status: 200, contain: []string{"pinned_sidecar_replay_cache_capacity 100000", "pinned_sidecar_in_flight 0"}},
		{name: "not found", method: "GET", path: "/v2/ops", status: 404, code: "not_found"},
		{name: "method not allowed", method: "GET", path: "/v1/ops", status: 405, code: "method_not_allowed"},
		{name: "consent write", method: "POST", path: "/v1/consent", body: `{"service":"github","op":"create_issue","args":{"owner":"pinned-tester","repo":"notes","title":"Hi"}}`,
			status: 200, contain: []string{`"access":"write"`, `"confirm":"[GitHub: owner \"pinned-tester\", repo \"notes\"] Open an issue titled \"Hi\" in pinned-tester/notes?"`, `"args_sha256":"`}},
		{name: "consent read", method: "POST", path: "/v1/consent", body: `{"service":"github","op":"list_repos"}`,
			status: 200, contain: []string{`"access":"read"`, `"confirm":""`}},
		{name: "consent default filled", method: "POST", path: "/v1/consent", body: `{"service":"dnsimple","op":"register_domain","args":{"account":1,"domain":"example.com","registrant_id":2}}`,
			status: 200, contain: []string{`"confirm":"[DNSimple: account \"1\", domain \"example.com\"] Register example.com? This buys the domain and costs real money."`,
				`"sends":[{"arg":"auto_renew","value":"false"},{"arg":"registrant_id","value":"2"},{"arg":"whois_privacy","value":"false"}]`,
				`"text":"[DNSimple: account \"1\", domain \"example.com\"] Register example.com? This buys the domain and costs real money.\nAlso sent:\n- auto_renew: false\n- registrant_id: 2\n- whois_privacy: false"`}},
		{name: "consent bad args", method: "POST", path: "/v1/consent", body: `{"service":"github","op":"list_repos","args":{"per_page":500}}`, status: 422, code: "bad_args"},
		{name: "consent unknown op", method: "POST", path: "/v1/consent", body: `{"service":"github","op":"nope"}`, status: 400, code: "unknown_op"},
		{name: "consent unknown service", method: "POST", path: "/v1/consent", body: `{"service":"nope","op":"nope"}`, status: 400, code: "unknown_service"},
		{name: "consent missing op", method: "POST", path: "/v1/consent", body: `{"service":"github"}`, status: 400, code: "bad_request"},
		{name: "ops missing grant", method: "POST", path: "/v1/ops", body: `{"service":"github","op":"get_viewer"}`, status: 400, code: "bad_request"},
		{name: "ops unknown member", method: "POST", path: "/v1/ops", body: `{"service":"github","op":"get_viewer","grant":"x","extra":1}`, status: 400, code: "bad_request"},
		{name: "consent is plain UTF-8", method: "POST", path: "/v1/consent", body: `{"service":"github","op":"create_issue","args":{"owner":"pinned-tester","repo":"notes","title":"<b> & </b>"}}`,
			status: 200, contain: []string{`"confirm":"[GitHub: owner \"pinned-tester\", repo \"notes\"] Open an issue titled \"<b> & </b>\" in pinned-tester/notes?"`}},
		{name: "ops duplicate member", method: "POST", path: "/v1/ops", body: `{"service":"github","op":"get_viewer","grant":"x","grant":"y"}`, status: 400, code: "bad_request"},
		{name: "ops not JSON", method: "POST", path: "/v1/ops", body: `service=github`, status: 400, code: "bad_request"},
		{name: "ops trailing data", method: "POST", path: "/v1/ops", body: `{"service":"github","op":"get_viewer","grant":"x"} {}`, status: 400, code: "bad_request"},
		{name: "ops body too large", method: "POST", path: "/v1/ops", body: big, status: 413, code: "request_too_large"},
		{name: "ops wrong content type", method: "POST", path: "/v1/ops", body: `{}`, header: []string{"Content-Type", "text/plain"}, status: 415, code: "unsupported_media_type"},
		{name: "ops json with charset", method: "POST", path: "/v1/ops", body: `{"service":"github","op":"get_viewer","grant":"x"}`, header: []string{"Content-Type", "application/json; charset=utf-8"}, status: 403, code: "grant_invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := env.do(t, tt.method, tt.path, tt.body, tt.header...)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if r.header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") && tt.path != "/metrics" {
				t.Errorf("Content-Type %q", ct)
			}
			if tt.status == 405 && r.header.Get("Allow") != "POST" {
				t.Errorf("405 with Allow %q, want POST (RFC 9110 section 15.5.6)", r.header.Get("Allow"))
			}
			if tt.status != 200 {
				if r.err.Error.Code != tt.code || r.err.Error.Message == "" {
					t.Fatalf("error %s, want code %s", r.body, tt.code)
				}
				return
			}
			for _, c := range tt.contain {
				if !strings.Contains(string(r.body), c) {
					t.Errorf("body lacks %s: %.300s", c, r.body)
				}
			}
		})
	}
	if n := len(env.fake.Requests()); n != 0 {
		t.Fatalf("the fake received %d requests; consent and refusals send nothing", n)
	}
}

// TestConsentHashBindsGrant: the args_sha256 /v1/consent returns is the
// one a grant binds, so a client can seal exactly what the member saw.
func TestConsentHashBindsGrant(t *testing.T) {
	env := newTestEnv(t, nil)
	args := `{"owner":"pinned-tester","repo":"notes","title":"From consent"}`
	r := env.do(t, "POST", "/v1/consent", `{"service":"github","op":"create_issue","args":`+args+`}`)
	var c ConsentResponse
	if err := json.Unmarshal(r.body, &c); err != nil || c.ArgsSHA256 == "" {
		t.Fatalf("consent: %s", r.body)
	}
	g := env.seal(t, grant.Grant{Access: grant.AccessWrite, Op: c.Op, ArgsSHA256: c.ArgsSHA256})
	if r := env.op(t, "github", "create_issue", args, g); r.status != 200 {
		t.Fatalf("op with the consented args: %d %s", r.status, r.body)
	}
}

func TestCallerToken(t *testing.T) {
	const token = "caller-token-0123456789abcdef"
	env := newTestEnv(t, func(c *Config) { c.CallerToken = token })
	tests := []struct {
		name   string
		path   string
		auth   string
		status int
	}{
		{name: "tools without token", path: "/v1/tools", status: 401},
		{name: "tools wrong token", path: "/v1/tools", auth: "Bearer wrong", status: 401},
		{name: "tools token prefix", path: "/v1/tools", auth: "Bearer " + token[:10], status: 401},
		{name: "tools basic scheme", path: "/v1/tools", auth: "Basic " + token, status: 401},
		{name: "tools right token", path: "/v1/tools", auth: "Bearer " + token, status: 200},
		{name: "scheme case-insensitive", path: "/v1/tools", auth: "bearer " + token, status: 200},
		{name: "metrics without token", path: "/metrics", status: 401},
		{name: "metrics with token", path: "/metrics", auth: "Bearer " + token, status: 200},
		{name: "registry without token", path: "/v1/registry", status: 401},
		{name: "identity without token", path: "/v1/identity", status: 401},
		{name: "healthz is open", path: "/healthz", status: 200},
		{name: "readyz is open", path: "/readyz", status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h []string
			if tt.auth != "" {
				h = []string{"Authorization", tt.auth}
			}
			r := env.do(t, "GET", tt.path, nil, h...)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if tt.status == 401 && (r.err.Error.Code != "unauthorized" || r.header.Get("WWW-Authenticate") == "") {
				t.Fatalf("401 without code or challenge: %s", r.body)
			}
		})
	}
	r := env.do(t, "POST", "/v1/ops", `{"service":"github","op":"get_viewer","grant":"x"}`)
	if r.status != 401 {
		t.Fatalf("ops without token: %d", r.status)
	}
	assertNoSecrets(t, env.allLogs(), token)
}

// TestUpstreamErrorsPassThrough: the host's codes reach the bot unchanged,
// with status, retry-after and upstream status.
func TestUpstreamErrorsPassThrough(t *testing.T) {
	env := newTestEnv(t, nil)
	tests := []struct {
		name       string
		hook       func(w http.ResponseWriter, r *http.Request) bool
		op, args   string
		status     int
		code       string
		retry      int
		upstream   int
		retryAfter string
	}{
		{name: "not found upstream", op: "get_repo", args: `{"owner":"pinned-tester","repo":"no-such-repo"}`, status: 502, code: "upstream_error", upstream: 404},
		{name: "invalid upstream body", hook: func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{not json`))
			return true
		}, op: "get_viewer", args: `{}`, status: 502, code: "upstream_invalid", upstream: 200},
		{name: "redirect not followed", hook: func(w http.ResponseWriter, r *http.Request) bool {
			http.Redirect(w, r, "https://evil.example/", http.StatusFound)
			return true
		}, op: "get_viewer", args: `{}`, status: 502, code: "upstream_error", upstream: 302},
		// Last: a provider's 429 backs the credential off for its
		// Retry-After (limits.go), which would hold back the cases above.
		{name: "rate limited", hook: func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Retry-After", "7")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(429)
			_, _ = w.Write([]byte(`{"message":"slow down"}`))
			return true
		}, op: "get_viewer", args: `{}`, status: 429, code: "rate_limited", retry: 7, upstream: 429, retryAfter: "7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.fake.SetHandler(tt.hook)
			defer env.fake.SetHandler(nil)
			r := env.op(t, "github", tt.op, tt.args, env.seal(t, grant.Grant{Access: grant.AccessRead}))
			e := r.err.Error
			if r.status != tt.status || e.Code != tt.code || e.RetryAfter != tt.retry || e.UpstreamStatus != tt.upstream {
				t.Fatalf("got %d %s", r.status, r.body)
			}
			if got := r.header.Get("Retry-After"); got != tt.retryAfter {
				t.Fatalf("Retry-After %q, want %q", got, tt.retryAfter)
			}
		})
	}
	m := string(env.do(t, "GET", "/metrics", nil).body)
	if !strings.Contains(m, `pinned_sidecar_denials_total{reason="redirect",source="egress"} 1`) {
		t.Errorf("egress denial not counted:\n%s", grepLines(m, "denials"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// blockingFake makes the fake hold every request until release is closed
// (or the request is canceled), counting how many are held at once.
type blockingFake struct {
	release chan struct{}
	arrived chan struct{}
	now     atomic.Int64
	peak    atomic.Int64
}

func newBlockingFake(env *testEnv) *blockingFake {
	b := &blockingFake{release: make(chan struct{}), arrived: make(chan struct{}, 1000)}
	env.fake.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
		n := b.now.Add(1)
		defer b.now.Add(-1)
		for {
			p := b.peak.Load()
			if n <= p || b.peak.CompareAndSwap(p, n) {
				break
			}
		}
		b.arrived <- struct{}{}
		select {
		case <-b.release:
		case <-r.Context().Done():
		}
		return false // let the fake answer normally
	})
	return b
}

func TestBusy(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.MaxConcurrency = 1; c.BusyRetryAfter = 1500 * time.Millisecond })
	b := newBlockingFake(env)
	first := make(chan response, 1)
	go func() { first <- env.op(t, "github", "get_viewer", `{}`, env.seal(t, grant.Grant{})) }()
	<-b.arrived // the one slot is taken, upstream
	start := time.Now()
	r := env.op(t, "github", "get_viewer", `{}`, env.seal(t, grant.Grant{}))
	if r.status != 503 || r.err.Error.Code != "busy" || r.err.Error.RetryAfter != 2 || r.header.Get("Retry-After") != "2" {
		t.Fatalf("second op: %d %s (Retry-After %q)", r.status, r.body, r.header.Get("Retry-After"))
	}
	// Queued, it would wait for the first op, which waits for release.
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("busy took %s: it must answer at once, not queue", d)
	}
	c := env.do(t, "POST", "/v1/consent", `{"service":"github","op":"get_viewer"}`)
	if c.err.Error.Code != "busy" {
		t.Fatalf("consent while full: %s", c.body)
	}
	close(b.release)
	if r := <-first; r.status != 200 {
		t.Fatalf("first op: %d %s", r.status, r.body)
	}
	// The slot is free again.
	if r := env.op(t, "github", "get_viewer", `{}`, env.seal(t, grant.Grant{})); r.status != 200 {
		t.Fatalf("after release: %d %s", r.status, r.body)
	}
}

func TestReplayCacheFullIsBusy(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.ReplayCacheSize = 2 })
	for i := range 2 {
		if r := env.op(t, "github", "get_viewer", `{}`, env.seal(t, grant.Grant{})); r.status != 200 {
			t.Fatalf("grant %d: %d %s", i, r.status, r.body)
		}
	}
	env.fake.Reset()
	r := env.op(t, "github", "get_viewer", `{}`, env.seal(t, grant.Grant{}))
	if r.status != 503 || r.err.Error.Code != "busy" || r.header.Get("Retry-After") == "" {
		t.Fatalf("third grant into a full cache: %d %s", r.status, r.body)
	}
	if len(env.fake.Requests()) != 0 {
		t.Fatal("a grant refused for a full cache reached the fake")
	}
}

// TestGracefulShutdown: an op in flight when shutdown starts finishes and
// gets its answer; the server stops being ready at once.
func TestGracefulShutdown(t *testing.T) {
	env := newTestEnv(t, nil)
	b := newBlockingFake(env)
	got := make(chan response, 1)
	go func() { got <- env.op(t, "github", "get_viewer", `{}`, env.seal(t, grant.Grant{})) }()
	<-b.arrived
	stopped := make(chan error, 1)
	go func() { stopped <- env.stop() }()
	deadline := time.Now().Add(5 * time.Second)
	for env.srv.Ready() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if env.srv.Ready() {
		t.Fatal("still ready while shutting down")
	}
	select {
	case err := <-stopped:
		t.Fatalf("Serve returned (%v) with an op in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(b.release)
	if r := <-got; r.status != 200 {
		t.Fatalf("in-flight op: %d %s", r.status, r.body)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Serve = %v", err)
	}
	if _, err := http.Get(env.base + "/healthz"); err == nil {
		t.Fatal("still accepting after shutdown")
	}
}

// TestShutdownGraceCancels: past the grace period, in-flight ops are
// canceled and Serve returns.
func TestShutdownGraceCancels(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.ShutdownGrace = 200 * time.Millisecond })
	b := newBlockingFake(env) // never released: only cancellation ends it
	type answer struct {
		status int
		body   string
		err    error
	}
	got := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("POST", env.base+"/v1/ops", strings.NewReader(`{"service":"github","op":"get_viewer","grant":"`+env.seal(t, grant.Grant{})+`"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := env.client.Do(req)
		if err != nil {
			got <- answer{err: err}
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- answer{status: resp.StatusCode, body: string(body)}
	}()
	<-b.arrived
	start := time.Now()
	if err := env.stop(); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	// Uncanceled, the op would block forever (the fake is never released).
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("shutdown took %s with a 200ms grace", d)
	}
	if !strings.Contains(env.logs.String(), "grace period over") {
		t.Fatal("no log of the canceled requests")
	}
	// The op cut at the deadline is answered (docs/API.md): 503 not_ready,
	// and logged as such, not as 499 canceled ("the caller went away").
	a := <-got
	if a.err != nil || a.status != 503 || !strings.Contains(a.body, `"code":"not_ready"`) {
		t.Fatalf("the op cut at the grace deadline: %d %q %v; want 503 not_ready", a.status, a.body, a.err)
	}
	if strings.Contains(env.logs.String(), `"status":499`) {
		t.Fatalf("the cut op was logged as 499: %s", env.logs.String())
	}
}

func TestRequestID(t *testing.T) {
	env := newTestEnv(t, nil)
	tests := []struct {
		name, sent string
		kept       bool
	}{
		{name: "valid id kept", sent: "abc-123.x", kept: true},
		{name: "spaces replaced", sent: "abc 123", kept: false},
		{name: "too long replaced", sent: strings.Repeat("a", 65), kept: false},
		{name: "quote replaced", sent: `a"b`, kept: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := env.do(t, "GET", "/healthz", nil, "X-Request-Id", tt.sent)
			got := r.header.Get("X-Request-Id")
			if (got == tt.sent) != tt.kept || got == "" {
				t.Fatalf("X-Request-Id %q for %q, kept want %v", got, tt.sent, tt.kept)
			}
			if !strings.Contains(env.logs.String(), `"request_id":"`+got+`"`) {
				t.Fatal("the id is not in the access log")
			}
		})
	}
}

func TestRecoverer(t *testing.T) {
	env := newTestEnv(t, nil)
	h := env.srv.routes()
	h.Get("/x", func(http.ResponseWriter, *http.Request) { panic("boom") })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"code":"internal"`) {
		t.Fatalf("panic answered %d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(env.logs.String(), `"cause":"panic: boom"`) || !strings.Contains(env.logs.String(), `"event":"panic"`) {
		t.Fatal("panic not logged")
	}
}

// TestHostCodesMapped parses the host's code list (package host/api) and
// checks every code passes through with a status the sidecar documents:
// codeStatus is the one place an op's code becomes an HTTP status.
func TestHostCodesMapped(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "../host/api/api.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || vs.Type == nil || len(vs.Values) != 1 {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Code" {
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
				s, _ := strconv.Unquote(lit.Value)
				codes = append(codes, s)
			}
		}
		return true
	})
	if len(codes) < 10 || len(codes) != len(hostapi.Codes()) {
		t.Fatalf("found %d host codes, hostapi.Codes has %d: %v", len(codes), len(hostapi.Codes()), codes)
	}
	for _, c := range codes {
		t.Run(c, func(t *testing.T) {
			if _, ok := codeStatus[Code(c)]; !ok {
				t.Fatalf("host code %q has no status in codes.go", c)
			}
			e := opError(&host.Error{Code: hostapi.Code(c), Message: "m"}, "the op failed")
			if string(e.Code) != c || e.Status != codeStatus[Code(c)] || e.Message != "m" {
				t.Fatalf("opError made %q %d %q of %q", e.Code, e.Status, e.Message, c)
			}
		})
	}
}

// TestStatusClientClosedIsHTTPErrs: the sidecar's 499 is the one the
// shared error model logs for the broker and web.
func TestStatusClientClosedIsHTTPErrs(t *testing.T) {
	if StatusClientClosed != httperr.StatusClientClosed {
		t.Fatalf("sidecar %d, httperr %d", StatusClientClosed, httperr.StatusClientClosed)
	}
}

// TestAPIDocListsEveryCode keeps docs/API.md's code table equal to
// codes.go: every code with its status, and no code the sidecar lacks.
func TestAPIDocListsEveryCode(t *testing.T) {
	doc, err := os.ReadFile("../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (\\d{3}) \\|")
	documented := map[string]int{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		n, _ := strconv.Atoi(m[2])
		documented[m[1]] = n
	}
	for _, c := range Codes() {
		if got, ok := documented[string(c)]; !ok || got != c.Status() {
			t.Errorf("docs/API.md: code %s documented with status %d, want %d", c, got, c.Status())
		}
	}
	for c := range documented {
		if _, ok := codeStatus[Code(c)]; !ok {
			t.Errorf("docs/API.md documents %s, which codes.go does not have", c)
		}
	}
}

// TestServeStopsOnListenerError: Serve returns the error when the
// listener fails, and is no longer ready.
func TestServeStopsOnListenerError(t *testing.T) {
	env := newTestEnv(t, nil)
	srv, err := New(Config{Engine: env.eng, Key: env.key})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if err := srv.Serve(context.Background(), ln); err == nil || errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve on a closed listener = %v", err)
	}
	if srv.Ready() {
		t.Fatal("ready after Serve failed")
	}
}
