package web

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/elevenmessenger/pinned/secret"

	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/internal/testing/testutil"
)

// live serves s on a real loopback listener (so the connection's local
// address is known, as in production).
func live(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func do(t *testing.T, method, url, host string, hdr map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestDNSRebindingRefused: a page on evil.example whose name the attacker
// rebinds to 127.0.0.1 is same-origin to the browser — its Origin and Host
// agree and Sec-Fetch-Site is same-origin — so the Origin checks pass it.
// Before the Host check it could drive the relay (with the bot's caller
// token, which pinned web adds) and read /api/bots. Now any non-loopback
// Host on a loopback connection is cross_origin, unless it is a
// configured public host (a reverse proxy on the same machine).
func TestDNSRebindingRefused(t *testing.T) {
	s, stub, _ := newTestServer(t, "")
	ts := live(t, s)
	port := ts.URL[strings.LastIndex(ts.URL, ":")+1:]
	body := `{"service":"github","op":"get_viewer","args":{},"grant":"` + validGrant + `"}`
	cases := []struct {
		name, method, path, host string
		want                     int
	}{
		{"relay from a rebound page", "POST", "/api/bots/eleven/ops", "evil.example:" + port, 403},
		{"consent from a rebound page", "POST", "/api/bots/eleven/consent", "evil.example:" + port, 403},
		{"bots from a rebound page", "GET", "/api/bots", "evil.example:" + port, 403},
		{"the page itself", "GET", "/", "evil.example:" + port, 403},
		{"no port", "GET", "/api/integrations", "evil.example", 403},
		{"a name ending in localhost", "GET", "/", "localhost.evil.example:" + port, 403},
		{"127.0.0.1", "POST", "/api/bots/eleven/ops", "127.0.0.1:" + port, 200},
		{"localhost", "POST", "/api/bots/eleven/ops", "localhost:" + port, 200},
		{"LOCALHOST", "GET", "/", "LOCALHOST:" + port, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(stub.calls())
			hdr := map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-origin", "Origin": "http://" + tc.host}
			resp, got := do(t, tc.method, ts.URL+tc.path, tc.host, hdr, body)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, got)
			}
			if resp.Header.Get("Content-Security-Policy") != contentSecurityPolicy {
				t.Error("no CSP on the answer")
			}
			if tc.want == 403 {
				if !strings.Contains(got, `"code":"cross_origin"`) {
					t.Errorf("body %s", got)
				}
				if n := len(stub.calls()) - before; n != 0 {
					t.Errorf("the sidecar was called %d times", n)
				}
			}
		})
	}
	t.Run("a configured public host", func(t *testing.T) {
		sc := httptest.NewServer(stub)
		t.Cleanup(sc.Close)
		s2, err := New(Config{Bots: []Bot{{Name: "eleven", URL: sc.URL}}, Hosts: []string{"catalog.example.com"}})
		if err != nil {
			t.Fatal(err)
		}
		ts2 := live(t, s2)
		hdr := map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-origin", "Origin": "https://catalog.example.com"}
		if resp, got := do(t, "POST", ts2.URL+"/api/bots/eleven/ops", "catalog.example.com", hdr, body); resp.StatusCode != 200 {
			t.Errorf("through a same-machine proxy: %d %s", resp.StatusCode, got)
		}
		if resp, _ := do(t, "GET", ts2.URL+"/", "evil.example", nil, ""); resp.StatusCode != 403 {
			t.Errorf("another host next to a configured one: %d", resp.StatusCode)
		}
	})
}

// TestPlaintextGrantRefused: a page that base64-encodes a grant in
// the clear (JSON with the secret inside) or a token passes the shape
// check of a sealed box (standard base64, over 48 bytes); pinned web must
// still not relay it. A sealed box is uniform bytes, never text.
func TestPlaintextGrantRefused(t *testing.T) {
	s, stub, logs := newTestServer(t, "")
	secret := "ghp_fake_pinned_github_token_000000000000"
	sealed := make([]byte, 300)
	_, _ = rand.Read(sealed)
	for _, tc := range []struct {
		name  string
		grant []byte
		want  int
	}{
		{"plaintext grant JSON", []byte(`{"service":"github","access":"write","kind":"pat","secret":"` + secret + `","expires_at":"2030-01-01T00:00:00Z"}`), 400},
		{"plaintext with unicode", []byte(`{"secret":"` + secret + `","account":"zoë ✓"}`), 400},
		{"a token, base64", []byte(secret + secret), 400},
		{"random bytes (a sealed box)", sealed, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(stub.calls())
			body := `{"service":"github","op":"get_viewer","args":{},"grant":"` + base64.StdEncoding.EncodeToString(tc.grant) + `"}`
			req := httptest.NewRequest("POST", "http://example.test/api/bots/eleven/ops", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Origin", "http://example.test")
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.want, rec.Body)
			}
			if n := len(stub.calls()) - before; tc.want == 400 && n != 0 {
				t.Errorf("relayed %d times", n)
			}
			if strings.Contains(rec.Body.String(), secret) {
				t.Error("the answer echoes the secret")
			}
		})
	}
	if strings.Contains(logs.String(), secret) || strings.Contains(logs.String(), base64.StdEncoding.EncodeToString([]byte(secret))[:20]) {
		t.Error("the secret is in pinned web's log")
	}
}

// TestSecurityHeadersOnErrors: every answer — errors, 404s, 405s,
// a refused body, a relayed sidecar error, a traversal attempt — carries
// the CSP and the framing and sniffing headers.
func TestSecurityHeadersOnErrors(t *testing.T) {
	s, stub, _ := newTestServer(t, "")
	stub.mu.Lock()
	stub.status, stub.answer = 403, `{"error":{"code":"access_denied","message":"no"}}`
	stub.mu.Unlock()
	ts := live(t, s)
	post := map[string]string{"Content-Type": "application/json", "Origin": ts.URL}
	ops := `{"service":"github","op":"create_issue","args":{},"grant":"` + validGrant + `"}`
	for _, tc := range []struct {
		name, method, path string
		hdr                map[string]string
		body               string
		want               int
	}{
		{"404 page", "GET", "/nope", nil, "", 404},
		{"404 api", "GET", "/api/nope", nil, "", 404},
		{"404 static", "GET", "/static/nope.js", nil, "", 404},
		{"static directory", "GET", "/static/vendor/", nil, "", 404},
		{"405", "GET", "/api/bots/eleven/ops", nil, "", 405},
		{"400", "POST", "/api/bots/eleven/ops", post, "{", 400},
		{"413", "POST", "/api/bots/eleven/ops", post, `{"service":"` + strings.Repeat("a", DefaultMaxBodyBytes) + `"}`, 413},
		{"415", "POST", "/api/bots/eleven/ops", map[string]string{"Origin": ts.URL}, ops, 415},
		{"unknown bot", "POST", "/api/bots/nobody/ops", post, ops, 404},
		{"cross origin", "POST", "/api/bots/eleven/ops", map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, ops, 403},
		{"relayed sidecar error", "POST", "/api/bots/eleven/ops", post, ops, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, tc.method, ts.URL+tc.path, "", tc.hdr, tc.body)
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d: %.200s", resp.StatusCode, tc.want, body)
			}
			h := resp.Header
			if h.Get("Content-Security-Policy") != contentSecurityPolicy || h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("headers %v", h)
			}
		})
	}
}

// TestStaticTraversalRefused: escaping /static/ (dot segments, encoded
// dots and slashes, backslashes, an absolute path) never serves a file
// outside the embedded assets, and never this package's source.
func TestStaticTraversalRefused(t *testing.T) {
	s, _, _ := newTestServer(t, "")
	for _, p := range []string{
		"/static/../server.go", "/static/..%2fserver.go", "/static/%2e%2e/server.go", "/static/%2e%2e%2fserver.go",
		"/static/..\\server.go", "/static//etc/passwd", "/static/vendor/../../server.go", "/static/%2fetc%2fpasswd",
		"/static/../static/../doc.go",
	} {
		t.Run(p, func(t *testing.T) {
			req2, err := http.ReadRequest(bufioReader("GET " + p + " HTTP/1.1\r\nHost: example.test\r\n\r\n"))
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req2)
			b := rec.Body.String()
			if rec.Code == 200 || strings.Contains(b, "package web") || strings.Contains(b, "root:") {
				t.Errorf("%s: %d %.120q", p, rec.Code, b)
			}
		})
	}
}

// TestRelayTokenOnlyToBot: a sidecar (or whatever answers at its
// URL) that redirects elsewhere does not get the caller token carried
// there: redirects are not followed, the answer is bot_unavailable, and
// the other server sees nothing. /api/bots and /api/integrations name
// neither the bot's URL nor its token.
func TestRelayTokenOnlyToBot(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":200,"data":{}}`)
	}))
	t.Cleanup(other.Close)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/identity" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"public_key":"`+base64.StdEncoding.EncodeToString(make([]byte, 32))+`","registry":"sha256:x"}`)
			return
		}
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	const token = "caller-token-redirect-0123456789"
	var logs testutil.SyncBuffer // the access log is written after the answer, while the test reads
	l := zerolog.New(&logs)
	s, err := New(Config{Bots: []Bot{{Name: "eleven", URL: redirect.URL, Token: secret.Secret(token)}}, Logger: &l})
	if err != nil {
		t.Fatal(err)
	}
	ts := live(t, s)
	resp, body := do(t, "POST", ts.URL+"/api/bots/eleven/ops", "", map[string]string{"Content-Type": "application/json", "Origin": ts.URL},
		`{"service":"github","op":"get_viewer","args":{},"grant":"`+validGrant+`"}`)
	if resp.StatusCode != 502 || !strings.Contains(body, `"code":"bot_unavailable"`) {
		t.Errorf("redirecting sidecar: %d %s", resp.StatusCode, body)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect target got %d requests", n)
	}
	for _, p := range []string{"/api/bots", "/api/integrations"} {
		_, b := do(t, "GET", ts.URL+p, "", nil, "")
		if strings.Contains(b, token) || strings.Contains(b, strings.TrimPrefix(redirect.URL, "http://")) {
			t.Errorf("%s names the bot's token or URL: %.200s", p, b)
		}
	}
	if strings.Contains(logs.String(), token) {
		t.Error("the caller token is in the log")
	}
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }

// TestBotURLPlainHTTPLoopbackOnly: the page seals members' credentials to the
// key a bot's /v1/identity answers, so a plain-http bot URL off loopback
// (anyone on the path could swap that key, and read the caller token) is
// refused at start; loopback http and https are accepted.
func TestBotURLPlainHTTPLoopbackOnly(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://sidecar.internal:8080", false},
		{"http://10.0.0.5:8080", false},
		{"http://[fd00::1]:8080", false},
		{"http://127.0.0.1.evil.example:8080", false},
		{"http://localhost:8080", true},
		{"http://127.0.0.1:8080", true},
		{"http://[::1]:8080", true},
		{"https://sidecar.internal:8080", true},
	} {
		t.Run(tc.url, func(t *testing.T) {
			_, err := New(Config{Bots: []Bot{{Name: "eleven", URL: tc.url}}})
			if (err == nil) != tc.ok {
				t.Errorf("err %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "plain http is allowed on loopback only") {
				t.Errorf("error %v", err)
			}
		})
	}
}
