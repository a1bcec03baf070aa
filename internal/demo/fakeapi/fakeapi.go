// Package fakeapi is a local HTTPS fake of the providers pinned ships
// manifests for, for tests and `pinned demo` only. [New] serves TLS
// (HTTP/1.1 and h2) on loopback with an in-memory CA whose leaf names
// every provider host; a client trusts [Server.CAPool] and dials
// [Server.Addr] whatever host it asks for ([Server.DialContext],
// [Server.Client]), and the Host header picks the provider.
//
// The fake is data: it serves any manifest from its fixtures,
// testdata/<service>/*.json (docs/MANIFEST.md, "Adding a service in an
// afternoon"): the provider (credentials, answer headers, error
// envelope, OAuth side), templates, collections of rows, and per op
// the steps, list and body that answer it (engine.go). No service has
// Go of its own: adding one adds files.
//
// Every request is recorded ([Server.Requests]); [Server.SetHandler] lets
// a test take over any. The OAuth side (oauth.go) serves each provider's
// authorization (auto-approving) and token endpoints; the access tokens
// it issues expire ([Server.SetClock], [Server.SetOAuthLifetime]).
//
// It imports the registry (the manifests it serves) and the standard
// library.
package fakeapi

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/elevenmessenger/pinned/registry"
)

// Service ids of the facts below, equal to manifest ids.
const (
	GitHub   = "github"
	DNSimple = "dnsimple"
	Stripe   = "stripe"
	HubSpot  = "hubspot"
	Linear   = "linear"
)

// API hosts of the services above.
const (
	HostGitHub   = "api.github.com"
	HostDNSimple = "api.dnsimple.com"
	HostStripe   = "api.stripe.com"
	HostHubSpot  = "api.hubapi.com"
	HostLinear   = "api.linear.app"
)

// Facts of the fixtures that tests name (TestFacts holds them to the
// data).
const (
	// GitHubViewer is the login of the fake GitHub user the tokens belong to.
	GitHubViewer = "pinned-tester"
	// GitHubRepoCount is how many repositories /user/repos lists in total.
	GitHubRepoCount = 250
	// DNSimpleAccountID is the id of the fake DNSimple account.
	DNSimpleAccountID = 1385
	// DNSimpleRegistrantID is a contact id that exists in that account.
	DNSimpleRegistrantID = 2715
	// StripeAccountID is the id of the fake Stripe account.
	StripeAccountID = "acct_1FakePinnedDemo0"
	// LinearOrgKey is the URL key of the fake Linear workspace.
	LinearOrgKey = "pinned-fake"
)

// Research data: what "which of my DNSimple domains point at GitHub
// Pages?" needs, with one right answer. Five of the GitHub viewer's
// repositories have a Pages site and are the most recently pushed (four
// with a custom domain, three with instruction-like descriptions); the
// last four DNSimple domains are ResearchDomains, two of whose zones
// point www or docs at <login>.github.io.
var (
	// PagesDomains are the DNSimple domains that point at GitHub Pages,
	// sorted.
	PagesDomains = []string{"hello-fake.io", "pinned-notes.dev"}
	// ResearchDomains are the DNSimple domains of the research data, sorted.
	ResearchDomains = []string{"dotfiles-fake.net", "hello-fake.io", "pinned-notes.dev", "shop-fake.co"}
)

// provider is how a service authenticates and answers besides its ops
// (the "provider" member of its fixtures; testdata/README.md documents
// each member).
type provider struct {
	Service      string `json:"-"`
	Host         string // the API host served, when the manifest's is a pattern
	Token        string
	User         string         // the user part of a two-part credential (auth schemes basic, template)
	OAuthHost    string         `json:"oauth_host"`
	OAuthToken   string         `json:"oauth_token"`
	OAuth        *oauthProvider // the OAuth side (oauth.go)
	Headers      map[string]string
	Unauthorized []string
	NotFound     string `json:"not_found"`
	Error        jsonTemplate
	ErrorVals    map[string]map[string]string `json:"error_vals"`
	// Rules are steps run before every op's own (GitHub refuses an
	// unknown API version).
	Rules []*step
}

// catalog are the embedded services: every manifest of the embedded
// registry with fixtures under testdata/<id>/, parsed once. Servers share
// the parsed rows, which nothing changes in place.
var catalog = sync.OnceValues(func() (map[string]*service, error) {
	out := map[string]*service{}
	for _, m := range registry.Default().Services() {
		if _, err := fs.Stat(dataFS, "testdata/"+m.ID); err != nil {
			continue
		}
		svc, err := loadService(m, dataFS, "testdata/"+m.ID)
		if err != nil {
			return nil, err
		}
		out[m.ID] = svc
	}
	return out, nil
})

// loadService reads a manifest's fixtures in dir of fsys.
func loadService(m *registry.Manifest, fsys fs.FS, dir string) (*service, error) {
	f, err := loadFixtures(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("fakeapi: %s: %v", m.ID, err)
	}
	p := f.Provider
	if p.OAuth == nil {
		p.OAuth = &oauthProvider{}
		if o := m.Auth.OAuth; o != nil {
			p.OAuth.PKCE, p.OAuth.Refresh, p.OAuth.Lifetime = o.PKCE, o.Refresh, 3600
		}
	}
	p.OAuth.Service = m.ID
	oauthDefaults(p.OAuth, m)
	h := map[string]string{}
	for k, v := range p.Headers {
		h[http.CanonicalHeaderKey(k)] = v // as Header.Set would
	}
	p.Headers = h
	if len(p.Unauthorized) == 0 {
		p.Unauthorized = []string{"unauthorized", "unauthorized"}
	}
	if p.NotFound == "" {
		p.NotFound = "Not Found"
	}
	if p.Error.tree == nil {
		p.Error.tree = ordered{{"message", "${message}"}}
	}
	for _, st := range p.Rules {
		if err := compile(st.When); err != nil {
			return nil, fmt.Errorf("fakeapi: %s: rules: %v", m.ID, err)
		}
	}
	svc, err := newService(m, f)
	if err != nil {
		return nil, fmt.Errorf("fakeapi: %v", err)
	}
	return svc, nil
}

// oauthDefaults completes a provider's OAuth side from its manifest: the
// endpoints of auth.oauth, its scope separator, RFC 6749's answers and
// errors, a default client and token formats. A provider's fixtures set
// only what differs (GitHub's form-encoded answers, HubSpot's errors).
func oauthDefaults(o *oauthProvider, m *registry.Manifest) {
	mo := m.Auth.OAuth
	if mo == nil {
		return
	}
	if o.AuthorizeHost == "" {
		if u, err := url.Parse(mo.AuthorizeURL); err == nil {
			o.AuthorizeHost, o.AuthorizePath = u.Hostname(), u.Path
		}
	}
	if o.TokenHost == "" {
		if u, err := url.Parse(mo.TokenURL); err == nil {
			o.TokenHost, o.TokenPath = u.Hostname(), u.Path
		}
	}
	if o.ScopeSep == "" {
		o.ScopeSep = cmp.Or(mo.ScopeSeparator, " ")
	}
	o.ClientID = cmp.Or(o.ClientID, "fake-pinned-"+m.ID+"-client")
	o.ClientSecret = cmp.Or(o.ClientSecret, "fake_pinned_"+m.ID+"_client_secret_0000")
	for _, f := range []*[]any{&o.CodeFormat, &o.AccessFormat, &o.RefreshFormat} {
		if *f == nil {
			*f = []any{"", "alnum", 40.0}
		}
	}
	if o.Answer.tree == nil {
		o.Answer.tree = ordered{{"access_token", "${access}"}, {"token_type", "bearer"}, {"expires_in", "${expires_in}"}, {"refresh_token", "${refresh}"}, {"scope", "${scope}"}}
	}
	if o.ErrorAnswer.tree == nil {
		o.ErrorAnswer.tree = ordered{{"error", "${error}"}, {"error_description", "${description}"}}
	}
	if o.Errors == nil {
		o.Errors = map[tokenErr][2]any{errInvalidRequest: {"invalid_request", 400.0}, errBadClient: {"invalid_client", 401.0}, errBadCode: {"invalid_grant", 400.0},
			errBadRefresh: {"invalid_grant", 400.0}, errBadRedirect: {"invalid_grant", 400.0}, errBadGrantType: {"unsupported_grant_type", 400.0}}
	}
}

// embedded returns the embedded services; a broken fixture is a
// programming error.
func embedded() map[string]*service {
	c, err := catalog()
	if err != nil {
		panic(err.Error())
	}
	return c
}

// providerOf returns an embedded service's provider, or an empty one.
func providerOf(service string) *provider {
	if s, ok := embedded()[service]; ok {
		return s.p
	}
	return &provider{OAuth: &oauthProvider{}}
}

// Services lists the ids of the services the fake serves by default,
// sorted.
func Services() []string { return slices.Sorted(maps.Keys(embedded())) }

// Host returns the API host of a service ("api.github.com" for "github"),
// or "" for an unknown service.
func Host(service string) string { return providerOf(service).Host }

// Token returns the fixed valid pasted credential of a service (or ""),
// presented as its manifest says: "Authorization: Bearer <token>", for
// Linear the bare "Authorization: <token>".
func Token(service string) string { return providerOf(service).Token }

// User returns the user part of the fixed valid pasted credential of a
// service whose manifest's auth has two parts (schemes basic and
// template), or "".
func User(service string) string { return providerOf(service).User }

// Tenant returns the tenant label the fake serves for a service whose
// manifest's host is a per-connection pattern ("acme-fake" of
// acme-fake.atlassian.net), or "".
func Tenant(service string) string {
	s, ok := embedded()[service]
	if !ok || !s.m.HasTenant() {
		return ""
	}
	label, _, _ := strings.Cut(s.host, ".")
	return label
}

// OAuthToken returns the fixed valid OAuth access token of a service (or
// ""), always presented as "Authorization: Bearer <token>" (RFC 6750).
func OAuthToken(service string) string { return providerOf(service).OAuthToken }

// Example returns the example args of an embedded service's op (its
// fixture's "example": every declared arg with a value the fixtures
// answer), or nil.
func Example(service, op string) json.RawMessage {
	if s, ok := embedded()[service]; ok && s.f.Ops[op] != nil {
		return bytes.Clone(s.f.Ops[op].Example)
	}
	return nil
}

// maxBody caps every request body the fake reads.
const maxBody = 1 << 20

// maxRecorded bounds the recorder (a long-running demo); past it the
// oldest half is dropped at once, in amortized constant time.
const maxRecorded = 10000

// Request is one request as the fake received it.
type Request struct {
	Host     string      // without a port, lower-cased
	Method   string      // the HTTP method
	Path     string      // the escaped path (r.URL.EscapedPath())
	RawQuery string      // the query string without "?"
	Header   http.Header // a copy of the request headers (Go canonical names)
	Body     []byte      // the request body, at most 1 MiB
	Time     time.Time   // when the request arrived
}

// Option configures New.
type Option func(*config) error

type config struct {
	listen string
	extra  []*service
}

// WithService serves one more manifest, from the fixtures in the root of
// fsys (the layout of testdata/<service>/): a manifest under review, not
// yet embedded. It replaces an embedded service of the same id.
func WithService(m *registry.Manifest, fsys fs.FS) Option {
	return func(c *config) error {
		svc, err := loadService(m, fsys, ".")
		if err != nil {
			return err
		}
		c.extra = append(c.extra, svc)
		return nil
	}
}

// WithListen sets the listen address, which must be a loopback IP literal
// with a port ("127.0.0.1:0", "[::1]:8443"). The default is "127.0.0.1:0".
func WithListen(addr string) Option {
	return func(c *config) error {
		if err := CheckLoopback(addr); err != nil {
			return err
		}
		c.listen = addr
		return nil
	}
}

// CheckLoopback reports whether addr is "ip:port" with ip a loopback
// literal; the fake never listens anywhere else.
func CheckLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("fakeapi: listen address %q: %w", addr, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Unmap().IsLoopback() || ip.Zone() != "" {
		return fmt.Errorf("fakeapi: listen address %q: only a loopback IP (127.0.0.1 or ::1) is allowed", addr)
	}
	if port == "" {
		return fmt.Errorf("fakeapi: listen address %q: missing port", addr)
	}
	return nil
}

// tokenKind says how a registered credential must be presented.
type tokenKind int

const (
	kindPAT   tokenKind = iota // the service's pasted-token scheme
	kindOAuth                  // always Bearer
)

// credential is a registered credential of a service.
type credential struct {
	kind    tokenKind
	expires time.Time // zero: never
}

// Server is a running fake. It is safe for concurrent use.
type Server struct {
	ln     net.Listener
	srv    *http.Server
	certs  *certs
	done   chan struct{}
	closed sync.Once

	client    *http.Client    // guarded by mu
	transport *http.Transport // guarded by mu

	mu     sync.Mutex
	tokens map[[2]string]credential // {service, token}
	clock  func() time.Time         // nil: time.Now
	reqs   []Request
	hook   func(http.ResponseWriter, *http.Request) bool
	// answers caches successful GET answers made with a service's fixed
	// token, cleared by every other request and token change, lest
	// benchmarks measure the fake regenerating its answers.
	answers map[string]*httptest.ResponseRecorder

	oauth    *oauthState
	services map[string]*service // by id: this server's state of each
	byHost   map[string]*service
}

// New generates the certificates, builds the data and starts serving.
// Close stops it.
func New(opts ...Option) (*Server, error) {
	cfg := config{listen: "127.0.0.1:0"}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	services, byHost := map[string]*service{}, map[string]*service{}
	for id, svc := range embedded() {
		services[id] = svc.fork()
	}
	for _, svc := range cfg.extra {
		services[svc.id] = svc.fork()
	}
	var names []string
	for _, id := range slices.Sorted(maps.Keys(services)) {
		svc := services[id]
		byHost[svc.host] = svc
		names = append(names, svc.host)
		if svc.p.OAuthHost != "" {
			names = append(names, svc.p.OAuthHost)
		}
		for _, h := range []string{svc.p.OAuth.AuthorizeHost, svc.p.OAuth.TokenHost} {
			if h != "" && !slices.Contains(names, h) {
				names = append(names, h)
			}
		}
	}
	names = append(names, "localhost")
	c, err := newCerts(names)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return nil, fmt.Errorf("fakeapi: listen: %w", err)
	}
	s := &Server{
		ln:       ln,
		certs:    c,
		done:     make(chan struct{}),
		tokens:   map[[2]string]credential{},
		answers:  map[string]*httptest.ResponseRecorder{},
		oauth:    &oauthState{services: map[string]*oauthService{}, stop: make(chan struct{})},
		services: services,
		byHost:   byHost,
	}
	s.oauth.providers = func(service string) *oauthProvider { return s.provider(service).OAuth }
	for _, svc := range services {
		s.addToken(svc.id, svc.p.Token, kindPAT, 0)
		s.addToken(svc.id, svc.p.OAuthToken, kindOAuth, 0)
	}

	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	protos.SetHTTP2(true)
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serve),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       60 * time.Second,
		Protocols:         protos,
		// TLS handshake failures (a client without the CA) are expected in
		// tests; keep them off the process's stderr.
		ErrorLog: log.New(io.Discard, "", 0),
		TLSConfig: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{c.leaf},
			NextProtos:   []string{"h2", "http/1.1"},
		},
	}
	go func() {
		defer close(s.done)
		_ = s.srv.ServeTLS(ln, "", "")
	}()
	return s, nil
}

// Addr is the address the fake listens on ("127.0.0.1:port").
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Port is the TCP port the fake listens on.
func (s *Server) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// CAPool returns a fresh pool holding only the fake's CA certificate.
func (s *Server) CAPool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(s.certs.ca)
	return p
}

// CACertPEM returns the CA certificate in PEM form (for curl --cacert).
func (s *Server) CACertPEM() []byte { return bytes.Clone(s.certs.caPEM) }

// Hosts returns the API hosts the fake serves, one per service, sorted.
func (s *Server) Hosts() []string { return slices.Sorted(maps.Keys(s.byHost)) }

// Connection returns the fixed valid pasted connection of a service this
// server serves (embedded or added WithService): its token, the user part
// of a two-part credential and the tenant label of a per-connection host
// ("" where the manifest has none). All are "" for an unknown service.
func (s *Server) Connection(service string) (token, user, tenant string) {
	svc, ok := s.services[service]
	if !ok {
		return "", "", ""
	}
	if svc.m.HasTenant() {
		tenant, _, _ = strings.Cut(svc.host, ".")
	}
	return svc.p.Token, svc.p.User, tenant
}

// provider returns a service's provider on this server, or an empty one.
func (s *Server) provider(service string) *provider {
	if svc, ok := s.services[service]; ok {
		return svc.p
	}
	return &provider{OAuth: &oauthProvider{}}
}

// DialContext dials the fake whatever address it is asked for. Use it as
// an http.Transport's DialContext (or the host's dial override) to map
// every provider host to the fake.
func (s *Server) DialContext(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, s.Addr())
}

// Client returns an HTTP client that trusts only the fake's CA, sends every
// request to the fake, follows no redirects and negotiates h2 when it can.
// Every call returns the same client; Close closes its idle connections.
func (s *Server) Client() *http.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		s.transport = &http.Transport{
			DialContext:       s.DialContext,
			TLSClientConfig:   &tls.Config{RootCAs: s.CAPool(), MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2: true, // and no proxy
		}
		noRedirects := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		s.client = &http.Client{Transport: s.transport, Timeout: 30 * time.Second, CheckRedirect: noRedirects}
	}
	return s.client
}

// Close stops the server and closes open connections.
func (s *Server) Close() {
	s.closed.Do(func() {
		s.oauth.close() // releases token requests held by FaultHang
		_ = s.srv.Close()
		<-s.done
		s.mu.Lock()
		tr := s.transport
		s.mu.Unlock()
		if tr != nil {
			tr.CloseIdleConnections()
		}
	})
}

// AddToken registers another valid pasted credential for a service,
// presented like Token(service).
func (s *Server) AddToken(service, token string) { s.addToken(service, token, kindPAT, 0) }

// AddOAuthToken registers another valid OAuth access token for a service,
// presented as Bearer like OAuthToken(service).
func (s *Server) AddOAuthToken(service, token string) { s.addToken(service, token, kindOAuth, 0) }

// addToken registers a credential that expires after lifetime (0: never).
func (s *Server) addToken(service, token string, k tokenKind, lifetime time.Duration) {
	if token == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := credential{kind: k}
	if lifetime > 0 {
		c.expires = s.nowLocked().Add(lifetime)
	}
	s.tokens[[2]string{service, token}] = c
}

// RevokeToken makes a credential of a service invalid (later requests with
// it get 401), e.g. to simulate an expired OAuth access token.
func (s *Server) RevokeToken(service, token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.answers)
	delete(s.tokens, [2]string{service, token})
}

// lookupToken looks a credential up; an expired one is forgotten and not
// found.
func (s *Server) lookupToken(service, token string) (tokenKind, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.tokens[[2]string{service, token}]
	if ok && !c.expires.IsZero() && !s.nowLocked().Before(c.expires) {
		delete(s.tokens, [2]string{service, token})
		return 0, false
	}
	return c.kind, ok
}

// Requests returns a copy of every request recorded since New or the last
// Reset, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	for i, r := range s.reqs {
		r.Header = r.Header.Clone()
		r.Body = bytes.Clone(r.Body)
		out[i] = r
	}
	return out
}

// Reset forgets the recorded requests. Service state (created issues,
// customers, ...) is kept.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = nil
}

// SetHandler installs a test hook that sees every request first (after it
// is recorded, with its body readable). When the hook returns true it has
// answered the request and the fake does nothing more. nil removes it.
func (s *Server) SetHandler(h func(w http.ResponseWriter, r *http.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = h
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) >= maxRecorded {
		kept := copy(s.reqs, s.reqs[len(s.reqs)-maxRecorded/2:])
		clear(s.reqs[kept:]) // release the dropped requests' bodies
		s.reqs = s.reqs[:kept]
	}
	s.reqs = append(s.reqs, r)
}

// requestHost returns r's host without port, lower-cased.
func requestHost(r *http.Request) string {
	h, _, _ := net.SplitHostPort(r.Host)
	return strings.ToLower(strings.TrimSuffix(cmp.Or(h, r.Host), "."))
}

// serve is the root handler: record, hook, route by host.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	host := requestHost(r)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	s.record(Request{
		Host:     host,
		Method:   r.Method,
		Path:     r.URL.EscapedPath(),
		RawQuery: r.URL.RawQuery,
		Header:   r.Header.Clone(),
		Body:     bytes.Clone(body),
		Time:     time.Now(),
	})
	r.Body = io.NopCloser(bytes.NewReader(body))

	s.mu.Lock()
	hook := s.hook
	s.mu.Unlock()
	if hook != nil && hook(w, r) {
		return
	}
	svc := s.byHost[host]
	var oauth *provider // the provider whose OAuth host this is
	for _, id := range slices.Sorted(maps.Keys(s.services)) {
		if q := s.services[id].p; svc == nil && (q.OAuthHost == host || q.OAuth.AuthorizeHost == host || q.OAuth.TokenHost == host) {
			oauth = q
			break
		}
	}
	var mbe *http.MaxBytesError
	switch {
	case svc == nil && oauth != nil:
		if !s.serveOAuth(w, r, oauth.Service, host) {
			http.Error(w, fmt.Sprintf("fakeapi: %s OAuth host has no endpoint %s %s", oauth.Service, r.Method, r.URL.Path), http.StatusNotFound)
		}
		return
	case svc == nil:
		writeJSON(w, http.StatusMisdirectedRequest, map[string]string{"message": "fakeapi: no service at host " + host})
		return
	case errors.As(err, &mbe):
		apiError(w, svc.p, http.StatusRequestEntityTooLarge, "request body too large")
		return
	case err != nil: // the client went away mid-body; nothing useful to answer
		apiError(w, svc.p, http.StatusBadRequest, "could not read the request body")
		return
	case s.serveOAuth(w, r, svc.id, host): // token endpoints on API hosts come before the API's credential check
		return
	}
	p := svc.p
	c := &call{w: w, r: r, body: body, srv: s, p: p, svc: svc}
	auth := r.Header.Get("Authorization")
	key := host + r.URL.RequestURI() + "\x00" + auth + "\x00" + r.Header.Get("Accept")
	s.mu.Lock()
	if r.Method != http.MethodGet {
		clear(s.answers) // a write may change any later answer
	}
	rec := s.answers[key]
	s.mu.Unlock()
	if r.Method != http.MethodGet || (auth != "Bearer "+p.Token && auth != p.Token) {
		p.answerHeaders(w.Header())
		c.serveAPI()
		return
	}
	if rec == nil { // a cached answer keeps its headers, request id included
		rec = httptest.NewRecorder()
		p.answerHeaders(rec.Header())
		c.w = rec
		c.serveAPI()
		if rec.Code >= 200 && rec.Code < 300 {
			s.mu.Lock()
			s.answers[key] = rec
			s.mu.Unlock()
		}
	}
	maps.Copy(w.Header(), rec.Header())
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// answerHeaders sets the provider's answer headers on h, each ${name}
// filled afresh (a reset time, a request id).
func (p *provider) answerHeaders(h http.Header) {
	var vals map[string]any // made only for a header that needs one
	for k, v := range p.Headers {
		if strings.Contains(v, "${") {
			if vals == nil {
				vals = map[string]any{"reset": time.Now().Add(time.Hour).Unix(), "reset_ms": time.Now().Add(time.Hour).UnixMilli(),
					"uuid": mint([]any{"", "uuid", 0.0}), "request_id": mint([]any{"", "alnum", 14.0})}
			}
			v = expand(v, vals)
		}
		h[k] = []string{v}
	}
}

// serveAPI authenticates the request and hands it to its service.
func (c *call) serveAPI() {
	if c.authenticate() {
		c.svc.serveOp(c)
	}
}

// call is one request being served by a service.
type call struct {
	w    http.ResponseWriter
	r    *http.Request
	body []byte
	srv  *Server
	p    *provider
	svc  *service
}

// pasted reads the pasted credential a request presents the way its
// manifest's auth says, for schemes other than bearer and a bare none:
// the token, and whether the request presents one that way at all.
func (c *call) pasted() (string, bool) {
	a := &c.svc.m.Auth
	h := c.r.Header.Values("Authorization")
	switch {
	case a.Scheme == registry.SchemeHeader:
		h = c.r.Header.Values(a.Header)
		if len(h) != 1 {
			return "", false
		}
		return h[0], true
	case len(h) != 1:
		return "", false
	case a.Scheme == registry.SchemeNone && a.Prefix != "":
		return strings.CutPrefix(h[0], a.Prefix)
	case a.Scheme == registry.SchemeBasic:
		enc, ok := strings.CutPrefix(h[0], "Basic ")
		raw, err := base64.StdEncoding.DecodeString(enc)
		user, tok, colon := strings.Cut(string(raw), ":")
		if !ok || err != nil || !colon || user != c.p.User+a.User.Suffix {
			return "", false
		}
		return tok, true
	case a.Scheme == registry.SchemeTemplate:
		re := regexp.QuoteMeta(a.Template)
		re = strings.Replace(re, regexp.QuoteMeta(registry.TemplateUser), regexp.QuoteMeta(c.p.User), 1)
		re = strings.Replace(re, regexp.QuoteMeta(registry.TemplateSecret), "([!-~]+?)", 1)
		m := regexp.MustCompile("^" + re + "$").FindStringSubmatch(h[0])
		if m == nil {
			return "", false
		}
		return m[1], true
	}
	return "", false
}

// authenticate checks "Authorization: Bearer <token>" against the
// service's credentials or, where the pasted key is sent bare (four
// Unauthorized messages: Linear), a bare key against the pasted ones and
// Bearer against the OAuth ones; else it answers the provider's 401 (400
// for a pasted key sent as Bearer).
func (c *call) authenticate() bool {
	if a := c.svc.m.Auth; a.TwoPart() || a.Scheme == registry.SchemeHeader || a.Prefix != "" {
		// A pasted credential the manifest's own way; OAuth is Bearer below.
		if tok, ok := c.pasted(); ok {
			if k, found := c.srv.lookupToken(c.p.Service, tok); found && k == kindPAT {
				return true
			}
			apiError(c.w, c.p, http.StatusUnauthorized, strings.ReplaceAll(c.p.Unauthorized[1], "${masked}", "****"))
			return false
		}
	}
	all := c.r.Header.Values("Authorization")
	v, one := strings.Join(all, ","), len(all) == 1
	tok, bearer := strings.CutPrefix(v, "Bearer ")
	bare := len(c.p.Unauthorized) == 4
	status, msg := http.StatusUnauthorized, c.p.Unauthorized[1]
	if k, ok := c.srv.lookupToken(c.p.Service, tok); one && tok != "" {
		switch {
		case ok && (bearer && (!bare || k == kindOAuth) || !bearer && bare && k == kindPAT):
			return true
		case ok && bearer && bare:
			status, msg = http.StatusBadRequest, c.p.Unauthorized[3]
		case !bearer && bare:
			msg = c.p.Unauthorized[2]
		}
	}
	if len(all) == 0 || (one && v == "") || (bare && !one) {
		msg = c.p.Unauthorized[0]
	}
	masked := "****"
	if tok = strings.TrimPrefix(c.r.Header.Get("Authorization"), "Bearer "); len(tok) > 12 {
		masked = tok[:8] + "****" + tok[len(tok)-4:]
	}
	var auth []string // a 400 is an authentication error too
	for k, v := range c.p.ErrorVals["401"] {
		auth = append(auth, k, v)
	}
	apiError(c.w, c.p, status, strings.ReplaceAll(msg, "${masked}", masked), auth...)
	return false
}

// apiError answers with a provider's error envelope ("error"); details
// are name, value pairs (GitHub "doc", Stripe "code", "param",
// "doc_url"), an empty value leaving its member out.
func apiError(w http.ResponseWriter, p *provider, status int, msg string, details ...string) {
	writeJSON(w, status, errorBody(p, status, msg, details...))
}

// errorBody fills a provider's error envelope.
func errorBody(p *provider, status int, msg string, details ...string) any {
	vals := env{"message": msg, "status": strconv.Itoa(status), "uuid": mint([]any{"", "uuid", 0.0})}
	byStatus, ok := p.ErrorVals[strconv.Itoa(status)]
	if !ok {
		byStatus = p.ErrorVals[""]
	}
	for k, v := range byStatus {
		vals[k] = v
	}
	for i := 0; i+1 < len(details); i += 2 {
		if details[i+1] != "" {
			vals[details[i]] = details[i+1]
		}
	}
	f := &filler{}
	v, _ := f.fill(p.Error.tree, vals)
	return v
}
