package fakeapi

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/registry"
)

func newServer(t *testing.T) *Server {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// do sends one request through s.Client() and returns status, headers and
// body.
func do(t *testing.T, s *Server, method, rawURL string, hdr map[string]string, body string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, rawURL, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %.300s", err, b)
	}
	return v
}

// dig walks a decoded JSON value by a dot path (array indexes as numbers).
func field(v any, path string) any {
	for _, p := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			var i int
			if _, err := fmt.Sscan(p, &i); err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "localhost:0", "192.0.2.1:0", "[::]:0", "127.0.0.1"} {
		if s, err := New(WithListen(addr)); err == nil {
			s.Close()
			t.Errorf("WithListen(%q) accepted", addr)
		}
	}
	s, err := New(WithListen("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") || s.Port() == 0 {
		t.Errorf("Addr = %q", s.Addr())
	}
}

func TestTLSCertificateAndProtocols(t *testing.T) {
	s := newServer(t)
	if !bytes.Contains(s.CACertPEM(), []byte("BEGIN CERTIFICATE")) {
		t.Error("CACertPEM is not PEM")
	}
	want := []string{"api.github.com", "api.dnsimple.com", "api.stripe.com", "api.hubapi.com", "api.linear.app"}
	for _, h := range want {
		if !slices.Contains(s.Hosts(), h) {
			t.Errorf("Hosts = %v, lacks %s", s.Hosts(), h)
		}
	}
	leaf := s.certs.leaf.Leaf
	for _, h := range append(want, "github.com", "dnsimple.com", "connect.stripe.com", "app.hubspot.com", "linear.app", "localhost") {
		if err := leaf.VerifyHostname(h); err != nil {
			t.Errorf("leaf does not cover %s: %v", h, err)
		}
	}
	for _, ip := range []string{"127.0.0.1", "::1"} {
		if err := leaf.VerifyHostname(ip); err != nil {
			t.Errorf("leaf does not cover %s: %v", ip, err)
		}
	}
	// h2 through Client, HTTP/1.1 through a transport without h2.
	resp, err := s.Client().Get("https://api.github.com/user")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Errorf("Client: protocol %s, want HTTP/2", resp.Proto)
	}
	h1 := &http.Client{Transport: &http.Transport{
		DialContext:     s.DialContext,
		TLSClientConfig: &tls.Config{RootCAs: s.CAPool()},
		TLSNextProto:    map[string]func(string, *tls.Conn) http.RoundTripper{},
	}}
	resp, err = h1.Get("https://api.stripe.com/v1/balance")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 1 || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("HTTP/1.1 client: %s %d", resp.Proto, resp.StatusCode)
	}
	// A client that does not trust the CA fails the handshake.
	untrusting := &http.Client{Transport: &http.Transport{DialContext: s.DialContext}}
	if resp, err := untrusting.Get("https://api.github.com/user"); err == nil {
		resp.Body.Close()
		t.Error("a client without the CA connected")
	}
}

func TestAuthSchemes(t *testing.T) {
	s := newServer(t)
	type tc struct {
		name   string
		url    string
		method string
		auth   string // whole Authorization value; "" = none
		body   string
		status int
		msg    string // dot path that must be a non-empty string in the answer
	}
	lq := string(opBody(t, Linear, "get_viewer"))
	cases := []tc{
		{"github ok", "https://api.github.com/user", "GET", "Bearer " + Token(GitHub), "", 200, "login"},
		{"github oauth ok", "https://api.github.com/user", "GET", "Bearer " + OAuthToken(GitHub), "", 200, "login"},
		{"github missing", "https://api.github.com/user", "GET", "", "", 401, "message"},
		{"github wrong", "https://api.github.com/user", "GET", "Bearer nope", "", 401, "message"},
		{"github bare", "https://api.github.com/user", "GET", Token(GitHub), "", 401, "message"},
		{"github token scheme", "https://api.github.com/user", "GET", "token " + Token(GitHub), "", 401, "message"},
		{"github other service token", "https://api.github.com/user", "GET", "Bearer " + Token(Stripe), "", 401, "message"},
		{"dnsimple ok", "https://api.dnsimple.com/v2/whoami", "GET", "Bearer " + Token(DNSimple), "", 200, "data.account.email"},
		{"dnsimple wrong", "https://api.dnsimple.com/v2/whoami", "GET", "Bearer x", "", 401, "message"},
		{"dnsimple bare", "https://api.dnsimple.com/v2/whoami", "GET", Token(DNSimple), "", 401, "message"},
		{"stripe ok", "https://api.stripe.com/v1/balance", "GET", "Bearer " + Token(Stripe), "", 200, "object"},
		{"stripe missing", "https://api.stripe.com/v1/balance", "GET", "", "", 401, "error.message"},
		{"stripe wrong", "https://api.stripe.com/v1/balance", "GET", "Bearer sk_test_wrongwrongwrong", "", 401, "error.message"},
		{"hubspot ok", "https://api.hubapi.com/account-info/v3/details", "GET", "Bearer " + Token(HubSpot), "", 200, "uiDomain"},
		{"hubspot missing", "https://api.hubapi.com/account-info/v3/details", "GET", "", "", 401, "message"},
		{"hubspot wrong", "https://api.hubapi.com/account-info/v3/details", "GET", "Bearer x", "", 401, "message"},
		{"linear key bare ok", "https://api.linear.app/graphql", "POST", Token(Linear), lq, 200, "data.viewer.id"},
		{"linear key as bearer", "https://api.linear.app/graphql", "POST", "Bearer " + Token(Linear), lq, 400, "errors.0.message"},
		{"linear oauth bearer ok", "https://api.linear.app/graphql", "POST", "Bearer " + OAuthToken(Linear), lq, 200, "data.viewer.id"},
		{"linear oauth bare", "https://api.linear.app/graphql", "POST", OAuthToken(Linear), lq, 401, "errors.0.message"},
		{"linear missing", "https://api.linear.app/graphql", "POST", "", lq, 401, "errors.0.message"},
		{"linear wrong", "https://api.linear.app/graphql", "POST", "lin_api_wrong", lq, 401, "errors.0.message"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := map[string]string{"Content-Type": "application/json"}
			if c.auth != "" {
				h["Authorization"] = c.auth
			}
			st, _, b := do(t, s, c.method, c.url, h, c.body)
			if st != c.status {
				t.Fatalf("status %d, want %d: %.300s", st, c.status, b)
			}
			if m, _ := field(decode(t, b), c.msg).(string); m == "" {
				t.Errorf("no %s in %.300s", c.msg, b)
			}
		})
	}
	// Exact envelopes of the 401s.
	_, _, b := do(t, s, "GET", "https://api.github.com/user", bearer("nope"), "")
	if v := decode(t, b); field(v, "message") != "Bad credentials" || field(v, "documentation_url") == nil {
		t.Errorf("github 401 envelope: %s", b)
	}
	_, _, b = do(t, s, "GET", "https://api.stripe.com/v1/balance", bearer("nope"), "")
	if v := decode(t, b); field(v, "error.type") != "invalid_request_error" {
		t.Errorf("stripe 401 envelope: %s", b)
	}
	_, _, b = do(t, s, "GET", "https://api.hubapi.com/account-info/v3/details", nil, "")
	if v := decode(t, b); field(v, "status") != "error" || field(v, "category") != "INVALID_AUTHENTICATION" {
		t.Errorf("hubspot 401 envelope: %s", b)
	}
	_, _, b = do(t, s, "POST", "https://api.linear.app/graphql", map[string]string{"Content-Type": "application/json"}, lq)
	if v := decode(t, b); field(v, "errors.0.extensions.code") != "AUTHENTICATION_ERROR" {
		t.Errorf("linear 401 envelope: %s", b)
	}

	// AddToken / AddOAuthToken / RevokeToken.
	s.AddToken(GitHub, "ghp_extra")
	if st, _, _ := do(t, s, "GET", "https://api.github.com/user", bearer("ghp_extra"), ""); st != 200 {
		t.Errorf("added github token: %d", st)
	}
	s.RevokeToken(GitHub, "ghp_extra")
	if st, _, _ := do(t, s, "GET", "https://api.github.com/user", bearer("ghp_extra"), ""); st != 401 {
		t.Errorf("revoked github token: %d", st)
	}
	s.AddToken(Linear, "lin_api_extra")
	s.AddOAuthToken(Linear, "lin_oauth_extra")
	jh := func(auth string) map[string]string {
		return map[string]string{"Authorization": auth, "Content-Type": "application/json"}
	}
	if st, _, _ := do(t, s, "POST", "https://api.linear.app/graphql", jh("lin_api_extra"), lq); st != 200 {
		t.Errorf("added linear key: %d", st)
	}
	if st, _, _ := do(t, s, "POST", "https://api.linear.app/graphql", jh("Bearer lin_oauth_extra"), lq); st != 200 {
		t.Errorf("added linear oauth token: %d", st)
	}
	if st, _, _ := do(t, s, "POST", "https://api.linear.app/graphql", jh("Bearer lin_api_extra"), lq); st != 400 {
		t.Errorf("added linear key as bearer: %d", st)
	}
}

func TestUnknownRoutesAndHosts(t *testing.T) {
	s := newServer(t)
	for _, c := range []struct{ url, auth, path string }{
		{"https://api.github.com/nope", "Bearer " + Token(GitHub), "message"},
		{"https://api.dnsimple.com/v2/nope", "Bearer " + Token(DNSimple), "message"},
		{"https://api.stripe.com/v1/nope", "Bearer " + Token(Stripe), "error.message"},
		{"https://api.hubapi.com/crm/v3/nope", "Bearer " + Token(HubSpot), "category"},
		{"https://api.linear.app/nope", Token(Linear), "errors.0.message"},
		{"https://api.github.com/repos/pinned-tester/notes/issues/1", "Bearer " + Token(GitHub), "message"},
	} {
		st, _, b := do(t, s, "GET", c.url, map[string]string{"Authorization": c.auth}, "")
		if st != 404 {
			t.Errorf("%s: %d", c.url, st)
		}
		if field(decode(t, b), c.path) == nil {
			t.Errorf("%s: no %s in %s", c.url, c.path, b)
		}
	}
	// OAuth hosts are routed but not implemented yet.
	if st, _, _ := do(t, s, "GET", "https://github.com/login/oauth/authorize", nil, ""); st != 404 {
		t.Errorf("oauth host: %d", st)
	}
	if st, _, _ := do(t, s, "GET", "https://localhost/", nil, ""); st != http.StatusMisdirectedRequest {
		t.Errorf("unknown host: %d", st)
	}
}

func TestBodyCap(t *testing.T) {
	s := newServer(t)
	big := `{"title":"` + strings.Repeat("a", maxBody) + `"}`
	st, _, b := do(t, s, "POST", "https://api.github.com/repos/pinned-tester/notes/issues", bearer(Token(GitHub)), big)
	if st != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d: %.200s", st, b)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || len(reqs[0].Body) != maxBody {
		t.Errorf("recorded body %d bytes", len(reqs[len(reqs)-1].Body))
	}
}

// opBody is the body_json template of an op, as the manifest writes it.
func opBody(t *testing.T, service, op string) []byte {
	t.Helper()
	m, ok := registry.Default().Service(service)
	if !ok || m.Ops[op] == nil {
		t.Fatalf("no op %s.%s", service, op)
	}
	return m.Ops[op].BodyJSON
}

// quote is the JSON text of an op's GraphQL query.
func quote(t *testing.T, service, op string) string {
	t.Helper()
	var q struct{ Query string }
	if err := json.Unmarshal(opBody(t, service, op), &q); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(q.Query)
	return string(b)
}

// TestFixtures: the behaviour of the five services' fixtures that other
// tests rely on: paging, filters and sorting, lookups and their 404s,
// validation errors in each provider's envelope, and writes that later
// reads show.
func TestFixtures(t *testing.T) {
	s := newServer(t)
	gh, dns, st, hs := bearer(Token(GitHub)), bearer(Token(DNSimple)), bearer(Token(Stripe)), bearer(Token(HubSpot))
	json := func(h map[string]string) map[string]string {
		out := map[string]string{"Content-Type": "application/json"}
		for k, v := range h {
			out[k] = v
		}
		return out
	}
	form := map[string]string{"Authorization": "Bearer " + Token(Stripe), "Content-Type": "application/x-www-form-urlencoded"}
	lin := map[string]string{"Authorization": Token(Linear), "Content-Type": "application/json"}
	type check struct {
		path string // dot path in the answer
		want any    // its value; "*" any non-null value
	}
	tests := []struct {
		name, method, url string
		hdr               map[string]string
		body              string
		status            int
		checks            []check
		header            [2]string // a header and a fragment of its value
	}{
		{name: "github viewer", method: "GET", url: "https://api.github.com/user", hdr: gh, status: 200,
			checks: []check{{"login", GitHubViewer}, {"user_view_type", "private"}, {"plan.name", "pro"}}},
		{name: "github repos default page", method: "GET", url: "https://api.github.com/user/repos", hdr: gh, status: 200,
			checks: []check{{"29.full_name", "*"}, {"30", nil}}, header: [2]string{"Link", `page=9&per_page=30>; rel="last"`}},
		{name: "github repos per_page capped at 100", method: "GET", url: "https://api.github.com/user/repos?per_page=1000&page=3", hdr: gh, status: 200,
			checks: []check{{"49.owner.login", "*"}, {"50", nil}}, header: [2]string{"Link", `rel="first"`}},
		{name: "github repos pushed first are the Pages sites", method: "GET", url: "https://api.github.com/user/repos?sort=pushed&per_page=5", hdr: gh, status: 200,
			checks: []check{{"0.has_pages", true}, {"4.has_pages", true}, {"0.full_name", "pinned-tester/pinned-tester.github.io"}}},
		{name: "github private repos only", method: "GET", url: "https://api.github.com/user/repos?visibility=private&per_page=100&sort=full_name", hdr: gh, status: 200,
			checks: []check{{"0.private", true}, {"0.visibility", "private"}}},
		{name: "github repo case-insensitive", method: "GET", url: "https://api.github.com/repos/PINNED-TESTER/Notes", hdr: gh, status: 200,
			checks: []check{{"full_name", "pinned-tester/notes"}, {"allow_squash_merge", true}, {"owner.login", GitHubViewer}, {"license", nil}}},
		{name: "github repo missing", method: "GET", url: "https://api.github.com/repos/pinned-tester/missing", hdr: gh, status: 404,
			checks: []check{{"message", "Not Found"}, {"documentation_url", "https://docs.github.com/rest/repos/repos#get-a-repository"}}},
		{name: "github pages", method: "GET", url: "https://api.github.com/repos/pinned-tester/hello-world/pages", hdr: gh, status: 200,
			checks: []check{{"cname", "docs.hello-fake.io"}, {"status", "built"}}},
		{name: "github no pages", method: "GET", url: "https://api.github.com/repos/pinned-tester/silver-falcon/pages", hdr: gh, status: 404, checks: []check{{"message", "Not Found"}}},
		{name: "github issues newest first", method: "GET", url: "https://api.github.com/repos/pinned-tester/notes/issues?state=all&per_page=2", hdr: gh, status: 200,
			checks: []check{{"0.number", 11.0}, {"1.number", 10.0}, {"0.user.login", "*"}, {"0.reactions.total_count", 0.0}}},
		{name: "github issue validation", method: "POST", url: "https://api.github.com/repos/pinned-tester/notes/issues", hdr: json(gh), body: `{"body":"no title"}`, status: 422,
			checks: []check{{"message", "Validation Failed"}, {"errors.0.field", "title"}}},
		{name: "github issue body must be JSON", method: "POST", url: "https://api.github.com/repos/pinned-tester/notes/issues", hdr: json(gh), body: `{not json`, status: 400},
		{name: "github unknown API version", method: "GET", url: "https://api.github.com/user", hdr: map[string]string{"Authorization": "Bearer " + Token(GitHub), "X-GitHub-Api-Version": "1999-01-01"}, status: 400,
			checks: []check{{"documentation_url", "https://docs.github.com/rest/about-the-rest-api/api-versions"}}},
		{name: "dnsimple whoami", method: "GET", url: "https://api.dnsimple.com/v2/whoami", hdr: dns, status: 200,
			checks: []check{{"data.account.id", float64(DNSimpleAccountID)}, {"data.user.email", "*"}}},
		{name: "dnsimple domains paged by count", method: "GET", url: "https://api.dnsimple.com/v2/1385/domains?per_page=7&page=2", hdr: dns, status: 200,
			checks: []check{{"pagination.current_page", 2.0}, {"pagination.total_pages", 5.0}, {"pagination.total_entries", 30.0}, {"data.6.name", "*"}}},
		{name: "dnsimple per_page out of range", method: "GET", url: "https://api.dnsimple.com/v2/1385/domains?per_page=101", hdr: dns, status: 400, checks: []check{{"message", "*"}}},
		{name: "dnsimple other account", method: "GET", url: "https://api.dnsimple.com/v2/9999/domains", hdr: dns, status: 404, checks: []check{{"message", "Account `9999` not found"}}},
		{name: "dnsimple records filtered", method: "GET", url: "https://api.dnsimple.com/v2/1385/zones/hello-fake.io/records?type=cname&name=docs", hdr: dns, status: 200,
			checks: []check{{"data.0.content", GitHubViewer + ".github.io"}, {"data.1", nil}}},
		{name: "dnsimple zone missing", method: "GET", url: "https://api.dnsimple.com/v2/1385/zones/no-such-zone.com/records", hdr: dns, status: 404, checks: []check{{"message", "Zone `no-such-zone.com` not found"}}},
		{name: "dnsimple short name taken", method: "GET", url: "https://api.dnsimple.com/v2/1385/registrar/domains/abc.com/check", hdr: dns, status: 200,
			checks: []check{{"data.available", false}}},
		{name: "dnsimple four letters premium", method: "GET", url: "https://api.dnsimple.com/v2/1385/registrar/domains/abcd.io/check", hdr: dns, status: 200,
			checks: []check{{"data.available", true}, {"data.premium", true}}},
		{name: "dnsimple own domain taken", method: "GET", url: "https://api.dnsimple.com/v2/1385/registrar/domains/HELLO-fake.io/check", hdr: dns, status: 200,
			checks: []check{{"data.available", false}}},
		{name: "dnsimple registrant invalid", method: "POST", url: "https://api.dnsimple.com/v2/1385/registrar/domains/pinned-four.com/registrations", hdr: json(dns), body: `{"registrant_id":1}`, status: 400,
			checks: []check{{"message", "Validation failed"}, {"errors.registrant_id.0", "is invalid"}}},
		{name: "dnsimple premium without price", method: "POST", url: "https://api.dnsimple.com/v2/1385/registrar/domains/abcd.io/registrations", hdr: json(dns), body: `{"registrant_id":2715}`, status: 400, checks: []check{{"message", "*"}}},
		{name: "stripe customers newest first", method: "GET", url: "https://api.stripe.com/v1/customers?limit=3", hdr: st, status: 200,
			checks: []check{{"object", "list"}, {"has_more", true}, {"url", "/v1/customers"}, {"data.2.object", "customer"}}},
		{name: "stripe limit out of range", method: "GET", url: "https://api.stripe.com/v1/customers?limit=0", hdr: st, status: 400,
			checks: []check{{"error.code", "parameter_invalid_integer"}, {"error.param", "limit"}}},
		{name: "stripe unknown cursor", method: "GET", url: "https://api.stripe.com/v1/charges?starting_after=ch_doesnotexist", hdr: st, status: 400,
			checks: []check{{"error.message", "No such charge: 'ch_doesnotexist'"}, {"error.type", "invalid_request_error"}}},
		{name: "stripe invalid email", method: "POST", url: "https://api.stripe.com/v1/customers", hdr: form, body: "email=nope", status: 400, checks: []check{{"error.code", "email_invalid"}}},
		{name: "stripe form body required", method: "POST", url: "https://api.stripe.com/v1/customers", hdr: json(st), body: `{"email":"a@example.com"}`, status: 400},
		{name: "hubspot contacts paged by next id", method: "GET", url: "https://api.hubapi.com/crm/v3/objects/contacts?limit=2", hdr: hs, status: 200,
			checks: []check{{"results.1.properties.email", "*"}, {"paging.next.after", "*"}}},
		{name: "hubspot contact missing", method: "GET", url: "https://api.hubapi.com/crm/v3/objects/contacts/99999999", hdr: hs, status: 404,
			checks: []check{{"message", "Object not found.  objectId are usually numeric."}, {"category", "OBJECT_NOT_FOUND"}}},
		{name: "linear teams", method: "POST", url: "https://api.linear.app/graphql", hdr: lin, body: `{"query":` + quote(t, Linear, "list_teams") + `,"variables":{"first":2}}`, status: 200,
			checks: []check{{"data.teams.nodes.0.key", "ENG"}, {"data.teams.nodes.2", nil}}},
		{name: "linear issue by identifier", method: "POST", url: "https://api.linear.app/graphql", hdr: lin, body: `{"query":` + quote(t, Linear, "get_issue") + `,"variables":{"id":"eng-1"}}`, status: 200,
			checks: []check{{"data.issue.identifier", "ENG-1"}, {"data.issue.team.key", "ENG"}, {"data.issue.url", "*"}}},
		{name: "linear missing issue", method: "POST", url: "https://api.linear.app/graphql", hdr: lin, body: `{"query":` + quote(t, Linear, "get_issue") + `,"variables":{"id":"ENG-99999"}}`, status: 200,
			checks: []check{{"data", nil}, {"errors.0.message", "Entity not found: Issue"}}},
		{name: "linear unknown query text", method: "POST", url: "https://api.linear.app/graphql", hdr: lin, body: `{"query":"{ viewer { id } }"}`, status: 400,
			checks: []check{{"errors.0.extensions.code", "GRAPHQL_VALIDATION_FAILED"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, h, b := do(t, s, tt.method, tt.url, tt.hdr, tt.body)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %.400s", status, tt.status, b)
			}
			if tt.header[0] != "" && !strings.Contains(h.Get(tt.header[0]), tt.header[1]) {
				t.Errorf("%s: %q, want it to hold %q", tt.header[0], h.Get(tt.header[0]), tt.header[1])
			}
			v := decode(t, b)
			for _, c := range tt.checks {
				got := field(v, c.path)
				if c.want == "*" && got == nil || c.want != "*" && fmt.Sprint(got) != fmt.Sprint(c.want) {
					t.Errorf("%s = %v, want %v in %.400s", c.path, got, c.want, b)
				}
			}
		})
	}
}

// TestWritesShowInLaterReads: an issue, a registered domain, a customer,
// a contact and a Linear issue created at the fake are listed or found
// afterwards; a contact's email is unique.
func TestWritesShowInLaterReads(t *testing.T) {
	s := newServer(t)
	gh := map[string]string{"Authorization": "Bearer " + Token(GitHub), "Content-Type": "application/json"}
	st, h, b := do(t, s, "POST", "https://api.github.com/repos/pinned-tester/notes/issues", gh, `{"title":"Fake bug","body":"It broke."}`)
	if st != 201 || field(decode(t, b), "number") != 12.0 || field(decode(t, b), "state") != "open" || !strings.HasSuffix(h.Get("Location"), "/issues/12") {
		t.Fatalf("create issue: %d %v %.300s", st, h.Get("Location"), b)
	}
	do(t, s, "POST", "https://api.github.com/repos/pinned-tester/notes/issues", gh, `{"title":"Second"}`)
	_, _, b = do(t, s, "GET", "https://api.github.com/repos/pinned-tester/notes/issues?per_page=2", bearer(Token(GitHub)), "")
	if v := decode(t, b); field(v, "0.title") != "Second" || field(v, "1.title") != "Fake bug" || field(v, "1.body") != "It broke." {
		t.Errorf("created issues not listed first: %.400s", b)
	}

	dns := map[string]string{"Authorization": "Bearer " + Token(DNSimple), "Content-Type": "application/json"}
	st, _, b = do(t, s, "POST", "https://api.dnsimple.com/v2/1385/registrar/domains/pinned-example-shop.com/registrations", dns, `{"registrant_id":2715,"whois_privacy":true,"auto_renew":false}`)
	if v := decode(t, b); st != 201 || field(v, "data.state") != "new" || field(v, "data.whois_privacy") != true || field(v, "data.period") != 1.0 {
		t.Fatalf("register: %d %s", st, b)
	}
	_, _, b = do(t, s, "GET", "https://api.dnsimple.com/v2/1385/registrar/domains/pinned-example-shop.com/check", bearer(Token(DNSimple)), "")
	if field(decode(t, b), "data.available") != false {
		t.Errorf("registered domain still available: %s", b)
	}
	_, _, b = do(t, s, "GET", "https://api.dnsimple.com/v2/1385/domains?name_like=pinned-example", bearer(Token(DNSimple)), "")
	if d, _ := field(decode(t, b), "data").([]any); len(d) != 1 {
		t.Errorf("registered domain not listed: %s", b)
	}

	form := map[string]string{"Authorization": "Bearer " + Token(Stripe), "Content-Type": "application/x-www-form-urlencoded"}
	_, _, b = do(t, s, "POST", "https://api.stripe.com/v1/customers", form, "email=new%40example.com&name=New+One")
	id, _ := field(decode(t, b), "id").(string)
	_, _, b = do(t, s, "GET", "https://api.stripe.com/v1/customers?limit=1", bearer(Token(Stripe)), "")
	if field(decode(t, b), "data.0.id") != id || !strings.HasPrefix(id, "cus_") {
		t.Errorf("new customer %q not listed first: %.300s", id, b)
	}

	hs := map[string]string{"Authorization": "Bearer " + Token(HubSpot), "Content-Type": "application/json"}
	st, _, b = do(t, s, "POST", "https://api.hubapi.com/crm/v3/objects/contacts", hs, `{"properties":{"email":"new.person@example.org","firstname":"New"}}`)
	cid, _ := field(decode(t, b), "id").(string)
	if st != 201 || cid == "" {
		t.Fatalf("create contact: %d %s", st, b)
	}
	if st, _, b := do(t, s, "GET", "https://api.hubapi.com/crm/v3/objects/contacts/"+cid, bearer(Token(HubSpot)), ""); st != 200 || field(decode(t, b), "properties.firstname") != "New" {
		t.Errorf("new contact: %d %s", st, b)
	}
	st, _, b = do(t, s, "POST", "https://api.hubapi.com/crm/v3/objects/contacts", hs, `{"properties":{"email":"NEW.person@example.org"}}`)
	if st != 409 || field(decode(t, b), "message") != "Contact already exists. Existing ID: "+cid {
		t.Errorf("duplicate contact: %d %s", st, b)
	}

	lin := map[string]string{"Authorization": Token(Linear), "Content-Type": "application/json"}
	_, _, b = do(t, s, "POST", "https://api.linear.app/graphql", lin, `{"query":`+quote(t, Linear, "list_teams")+`,"variables":{"first":1}}`)
	team, _ := field(decode(t, b), "data.teams.nodes.0.id").(string)
	st, _, b = do(t, s, "POST", "https://api.linear.app/graphql", lin, `{"query":`+quote(t, Linear, "create_issue")+`,"variables":{"teamId":"`+team+`","title":"From the fake test"}}`)
	ident, _ := field(decode(t, b), "data.issueCreate.issue.identifier").(string)
	if st != 200 || field(decode(t, b), "data.issueCreate.success") != true || !strings.HasPrefix(ident, "ENG-") {
		t.Fatalf("create linear issue: %d %s", st, b)
	}
	_, _, b = do(t, s, "POST", "https://api.linear.app/graphql", lin, `{"query":`+quote(t, Linear, "get_issue")+`,"variables":{"id":"`+ident+`"}}`)
	if field(decode(t, b), "data.issue.title") != "From the fake test" {
		t.Errorf("new linear issue: %s", b)
	}
	// Another server starts from the fixtures again.
	other := newServer(t)
	if _, _, b := do(t, other, "GET", "https://api.github.com/repos/pinned-tester/notes/issues?per_page=1", bearer(Token(GitHub)), ""); field(decode(t, b), "0.number") != 11.0 {
		t.Errorf("a second server sees the first one's writes: %.200s", b)
	}
}

func TestRecorderAndReset(t *testing.T) {
	s := newServer(t)
	before := time.Now()
	do(t, s, "POST", "https://api.github.com/repos/pinned-tester/notes/issues?x=%2F1", map[string]string{
		"Authorization": "Bearer " + Token(GitHub), "Content-Type": "application/json", "X-Test": "yes",
	}, `{"title":"t"}`)
	do(t, s, "GET", "https://api.stripe.com/v1/customers?limit=3", bearer(Token(Stripe)), "")
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	r := reqs[0]
	if r.Host != "api.github.com" || r.Method != "POST" || r.Path != "/repos/pinned-tester/notes/issues" ||
		r.RawQuery != "x=%2F1" || string(r.Body) != `{"title":"t"}` || r.Header.Get("X-Test") != "yes" ||
		r.Header.Get("Authorization") != "Bearer "+Token(GitHub) || r.Time.Before(before) {
		t.Errorf("recorded %+v", r)
	}
	if reqs[1].Host != "api.stripe.com" || reqs[1].RawQuery != "limit=3" || len(reqs[1].Body) != 0 {
		t.Errorf("recorded %+v", reqs[1])
	}
	// The copy is independent.
	reqs[0].Header.Set("X-Test", "changed")
	reqs[0].Body[0] = 'X'
	if r := s.Requests()[0]; r.Header.Get("X-Test") != "yes" || r.Body[0] != '{' {
		t.Error("Requests returned shared state")
	}
	// Escaped paths are kept as sent.
	do(t, s, "GET", "https://api.github.com/repos/a%2Fb/c", bearer(Token(GitHub)), "")
	if p := s.Requests()[2].Path; p != "/repos/a%2Fb/c" {
		t.Errorf("escaped path recorded as %q", p)
	}
	s.Reset()
	if n := len(s.Requests()); n != 0 {
		t.Errorf("%d requests after Reset", n)
	}
}

func TestSetHandler(t *testing.T) {
	s := newServer(t)
	var seenBody string
	s.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
		b, _ := io.ReadAll(r.Body)
		seenBody = string(b)
		switch r.URL.Path {
		case "/user":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		case "/redirect":
			http.Redirect(w, r, "https://evil.example/", http.StatusFound)
			return true
		}
		return false
	})
	st, h, _ := do(t, s, "GET", "https://api.github.com/user", bearer(Token(GitHub)), "")
	if st != 429 || h.Get("Retry-After") != "7" {
		t.Errorf("hooked: %d %v", st, h)
	}
	st, h, _ = do(t, s, "POST", "https://api.github.com/redirect", bearer(Token(GitHub)), "payload")
	if st != 302 || h.Get("Location") != "https://evil.example/" || seenBody != "payload" {
		t.Errorf("redirect: %d %v body %q", st, h, seenBody)
	}
	// Not handled: falls through to the fake.
	if st, _, _ := do(t, s, "GET", "https://api.stripe.com/v1/balance", bearer(Token(Stripe)), ""); st != 200 {
		t.Errorf("fall-through: %d", st)
	}
	if n := len(s.Requests()); n != 3 {
		t.Errorf("%d requests recorded, want 3 (hooked ones too)", n)
	}
	s.SetHandler(nil)
	if st, _, _ := do(t, s, "GET", "https://api.github.com/user", bearer(Token(GitHub)), ""); st != 200 {
		t.Errorf("after SetHandler(nil): %d", st)
	}
}

func TestConcurrentReadsAndWrites(t *testing.T) {
	s := newServer(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 5 {
				switch (i + j) % 5 {
				case 0:
					do(t, s, "POST", "https://api.github.com/repos/pinned-tester/notes/issues", bearer(Token(GitHub)), fmt.Sprintf(`{"title":"c%d-%d"}`, i, j))
				case 1:
					do(t, s, "GET", "https://api.github.com/user/repos?per_page=10", bearer(Token(GitHub)), "")
				case 2:
					do(t, s, "POST", "https://api.stripe.com/v1/customers", map[string]string{"Authorization": "Bearer " + Token(Stripe), "Content-Type": "application/x-www-form-urlencoded"}, "email=c@example.com")
				case 3:
					do(t, s, "GET", "https://api.stripe.com/v1/customers?limit=5", bearer(Token(Stripe)), "")
				case 4:
					do(t, s, "POST", "https://api.linear.app/graphql", map[string]string{"Authorization": Token(Linear), "Content-Type": "application/json"}, `{"query":`+quote(t, Linear, "list_issues")+`,"variables":{"first":5}}`)
				}
				s.Requests()
			}
		})
	}
	wg.Wait()
	_, _, b := do(t, s, "GET", "https://api.github.com/repos/pinned-tester/notes/issues?per_page=100", bearer(Token(GitHub)), "")
	n := strings.Count(string(b), `"title":"c`)
	if n != 8 {
		t.Errorf("%d concurrent issues listed, want 8", n)
	}
}

// TestRecorderBound: past maxRecorded requests the oldest are dropped, the
// newest kept in order, and the recorder never holds more than the bound.
func TestRecorderBound(t *testing.T) {
	s := &Server{}
	const total = 2*maxRecorded + 123
	for i := 0; i < total; i++ {
		s.record(Request{Path: "/" + strconv.Itoa(i)})
		if len(s.reqs) > maxRecorded {
			t.Fatalf("after %d requests the recorder holds %d (bound %d)", i+1, len(s.reqs), maxRecorded)
		}
	}
	got := s.Requests()
	if len(got) < maxRecorded/2 {
		t.Fatalf("kept %d requests, want at least %d", len(got), maxRecorded/2)
	}
	for i, r := range got {
		if want := "/" + strconv.Itoa(total-len(got)+i); r.Path != want {
			t.Fatalf("request %d is %s, want %s (the newest, in order)", i, r.Path, want)
		}
	}
}
