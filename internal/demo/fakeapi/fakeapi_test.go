package fakeapi

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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
func dig(v any, path string) any {
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
	if got := s.Hosts(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Hosts = %v", got)
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
	lq := `{"query":"query { viewer { id } }"}`
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
			if m, _ := dig(decode(t, b), c.msg).(string); m == "" {
				t.Errorf("no %s in %.300s", c.msg, b)
			}
		})
	}
	// Exact envelopes of the 401s.
	_, _, b := do(t, s, "GET", "https://api.github.com/user", bearer("nope"), "")
	if v := decode(t, b); dig(v, "message") != "Bad credentials" || dig(v, "documentation_url") == nil {
		t.Errorf("github 401 envelope: %s", b)
	}
	_, _, b = do(t, s, "GET", "https://api.stripe.com/v1/balance", bearer("nope"), "")
	if v := decode(t, b); dig(v, "error.type") != "invalid_request_error" {
		t.Errorf("stripe 401 envelope: %s", b)
	}
	_, _, b = do(t, s, "GET", "https://api.hubapi.com/account-info/v3/details", nil, "")
	if v := decode(t, b); dig(v, "status") != "error" || dig(v, "category") != "INVALID_AUTHENTICATION" {
		t.Errorf("hubspot 401 envelope: %s", b)
	}
	_, _, b = do(t, s, "POST", "https://api.linear.app/graphql", map[string]string{"Content-Type": "application/json"}, lq)
	if v := decode(t, b); dig(v, "errors.0.extensions.code") != "AUTHENTICATION_ERROR" {
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
	} {
		st, _, b := do(t, s, "GET", c.url, map[string]string{"Authorization": c.auth}, "")
		if st != 404 {
			t.Errorf("%s: %d", c.url, st)
		}
		if dig(decode(t, b), c.path) == nil {
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

func TestGitHubReposPage(t *testing.T) {
	s := newServer(t)
	st, h, b := do(t, s, "GET", "https://api.github.com/user/repos?per_page=100&page=1", bearer(Token(GitHub)), "")
	if st != 200 {
		t.Fatalf("status %d", st)
	}
	t.Logf("GET /user/repos?per_page=100: %d bytes raw", len(b))
	if len(b) < 500_000 || len(b) > 600_000 {
		t.Errorf("100-repo page is %d bytes, want 500–600 KB", len(b))
	}
	var repos []map[string]any
	if err := json.Unmarshal(b, &repos); err != nil {
		t.Fatal(err)
	}
	if len(repos) != 100 {
		t.Fatalf("%d repos", len(repos))
	}
	for _, k := range []string{"id", "node_id", "name", "full_name", "private", "owner", "html_url", "description",
		"fork", "url", "hooks_url", "created_at", "updated_at", "pushed_at", "git_url", "ssh_url", "clone_url",
		"svn_url", "homepage", "size", "stargazers_count", "watchers_count", "language", "has_issues",
		"forks_count", "archived", "disabled", "open_issues_count", "license", "topics", "visibility", "forks",
		"open_issues", "watchers", "default_branch", "permissions"} {
		if _, ok := repos[0][k]; !ok {
			t.Errorf("repo lacks %q", k)
		}
	}
	if l := dig(repos[0], "owner.login"); l == nil {
		t.Error("owner.login missing")
	}
	if !strings.Contains(h.Get("Link"), `rel="next"`) || !strings.Contains(h.Get("Link"), "page=3") {
		t.Errorf("Link: %s", h.Get("Link"))
	}
	_, _, b = do(t, s, "GET", "https://api.github.com/user/repos?per_page=100&page=3", bearer(Token(GitHub)), "")
	if err := json.Unmarshal(b, &repos); err != nil || len(repos) != GitHubRepoCount-200 {
		t.Errorf("page 3: %d repos, %v", len(repos), err)
	}
	_, _, b = do(t, s, "GET", "https://api.github.com/user/repos?per_page=1000", bearer(Token(GitHub)), "")
	if err := json.Unmarshal(b, &repos); err != nil || len(repos) != 100 {
		t.Errorf("per_page=1000: %d repos, %v", len(repos), err)
	}
	_, _, b = do(t, s, "GET", "https://api.github.com/user/repos", bearer(Token(GitHub)), "")
	if err := json.Unmarshal(b, &repos); err != nil || len(repos) != 30 {
		t.Errorf("default page: %d repos, %v", len(repos), err)
	}
	_, _, b = do(t, s, "GET", "https://api.github.com/user/repos?visibility=private&per_page=100", bearer(Token(GitHub)), "")
	if err := json.Unmarshal(b, &repos); err != nil {
		t.Fatal(err)
	}
	for _, r := range repos {
		if r["private"] != true {
			t.Fatalf("visibility=private returned a public repo")
		}
	}
	// Deterministic: a second server serves the same bytes.
	s2 := newServer(t)
	_, _, b1 := do(t, s, "GET", "https://api.github.com/user/repos?per_page=5", bearer(Token(GitHub)), "")
	_, _, b2 := do(t, s2, "GET", "https://api.github.com/user/repos?per_page=5", bearer(Token(GitHub)), "")
	if !bytes.Equal(b1, b2) {
		t.Error("repository data differs between servers")
	}
}

func TestGitHubRepoAndIssues(t *testing.T) {
	s := newServer(t)
	tok := bearer(Token(GitHub))
	st, _, b := do(t, s, "GET", "https://api.github.com/repos/pinned-tester/notes", tok, "")
	if st != 200 || dig(decode(t, b), "full_name") != "pinned-tester/notes" || dig(decode(t, b), "allow_squash_merge") == nil {
		t.Fatalf("get_repo: %d %.300s", st, b)
	}
	if st, _, _ := do(t, s, "GET", "https://api.github.com/repos/PINNED-TESTER/Notes", tok, ""); st != 200 {
		t.Errorf("case-insensitive lookup: %d", st)
	}
	st, _, b = do(t, s, "GET", "https://api.github.com/repos/pinned-tester/missing", tok, "")
	if st != 404 || dig(decode(t, b), "message") != "Not Found" {
		t.Errorf("missing repo: %d %s", st, b)
	}
	st, _, b = do(t, s, "GET", "https://api.github.com/repos/pinned-tester/notes/issues?state=all&per_page=100", tok, "")
	if st != 200 {
		t.Fatal(st)
	}
	var all []map[string]any
	if err := json.Unmarshal(b, &all); err != nil || len(all) == 0 {
		t.Fatalf("issues: %v %d", err, len(all))
	}
	sawPR := false
	for _, is := range all {
		if is["pull_request"] != nil {
			sawPR = true
		}
		for _, k := range []string{"number", "title", "user", "labels", "state", "html_url", "node_id", "reactions"} {
			if _, ok := is[k]; !ok {
				t.Fatalf("issue lacks %q", k)
			}
		}
	}
	if !sawPR {
		t.Log("no pull request among the issues of this repo")
	}
	// Create, then see it first in the open list.
	st, h, b := do(t, s, "POST", "https://api.github.com/repos/pinned-tester/notes/issues", tok, `{"title":"Fake bug","body":"It broke."}`)
	if st != 201 {
		t.Fatalf("create: %d %s", st, b)
	}
	created := decode(t, b)
	num := dig(created, "number").(float64)
	if int(num) != len(all)+1 || dig(created, "title") != "Fake bug" || dig(created, "state") != "open" || h.Get("Location") == "" {
		t.Errorf("created issue: number %v (had %d), %s", num, len(all), b)
	}
	_, _, b = do(t, s, "POST", "https://api.github.com/repos/pinned-tester/notes/issues", tok, `{"title":"Second"}`)
	if n := dig(decode(t, b), "number").(float64); n != num+1 {
		t.Errorf("second number %v", n)
	}
	_, _, b = do(t, s, "GET", "https://api.github.com/repos/pinned-tester/notes/issues?per_page=2", tok, "")
	if v := decode(t, b); dig(v, "0.title") != "Second" || dig(v, "1.title") != "Fake bug" {
		t.Errorf("created issues not listed first: %.400s", b)
	}
	st, _, b = do(t, s, "POST", "https://api.github.com/repos/pinned-tester/notes/issues", tok, `{"body":"no title"}`)
	if st != 422 || dig(decode(t, b), "errors.0.field") != "title" {
		t.Errorf("missing title: %d %s", st, b)
	}
	st, _, _ = do(t, s, "POST", "https://api.github.com/repos/pinned-tester/notes/issues", tok, `{not json`)
	if st != 400 {
		t.Errorf("bad JSON: %d", st)
	}
	st, _, _ = do(t, s, "GET", "https://api.github.com/user", map[string]string{"Authorization": "Bearer " + Token(GitHub), "X-GitHub-Api-Version": "1999-01-01"}, "")
	if st != 400 {
		t.Errorf("bad API version: %d", st)
	}
}

func TestDNSimple(t *testing.T) {
	s := newServer(t)
	tok := bearer(Token(DNSimple))
	_, _, b := do(t, s, "GET", "https://api.dnsimple.com/v2/whoami", tok, "")
	v := decode(t, b)
	if dig(v, "data.account.id") != float64(DNSimpleAccountID) || dig(v, "data.user") != nil {
		t.Errorf("whoami: %s", b)
	}
	st, _, b := do(t, s, "GET", "https://api.dnsimple.com/v2/1385/domains?per_page=100", tok, "")
	v = decode(t, b)
	domains, _ := dig(v, "data").([]any)
	if st != 200 || len(domains) != 30 || dig(v, "pagination.total_entries") != float64(30) {
		t.Fatalf("domains: %d %.300s", st, b)
	}
	t.Logf("GET /v2/1385/domains?per_page=100: %d bytes raw", len(b))
	zone := dig(v, "data.0.name").(string)
	st, _, b = do(t, s, "GET", "https://api.dnsimple.com/v2/1385/zones/"+zone+"/records?per_page=100", tok, "")
	v = decode(t, b)
	if st != 200 || dig(v, "data.0.type") != "SOA" || dig(v, "pagination.current_page") != float64(1) {
		t.Errorf("records: %d %.300s", st, b)
	}
	t.Logf("GET /v2/1385/zones/%s/records?per_page=100: %d bytes raw", zone, len(b))
	_, _, b = do(t, s, "GET", "https://api.dnsimple.com/v2/1385/zones/"+zone+"/records?type=MX", tok, "")
	if recs := dig(decode(t, b), "data").([]any); len(recs) != 2 {
		t.Errorf("MX filter: %d records", len(recs))
	}
	if st, _, _ := do(t, s, "GET", "https://api.dnsimple.com/v2/9999/domains", tok, ""); st != 404 {
		t.Errorf("other account: %d", st)
	}
	check := func(d string) (bool, bool) {
		_, _, b := do(t, s, "GET", "https://api.dnsimple.com/v2/1385/registrar/domains/"+d+"/check", tok, "")
		v := decode(t, b)
		return dig(v, "data.available") == true, dig(v, "data.premium") == true
	}
	if a, p := check("pinned-example-shop.com"); !a || p {
		t.Errorf("long name: available %v premium %v", a, p)
	}
	if a, _ := check("abc.com"); a {
		t.Error("short name available")
	}
	if a, p := check("abcd.io"); !a || !p {
		t.Error("4-letter name not premium")
	}
	if a, _ := check(zone); a {
		t.Error("own domain available")
	}
	jh := map[string]string{"Authorization": "Bearer " + Token(DNSimple), "Content-Type": "application/json"}
	st, _, b = do(t, s, "POST", "https://api.dnsimple.com/v2/1385/registrar/domains/pinned-example-shop.com/registrations", jh,
		`{"registrant_id":2715,"whois_privacy":true,"auto_renew":false}`)
	v = decode(t, b)
	if st != 201 || dig(v, "data.state") != "new" || dig(v, "data.whois_privacy") != true || dig(v, "data.period") != float64(1) {
		t.Fatalf("register: %d %s", st, b)
	}
	if a, _ := check("pinned-example-shop.com"); a {
		t.Error("registered domain still available")
	}
	_, _, b = do(t, s, "GET", "https://api.dnsimple.com/v2/1385/domains?name_like=pinned-example", tok, "")
	if d := dig(decode(t, b), "data").([]any); len(d) != 1 {
		t.Errorf("registered domain not listed: %s", b)
	}
	st, _, b = do(t, s, "POST", "https://api.dnsimple.com/v2/1385/registrar/domains/other-example-shop.com/registrations", jh, `{}`)
	if st != 400 || dig(decode(t, b), "errors.registrant_id") == nil {
		t.Errorf("missing registrant: %d %s", st, b)
	}
	st, _, _ = do(t, s, "POST", "https://api.dnsimple.com/v2/1385/registrar/domains/abcd.io/registrations", jh, `{"registrant_id":2715}`)
	if st != 400 {
		t.Errorf("premium without price: %d", st)
	}
}

func TestStripe(t *testing.T) {
	s := newServer(t)
	tok := bearer(Token(Stripe))
	st, _, b := do(t, s, "GET", "https://api.stripe.com/v1/customers?limit=100", tok, "")
	v := decode(t, b)
	data, _ := dig(v, "data").([]any)
	if st != 200 || dig(v, "object") != "list" || len(data) != 100 || dig(v, "has_more") != true || dig(v, "url") != "/v1/customers" {
		t.Fatalf("customers: %d %.300s", st, b)
	}
	t.Logf("GET /v1/customers?limit=100: %d bytes raw", len(b))
	last := dig(v, "data.99.id").(string)
	_, _, b = do(t, s, "GET", "https://api.stripe.com/v1/customers?limit=100&starting_after="+last, tok, "")
	v = decode(t, b)
	if d := dig(v, "data").([]any); len(d) != 20 || dig(v, "has_more") != false {
		t.Errorf("second page: %d, has_more %v", len(d), dig(v, "has_more"))
	}
	st, _, _ = do(t, s, "GET", "https://api.stripe.com/v1/customers?limit=101", tok, "")
	if st != 400 {
		t.Errorf("limit=101: %d", st)
	}
	st, _, b = do(t, s, "GET", "https://api.stripe.com/v1/customers?starting_after=cus_nope", tok, "")
	if st != 400 || dig(decode(t, b), "error.code") != "resource_missing" {
		t.Errorf("bad cursor: %d %s", st, b)
	}
	st, _, b = do(t, s, "GET", "https://api.stripe.com/v1/charges?limit=100", tok, "")
	if st != 200 || dig(decode(t, b), "data.0.object") != "charge" {
		t.Errorf("charges: %d", st)
	}
	t.Logf("GET /v1/charges?limit=100: %d bytes raw", len(b))
	cust := dig(decode(t, b), "data.0.customer").(string)
	_, _, b = do(t, s, "GET", "https://api.stripe.com/v1/charges?limit=100&customer="+cust, tok, "")
	for _, ch := range dig(decode(t, b), "data").([]any) {
		if dig(ch, "customer") != cust {
			t.Fatal("customer filter not applied")
		}
	}
	_, _, b = do(t, s, "GET", "https://api.stripe.com/v1/balance", tok, "")
	if dig(decode(t, b), "available.0.currency") != "usd" {
		t.Errorf("balance: %s", b)
	}
	_, _, b = do(t, s, "GET", "https://api.stripe.com/v1/account", tok, "")
	if dig(decode(t, b), "id") != StripeAccountID {
		t.Errorf("account: %.200s", b)
	}
	form := map[string]string{"Authorization": "Bearer " + Token(Stripe), "Content-Type": "application/x-www-form-urlencoded"}
	st, _, b = do(t, s, "POST", "https://api.stripe.com/v1/customers", form, url.Values{"email": {"new@example.com"}, "name": {"New Person"}, "description": {"from test"}}.Encode())
	v = decode(t, b)
	if st != 200 || dig(v, "email") != "new@example.com" || dig(v, "name") != "New Person" || dig(v, "object") != "customer" {
		t.Fatalf("create: %d %s", st, b)
	}
	id := dig(v, "id").(string)
	_, _, b = do(t, s, "GET", "https://api.stripe.com/v1/customers?limit=1", tok, "")
	if dig(decode(t, b), "data.0.id") != id {
		t.Error("new customer not listed first")
	}
	_, _, b = do(t, s, "GET", "https://api.stripe.com/v1/customers?email=new@example.com", tok, "")
	if d := dig(decode(t, b), "data").([]any); len(d) != 1 {
		t.Errorf("email filter: %d", len(d))
	}
	st, _, b = do(t, s, "POST", "https://api.stripe.com/v1/customers", form, "bogus=1")
	if st != 400 || dig(decode(t, b), "error.param") != "bogus" {
		t.Errorf("unknown param: %d %s", st, b)
	}
	st, _, _ = do(t, s, "POST", "https://api.stripe.com/v1/customers", map[string]string{"Authorization": "Bearer " + Token(Stripe), "Content-Type": "application/json"}, `{"email":"a@b.c"}`)
	if st != 400 {
		t.Errorf("JSON body: %d", st)
	}
}

func TestHubSpot(t *testing.T) {
	s := newServer(t)
	tok := bearer(Token(HubSpot))
	st, _, b := do(t, s, "GET", "https://api.hubapi.com/crm/v3/objects/contacts?limit=100&properties=email,firstname,lastname,company", tok, "")
	v := decode(t, b)
	res, _ := dig(v, "results").([]any)
	if st != 200 || len(res) != 100 {
		t.Fatalf("contacts: %d %.300s", st, b)
	}
	t.Logf("GET /crm/v3/objects/contacts?limit=100&properties=...: %d bytes raw", len(b))
	props := dig(v, "results.0.properties").(map[string]any)
	for _, k := range []string{"email", "firstname", "lastname", "company", "createdate", "hs_object_id", "lastmodifieddate"} {
		if _, ok := props[k]; !ok {
			t.Errorf("contact lacks property %q", k)
		}
	}
	if _, ok := props["jobtitle"]; ok {
		t.Error("unrequested property returned")
	}
	after, _ := dig(v, "paging.next.after").(string)
	if after == "" || !strings.HasPrefix(dig(v, "paging.next.link").(string), "https://api.hubapi.com/crm/v3/objects/contacts?") {
		t.Fatalf("paging: %v", dig(v, "paging"))
	}
	_, _, b = do(t, s, "GET", "https://api.hubapi.com/crm/v3/objects/contacts?limit=100&after="+after, tok, "")
	v = decode(t, b)
	if res := dig(v, "results").([]any); len(res) != 80 || dig(v, "paging") != nil || dig(v, "results.0.id") != after {
		t.Errorf("second page: %d results, paging %v", len(res), dig(v, "paging"))
	}
	// Default properties without ?properties.
	_, _, b = do(t, s, "GET", "https://api.hubapi.com/crm/v3/objects/contacts?limit=1", tok, "")
	if p := dig(decode(t, b), "results.0.properties").(map[string]any); len(p) != 6 {
		t.Errorf("default properties: %v", p)
	}
	id := dig(decode(t, b), "results.0.id").(string)
	st, _, b = do(t, s, "GET", "https://api.hubapi.com/crm/v3/objects/contacts/"+id+"?properties=email,phone", tok, "")
	if st != 200 || dig(decode(t, b), "id") != id {
		t.Errorf("get contact: %d %s", st, b)
	}
	st, _, b = do(t, s, "GET", "https://api.hubapi.com/crm/v3/objects/contacts/1", tok, "")
	if st != 404 || dig(decode(t, b), "category") != "OBJECT_NOT_FOUND" {
		t.Errorf("missing contact: %d %s", st, b)
	}
	st, _, b = do(t, s, "GET", "https://api.hubapi.com/crm/v3/objects/companies?limit=100&properties=name,domain,industry", tok, "")
	if st != 200 || dig(decode(t, b), "results.0.properties.domain") == nil {
		t.Errorf("companies: %d", st)
	}
	t.Logf("GET /crm/v3/objects/companies?limit=100&properties=...: %d bytes raw", len(b))
	jh := map[string]string{"Authorization": "Bearer " + Token(HubSpot), "Content-Type": "application/json"}
	st, _, b = do(t, s, "POST", "https://api.hubapi.com/crm/v3/objects/contacts", jh, `{"properties":{"email":"fresh@example.org","firstname":"Fresh"}}`)
	v = decode(t, b)
	if st != 201 || dig(v, "properties.email") != "fresh@example.org" || dig(v, "properties.firstname") != "Fresh" || dig(v, "archived") != false {
		t.Fatalf("create: %d %s", st, b)
	}
	newID := dig(v, "id").(string)
	if st, _, _ := do(t, s, "GET", "https://api.hubapi.com/crm/v3/objects/contacts/"+newID, tok, ""); st != 200 {
		t.Errorf("created contact not found: %d", st)
	}
	st, _, b = do(t, s, "POST", "https://api.hubapi.com/crm/v3/objects/contacts", jh, `{"properties":{"email":"FRESH@example.org"}}`)
	if st != 409 || dig(decode(t, b), "category") != "CONFLICT" {
		t.Errorf("duplicate: %d %s", st, b)
	}
	st, _, _ = do(t, s, "POST", "https://api.hubapi.com/crm/v3/objects/contacts", jh, `{"properties":{"nope":"x"}}`)
	if st != 400 {
		t.Errorf("unknown property: %d", st)
	}
}

func linearQuery(t *testing.T, s *Server, query string, vars map[string]any) (int, any, []byte) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	st, _, b := do(t, s, "POST", "https://api.linear.app/graphql", map[string]string{"Authorization": Token(Linear), "Content-Type": "application/json"}, string(body))
	return st, decode(t, b), b
}

func TestLinear(t *testing.T) {
	s := newServer(t)
	st, v, b := linearQuery(t, s, "query Viewer { viewer { id name email __typename } }", nil)
	if st != 200 || dig(v, "data.viewer.email") != "pinned-tester@example.org" || dig(v, "data.viewer.__typename") != "User" {
		t.Fatalf("viewer: %d %s", st, b)
	}
	if m := dig(v, "data.viewer").(map[string]any); len(m) != 4 {
		t.Errorf("viewer has extra fields: %v", m)
	}
	_, v, b = linearQuery(t, s, "query Teams($first: Int!) { teams(first: $first) { nodes { id key name } } }", map[string]any{"first": 50})
	teams, _ := dig(v, "data.teams.nodes").([]any)
	if len(teams) != 4 || dig(v, "data.teams.nodes.0.key") != "ENG" {
		t.Fatalf("teams: %s", b)
	}
	teamID := dig(v, "data.teams.nodes.0.id").(string)
	const issuesQ = "query Issues($first: Int!, $team: String) { issues(first: $first, orderBy: updatedAt, filter: { team: { key: { eq: $team } } }) { nodes { id identifier title team { key } state { name } labels { nodes { name } } } pageInfo { hasNextPage endCursor } } }"
	_, v, b = linearQuery(t, s, issuesQ, map[string]any{"first": 100})
	if n := dig(v, "data.issues.nodes").([]any); len(n) != 100 || dig(v, "data.issues.pageInfo.hasNextPage") != true {
		t.Fatalf("issues: %.500s", b)
	}
	t.Logf("Linear issues(first: 100) with the manifest's selection: %d bytes raw", len(b))
	_, v, _ = linearQuery(t, s, issuesQ, map[string]any{"first": 100, "team": "DES"})
	nodes := dig(v, "data.issues.nodes").([]any)
	if len(nodes) == 0 {
		t.Fatal("no DES issues")
	}
	for _, n := range nodes {
		if dig(n, "team.key") != "DES" {
			t.Fatalf("team filter not applied: %v", n)
		}
	}
	ident := dig(nodes[0], "identifier").(string)
	_, v, b = linearQuery(t, s, "query Issue($id: String!) { issue(id: $id) { id identifier title url state { name type } } }", map[string]any{"id": ident})
	if dig(v, "data.issue.identifier") != ident || !strings.HasPrefix(dig(v, "data.issue.url").(string), "https://linear.app/pinned-fake/issue/"+ident) {
		t.Errorf("issue: %s", b)
	}
	st, v, b = linearQuery(t, s, "query Issue($id: String!) { issue(id: $id) { id } }", map[string]any{"id": "ZZZ-999"})
	if st != 200 || dig(v, "data") != nil || dig(v, "errors.0.extensions.code") != "INPUT_ERROR" {
		t.Errorf("missing issue: %d %s", st, b)
	}
	const createQ = "mutation IssueCreate($teamId: String!, $title: String!, $description: String) { issueCreate(input: { teamId: $teamId, title: $title, description: $description }) { success issue { id identifier title url } } }"
	st, v, b = linearQuery(t, s, createQ, map[string]any{"teamId": teamID, "title": "Made by a test"})
	if st != 200 || dig(v, "data.issueCreate.success") != true || dig(v, "data.issueCreate.issue.title") != "Made by a test" {
		t.Fatalf("issueCreate: %d %s", st, b)
	}
	newIdent := dig(v, "data.issueCreate.issue.identifier").(string)
	// Ids are deterministic: the same create on a fresh fake gets the same
	// id, a UUID, as the recorded issues' are.
	newID, _ := dig(v, "data.issueCreate.issue.id").(string)
	_, v2, _ := linearQuery(t, newServer(t), createQ, map[string]any{"teamId": teamID, "title": "Made by a test"})
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(newID) || dig(v2, "data.issueCreate.issue.id") != newID {
		t.Errorf("created issue id %q, on a fresh fake %v: want one UUID", newID, dig(v2, "data.issueCreate.issue.id"))
	}
	_, v, _ = linearQuery(t, s, "query Issue($id: String!) { issue(id: $id) { title description } }", map[string]any{"id": newIdent})
	if dig(v, "data.issue.title") != "Made by a test" || dig(v, "data.issue.description") != nil {
		t.Errorf("created issue: %v", v)
	}
	_, v, _ = linearQuery(t, s, issuesQ, map[string]any{"first": 1, "team": "ENG"})
	if dig(v, "data.issues.nodes.0.identifier") != newIdent {
		t.Errorf("created issue not first by updatedAt: %v", dig(v, "data.issues.nodes.0"))
	}
	// Errors: unknown field, missing variable, bad variable type, unused
	// variable, parse error, unknown team.
	for _, c := range []struct {
		q      string
		vars   map[string]any
		status int
		code   string
	}{
		{"query { viewer { id nope } }", nil, 400, "GRAPHQL_VALIDATION_FAILED"},
		{"query { viewer }", nil, 400, "GRAPHQL_VALIDATION_FAILED"},
		{"query { viewer { id { x } } }", nil, 400, "GRAPHQL_VALIDATION_FAILED"},
		{"query Q($id: String!) { issue(id: $id) { id } }", nil, 400, "BAD_USER_INPUT"},
		{"query Q($first: Int!) { teams(first: $first) { nodes { id } } }", map[string]any{"first": "ten"}, 400, "BAD_USER_INPUT"},
		{"query Q($x: Int) { viewer { id } }", nil, 400, "GRAPHQL_VALIDATION_FAILED"},
		{"query { teams(first: $n) { nodes { id } } }", nil, 400, "GRAPHQL_VALIDATION_FAILED"},
		{"query { viewer { id }", nil, 400, "GRAPHQL_PARSE_FAILED"},
		{"query { ...F } fragment F on Query { viewer { id } }", nil, 400, "GRAPHQL_PARSE_FAILED"},
		{createQ, map[string]any{"teamId": "00000000-0000-4000-8000-000000000000", "title": "x"}, 200, "INPUT_ERROR"},
		{"query { issues(first: 1, filter: { nope: { eq: 1 } }) { nodes { id } } }", nil, 400, "GRAPHQL_VALIDATION_FAILED"},
	} {
		st, v, b := linearQuery(t, s, c.q, c.vars)
		if st != c.status || dig(v, "errors.0.extensions.code") != c.code {
			t.Errorf("%s: %d %s", c.q, st, b)
		}
	}
	// Content type and method.
	st, _, _ = do(t, s, "POST", "https://api.linear.app/graphql", map[string]string{"Authorization": Token(Linear), "Content-Type": "text/plain"}, `{"query":"{ viewer { id } }"}`)
	if st != 400 {
		t.Errorf("text/plain: %d", st)
	}
	st, _, _ = do(t, s, "GET", "https://api.linear.app/graphql", map[string]string{"Authorization": Token(Linear)}, "")
	if st != 405 {
		t.Errorf("GET: %d", st)
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
					linearQuery(t, s, "query { issues(first: 5) { nodes { id } } }", nil)
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
