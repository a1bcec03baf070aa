package fakeapi

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The OAuth 2.0 side of the fake (RFC 6749 authorization code grant, RFC
// 7636 PKCE, RFC 6749 section 6 refresh). For each provider it serves:
//
//   - the authorization endpoint, which auto-approves: it validates
//     client_id, redirect_uri, response_type=code, state, the requested
//     scope and (for providers that support it) the PKCE challenge, records
//     the request ([Server.AuthorizeRequests]) and redirects to redirect_uri
//     with code and state;
//   - the token endpoint, with the authorization_code grant (PKCE verified)
//     and the refresh_token grant. Codes and refresh tokens are single-use:
//     presenting one twice fails like the provider fails it.
//
// Provider quirks reproduced (they are what a client must cope with):
//
//   - GitHub answers form-encoded unless the request says
//     "Accept: application/json", and reports every error with HTTP 200 and
//     an "error" field (bad_verification_code, bad_refresh_token,
//     incorrect_client_credentials, redirect_uri_mismatch). Access tokens
//     live 8 hours (expires_in 28800) with rotating refresh tokens.
//   - HubSpot answers JSON with expires_in 1800 and reports errors as HTTP
//     400 {"status":"BAD_REFRESH_TOKEN"|"BAD_AUTH_CODE"|...,"message":...}
//     without an RFC 6749 "error" field.
//   - Linear: expires_in 86399 (24 hours), scope as a JSON array, scopes
//     requested comma-separated.
//   - DNSimple issues neither a refresh token nor expires_in.
//   - Stripe is Connect: no expires_in, a refresh token, stripe_user_id and
//     stripe_publishable_key; only scope read_write is granted (read_only
//     needs Stripe's approval and is refused as invalid_scope).
//
// The fake is stricter than some providers: every refresh token is
// single-use (HubSpot's real ones are reusable), which is the behaviour a
// client must survive.

// oauthProvider describes one provider's OAuth endpoints and quirks
// (testdata/providers.json).
type oauthProvider struct {
	Service       string            `json:"-"`
	AuthorizeHost string            `json:"authorize_host"`
	AuthorizePath string            `json:"authorize_path"`
	TokenHost     string            `json:"token_host"`
	TokenPath     string            `json:"token_path"`
	PKCE          bool              // accepts RFC 7636 S256 challenges
	Refresh       bool              // issues refresh tokens
	Lifetime      int               // default access-token lifetime in seconds; 0 = does not expire
	ScopeSep      string            `json:"scope_sep"` // separator of the scope parameter
	Scopes        []string          // the scopes it knows; nil = any
	ClientID      string            `json:"client_id"`      // the default client
	ClientSecret  string            `json:"client_secret"`  // (for Stripe a platform secret key)
	AccessFormat  []any             `json:"access_format"`  // [prefix, "alnum"|"hex"|"uuid", length]
	RefreshFormat []any             `json:"refresh_format"` // the same; nil = no refresh tokens
	Answer        ordered           // the token answer template
	Errors        map[string]string // the provider's names of the token errors, when it has its own
}

func (p *oauthProvider) lifetime() time.Duration { return time.Duration(p.Lifetime) * time.Second }

// mint returns a fresh token in format f.
func mint(f []any) string {
	if len(f) != 3 {
		return ""
	}
	prefix, n := f[0].(string), int(f[2].(float64))
	switch f[1] {
	case "hex":
		return prefix + randHex(n/2)
	case "uuid":
		return prefix + uuidRand()
	}
	return randToken(prefix, n)
}

func oauthOf(service string) *oauthProvider {
	if p := providerOf(service); p != nil {
		return p.OAuth
	}
	return nil
}

// OAuthEndpoints returns the authorization and token endpoint URLs the
// fake serves for a service (equal to its manifest's auth.oauth URLs), or
// empty strings for an unknown service.
func OAuthEndpoints(service string) (authorizeURL, tokenURL string) {
	p := oauthOf(service)
	if p == nil {
		return "", ""
	}
	return "https://" + p.AuthorizeHost + p.AuthorizePath, "https://" + p.TokenHost + p.TokenPath
}

// OAuthClientID returns the fixed OAuth client id of a service's default
// client, or "" for an unknown service.
func OAuthClientID(service string) string {
	if p := oauthOf(service); p != nil {
		return p.ClientID
	}
	return ""
}

// OAuthClientSecret returns the fixed client secret of a service's default
// OAuth client (for Stripe, like the real one, it is a platform secret
// key), or "" for an unknown service.
func OAuthClientSecret(service string) string {
	if p := oauthOf(service); p != nil {
		return p.ClientSecret
	}
	return ""
}

// TokenFault makes a service's token endpoint fail ([Server.SetTokenFault]).
type TokenFault int

const (
	// FaultNone clears a fault.
	FaultNone TokenFault = iota
	// FaultInvalidGrant answers the provider's own "dead grant" error
	// (invalid_grant; GitHub's bad_refresh_token / bad_verification_code
	// with HTTP 200; HubSpot's BAD_REFRESH_TOKEN / BAD_AUTH_CODE) without
	// consuming the code or refresh token.
	FaultInvalidGrant
	// FaultServerError answers 503 with an HTML body, like a load balancer.
	FaultServerError
	// FaultHang never answers: the request is held until the client gives
	// up or the Server closes.
	FaultHang
)

// AuthorizeRequest is one request the authorization endpoint accepted.
type AuthorizeRequest struct {
	ClientID            string
	RedirectURI         string
	ResponseType        string
	Scope               string // exactly as sent
	State               string
	CodeChallenge       string
	CodeChallengeMethod string
	// Query is the whole query, for provider-specific parameters
	// (Linear's prompt=consent).
	Query url.Values
}

type oauthClient struct {
	id, secret string
	redirects  []string // exact redirect URIs; nil = any loopback http(s) URI
}

type authCode struct {
	service, clientID, redirectURI, scope, challenge string
	expires                                          time.Time
}

type refreshGrant struct {
	service, clientID, scope string
}

type faultState struct {
	kind  TokenFault
	times int // remaining; <= 0 = until cleared
}

// oauthState is the OAuth side's state. Its mutex is never held together
// with Server.mu.
type oauthState struct {
	mu         sync.Mutex
	clients    map[string]*oauthClient       // by service
	codes      map[string]*authCode          // by code
	refresh    map[string]*refreshGrant      // by refresh token (live only)
	lifetimes  map[string]time.Duration      // by service (test overrides)
	codeCount  map[string]int                // token requests with grant_type=authorization_code
	refCount   map[string]int                // token requests with grant_type=refresh_token
	faults     map[string]*faultState        // by service
	denied     map[string]string             // by service: error code the authorize endpoint answers
	authorizes map[string][]AuthorizeRequest // by service
	stop       chan struct{}
	stopOnce   sync.Once
}

func newOAuthState() *oauthState {
	o := &oauthState{
		clients:    map[string]*oauthClient{},
		codes:      map[string]*authCode{},
		refresh:    map[string]*refreshGrant{},
		lifetimes:  map[string]time.Duration{},
		codeCount:  map[string]int{},
		refCount:   map[string]int{},
		faults:     map[string]*faultState{},
		denied:     map[string]string{},
		authorizes: map[string][]AuthorizeRequest{},
		stop:       make(chan struct{}),
	}
	for _, p := range providers {
		o.clients[p.Service] = &oauthClient{id: p.OAuth.ClientID, secret: p.OAuth.ClientSecret}
	}
	return o
}

func (o *oauthState) close() { o.stopOnce.Do(func() { close(o.stop) }) }

// SetClock sets the clock the fake judges token and code expiry by (nil
// restores time.Now). Tests move it forward to expire OAuth access tokens.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = now
}

func (s *Server) now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nowLocked()
}

// nowLocked is now with s.mu held.
func (s *Server) nowLocked() time.Time {
	if s.clock != nil {
		return s.clock()
	}
	return time.Now()
}

// RegisterOAuthClient replaces a service's OAuth client: only this id and
// secret are accepted from then on, and only the listed redirect URIs
// (exact match). With no redirect URIs, any http or https URI on a
// loopback host (127.0.0.1, ::1, localhost) is accepted, which is also
// what the default client (OAuthClientID, OAuthClientSecret) does.
func (s *Server) RegisterOAuthClient(service, clientID, clientSecret string, redirectURIs ...string) {
	o := s.oauth
	o.mu.Lock()
	defer o.mu.Unlock()
	o.clients[service] = &oauthClient{id: clientID, secret: clientSecret, redirects: slices.Clone(redirectURIs)}
}

// SetOAuthLifetime sets the lifetime of the access tokens a service's
// token endpoint issues from now on (expires_in reports it where the
// provider reports one). A lifetime <= 0 restores the provider's default.
// DNSimple and Stripe report no expires_in whatever their lifetime, so
// their tokens then expire without notice.
func (s *Server) SetOAuthLifetime(service string, d time.Duration) {
	o := s.oauth
	o.mu.Lock()
	defer o.mu.Unlock()
	if d <= 0 {
		delete(o.lifetimes, service)
		return
	}
	o.lifetimes[service] = d
}

// SetTokenFault makes the next `times` requests to a service's token
// endpoint fail with f (times <= 0: every request until cleared with
// FaultNone). Faulted requests still count in TokenRequests.
func (s *Server) SetTokenFault(service string, f TokenFault, times int) {
	o := s.oauth
	o.mu.Lock()
	defer o.mu.Unlock()
	if f == FaultNone {
		delete(o.faults, service)
		return
	}
	o.faults[service] = &faultState{kind: f, times: times}
}

// SetAuthorizeError makes a service's authorization endpoint refuse
// (redirecting with error=code and the state, as when a member clicks
// "Cancel": code "access_denied"). An empty code restores auto-approval.
func (s *Server) SetAuthorizeError(service, code string) {
	o := s.oauth
	o.mu.Lock()
	defer o.mu.Unlock()
	if code == "" {
		delete(o.denied, service)
		return
	}
	o.denied[service] = code
}

// TokenRequests returns how many requests a service's token endpoint
// received with grant_type authorization_code (codes) and refresh_token
// (refreshes), failed ones included.
func (s *Server) TokenRequests(service string) (codes, refreshes int) {
	o := s.oauth
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.codeCount[service], o.refCount[service]
}

// AuthorizeRequests returns the requests a service's authorization
// endpoint accepted (approved or refused with a redirect), oldest first.
func (s *Server) AuthorizeRequests(service string) []AuthorizeRequest {
	o := s.oauth
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]AuthorizeRequest, len(o.authorizes[service]))
	for i, a := range o.authorizes[service] {
		a.Query = cloneValues(a.Query)
		out[i] = a
	}
	return out
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vv := range v {
		out[k] = slices.Clone(vv)
	}
	return out
}

// serveOAuth answers r if it is for service's authorize or token endpoint
// on host, and reports whether it did.
func (s *Server) serveOAuth(w http.ResponseWriter, r *http.Request, service, host string) bool {
	p := oauthOf(service)
	if p == nil {
		return false
	}
	switch {
	case host == p.AuthorizeHost && r.URL.Path == p.AuthorizePath:
		s.serveAuthorize(w, r, p)
		return true
	case host == p.TokenHost && r.URL.Path == p.TokenPath:
		s.serveToken(w, r, p)
		return true
	}
	return false
}

// randToken returns prefix followed by n random characters of alnum.
func randToken(prefix string, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("fakeapi: crypto/rand: " + err.Error())
	}
	for i := range b {
		b[i] = alnum[int(b[i])%len(alnum)]
	}
	return prefix + string(b)
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("fakeapi: crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// loopbackURI reports whether u is an http(s) URI on a loopback host.
func loopbackURI(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
		return false
	}
	switch u.Hostname() {
	case "127.0.0.1", "::1", "localhost":
		return true
	}
	return false
}

func (c *oauthClient) redirectOK(uri string) bool {
	if c.redirects == nil {
		return loopbackURI(uri)
	}
	return slices.Contains(c.redirects, uri)
}

// oauthPage answers an authorization-endpoint error that must not
// redirect (unknown client, bad redirect_uri: RFC 6749 section 4.1.2.1).
func oauthPage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><title>Authorization error</title><p>%s</p>\n", htmlEscape(msg))
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;").Replace(s)
}

// redirectWith redirects to uri with params added to its query.
func redirectWith(w http.ResponseWriter, uri string, params url.Values) {
	u, err := url.Parse(uri)
	if err != nil {
		oauthPage(w, http.StatusBadRequest, "bad redirect_uri")
		return
	}
	q := u.Query()
	for k, vv := range params {
		q[k] = vv
	}
	u.RawQuery = q.Encode()
	w.Header().Set("Location", u.String())
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusFound)
}

// validChallenge reports whether c is an S256 code challenge: the
// unpadded base64url of 32 bytes (RFC 7636 section 4.2).
func validChallenge(c string) bool {
	b, err := base64.RawURLEncoding.DecodeString(c)
	return err == nil && len(b) == sha256.Size
}

// validVerifier reports whether v is a code verifier: 43 to 128 characters
// of [A-Za-z0-9-._~] (RFC 7636 section 4.1).
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for _, c := range []byte(v) {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

func s256(verifier string) string {
	h := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// serveAuthorize is the authorization endpoint (RFC 6749 section 4.1.1):
// it auto-approves a valid request.
func (s *Server) serveAuthorize(w http.ResponseWriter, r *http.Request, p *oauthProvider) {
	if r.Method != http.MethodGet {
		oauthPage(w, http.StatusMethodNotAllowed, "the authorization endpoint takes GET")
		return
	}
	q := r.URL.Query()
	for k, vv := range q {
		if len(vv) > 1 {
			oauthPage(w, http.StatusBadRequest, "parameter "+k+" given more than once")
			return
		}
	}
	o := s.oauth
	o.mu.Lock()
	client := o.clients[p.Service]
	denied := o.denied[p.Service]
	o.mu.Unlock()
	clientID, redirectURI := q.Get("client_id"), q.Get("redirect_uri")
	if client == nil || clientID == "" || subtle.ConstantTimeCompare([]byte(clientID), []byte(client.id)) != 1 {
		oauthPage(w, http.StatusNotFound, "unknown client_id")
		return
	}
	if redirectURI == "" || !client.redirectOK(redirectURI) {
		oauthPage(w, http.StatusBadRequest, "redirect_uri is missing or not registered for this application")
		return
	}
	ar := AuthorizeRequest{
		ClientID: clientID, RedirectURI: redirectURI, ResponseType: q.Get("response_type"),
		Scope: q.Get("scope"), State: q.Get("state"),
		CodeChallenge: q.Get("code_challenge"), CodeChallengeMethod: q.Get("code_challenge_method"),
		Query: cloneValues(q),
	}
	o.mu.Lock()
	if len(o.authorizes[p.Service]) >= maxRecorded {
		o.authorizes[p.Service] = slices.Delete(o.authorizes[p.Service], 0, 1)
	}
	o.authorizes[p.Service] = append(o.authorizes[p.Service], ar)
	o.mu.Unlock()

	fail := func(code, desc string) {
		v := url.Values{"error": {code}, "error_description": {desc}}
		if ar.State != "" {
			v.Set("state", ar.State)
		}
		redirectWith(w, redirectURI, v)
	}
	switch {
	case ar.ResponseType != "code":
		fail("unsupported_response_type", "response_type must be code")
		return
	case ar.State == "":
		fail("invalid_request", "state is required")
		return
	}
	challenge := ""
	if p.PKCE && (ar.CodeChallenge != "" || ar.CodeChallengeMethod != "") {
		if ar.CodeChallengeMethod != "S256" {
			fail("invalid_request", "code_challenge_method must be S256")
			return
		}
		if !validChallenge(ar.CodeChallenge) {
			fail("invalid_request", "code_challenge must be the base64url SHA-256 of the verifier")
			return
		}
		challenge = ar.CodeChallenge
	}
	if ar.Scope != "" {
		for _, sc := range strings.Split(ar.Scope, p.ScopeSep) {
			if sc == "" || strings.ContainsAny(sc, " ,") || (p.Scopes != nil && !slices.Contains(p.Scopes, sc)) {
				fail("invalid_scope", fmt.Sprintf("unknown scope %q (scopes are separated by %q)", sc, p.ScopeSep))
				return
			}
		}
	}
	if denied != "" {
		fail(denied, "the user denied the request")
		return
	}
	code := randHex(10)
	if p.Service == Stripe {
		code = randToken("ac_", 32)
	}
	now := s.now()
	o.mu.Lock()
	if len(o.codes) >= maxRecorded { // a long-running demo: forget expired codes
		for k, c := range o.codes {
			if !now.Before(c.expires) {
				delete(o.codes, k)
			}
		}
	}
	o.codes[code] = &authCode{
		service: p.Service, clientID: clientID, redirectURI: redirectURI, scope: ar.Scope,
		challenge: challenge, expires: now.Add(10 * time.Minute),
	}
	o.mu.Unlock()
	v := url.Values{"code": {code}, "state": {ar.State}}
	if p.Service == Stripe {
		v.Set("scope", ar.Scope)
	}
	redirectWith(w, redirectURI, v)
}

// tokenError kinds, mapped to each provider's own error answer (the keys
// of testdata/providers.json's "errors").
type tokenErr string

const (
	errInvalidRequest tokenErr = "invalid_request"
	errBadClient      tokenErr = "bad_client"
	errBadCode        tokenErr = "bad_code"     // unknown, used, expired or mismatched code; PKCE failure
	errBadRefresh     tokenErr = "bad_refresh"  // unknown or used refresh token
	errBadRedirect    tokenErr = "bad_redirect" // redirect_uri differs from the authorization request's
	errBadGrantType   tokenErr = "bad_grant_type"
)

// rfcCode is the RFC 6749 section 5.2 code of a tokenErr.
func (e tokenErr) rfcCode() string {
	switch e {
	case errBadClient:
		return "invalid_client"
	case errBadCode, errBadRefresh, errBadRedirect:
		return "invalid_grant"
	case errBadGrantType:
		return "unsupported_grant_type"
	}
	return "invalid_request"
}

// tokenFail answers a token-endpoint error the way p does.
func (s *Server) tokenFail(w http.ResponseWriter, r *http.Request, p *oauthProvider, e tokenErr, desc string) {
	w.Header().Set("Cache-Control", "no-store")
	switch p.Service {
	case GitHub:
		// GitHub: HTTP 200 with an error field, form-encoded by default.
		githubTokenAnswer(w, r, ordered{
			{"error", p.Errors[string(e)]}, {"error_description", desc},
			{"error_uri", "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors"},
		})
	case HubSpot:
		writeJSON(w, http.StatusBadRequest, ordered{
			{"status", p.Errors[string(e)]}, {"message", desc}, {"correlationId", uuidRand()},
		})
	default:
		status := http.StatusBadRequest
		if e == errBadClient {
			status = http.StatusUnauthorized
		}
		writeJSON(w, status, ordered{{"error", e.rfcCode()}, {"error_description", desc}})
	}
}

func uuidRand() string {
	b := []byte(randHex(16))
	return fmt.Sprintf("%s-%s-%s-%s-%s", b[0:8], b[8:12], b[12:16], b[16:20], b[20:32])
}

// githubTokenAnswer writes a GitHub token-endpoint answer: HTTP 200,
// JSON when the request accepts application/json, form-encoded otherwise.
func githubTokenAnswer(w http.ResponseWriter, r *http.Request, fields ordered) {
	if acceptsJSON(r) {
		writeJSON(w, http.StatusOK, fields)
		return
	}
	v := url.Values{}
	for _, f := range fields {
		v.Set(f.k, fmt.Sprint(f.v))
	}
	b := v.Encode()
	w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(b))
}

func acceptsJSON(r *http.Request) bool {
	for _, a := range r.Header.Values("Accept") {
		for _, part := range strings.Split(a, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && mt == "application/json" {
				return true
			}
		}
	}
	return false
}

// takeFault returns the fault to apply to one token request of service.
func (o *oauthState) takeFault(service string) TokenFault {
	o.mu.Lock()
	defer o.mu.Unlock()
	f := o.faults[service]
	if f == nil {
		return FaultNone
	}
	if f.times > 0 {
		f.times--
		if f.times == 0 {
			delete(o.faults, service)
		}
	}
	return f.kind
}

// clientAuth returns the client credentials of a token request: HTTP Basic
// (RFC 6749 section 2.3.1, form-encoded) or client_id and client_secret in
// the body. Both at once is an error.
func clientAuth(r *http.Request, form url.Values) (id, secret string, ok bool) {
	bid, bsecret, basic := r.BasicAuth()
	if basic {
		if form.Has("client_secret") {
			return "", "", false
		}
		id, err1 := url.QueryUnescape(bid)
		secret, err2 := url.QueryUnescape(bsecret)
		if err1 != nil || err2 != nil {
			return "", "", false
		}
		if fid := form.Get("client_id"); fid != "" && fid != id {
			return "", "", false
		}
		return id, secret, true
	}
	return form.Get("client_id"), form.Get("client_secret"), true
}

// serveToken is the token endpoint (RFC 6749 section 3.2).
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request, p *oauthProvider) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "invalid_request", "error_description": "the token endpoint takes POST"})
		return
	}
	o := s.oauth
	var form url.Values
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "application/x-www-form-urlencoded" {
		if err := r.ParseForm(); err == nil {
			form = r.PostForm
		}
	}
	grant := form.Get("grant_type")
	o.mu.Lock()
	switch grant {
	case "authorization_code":
		o.codeCount[p.Service]++
	case "refresh_token":
		o.refCount[p.Service]++
	}
	o.mu.Unlock()

	switch o.takeFault(p.Service) {
	case FaultInvalidGrant:
		e := errBadRefresh
		if grant == "authorization_code" {
			e = errBadCode
		}
		s.tokenFail(w, r, p, e, "the grant is invalid, expired or revoked")
		return
	case FaultServerError:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("<html><body><h1>503 Service Unavailable</h1>No server is available to handle this request.</body></html>\n"))
		return
	case FaultHang:
		select {
		case <-r.Context().Done():
		case <-o.stop:
		}
		return
	}

	if form == nil {
		s.tokenFail(w, r, p, errInvalidRequest, "the body must be application/x-www-form-urlencoded")
		return
	}
	id, secret, ok := clientAuth(r, form)
	o.mu.Lock()
	client := o.clients[p.Service]
	o.mu.Unlock()
	if !ok || client == nil || id != client.id || subtle.ConstantTimeCompare([]byte(secret), []byte(client.secret)) != 1 {
		s.tokenFail(w, r, p, errBadClient, "the client_id and/or client_secret passed are incorrect")
		return
	}
	switch grant {
	case "authorization_code":
		s.exchangeCode(w, r, p, form, id)
	case "refresh_token":
		if !p.Refresh {
			s.tokenFail(w, r, p, errBadGrantType, "this provider issues no refresh tokens")
			return
		}
		s.refreshGrant(w, r, p, form, id)
	default:
		s.tokenFail(w, r, p, errBadGrantType, "grant_type must be authorization_code or refresh_token")
	}
}

func (s *Server) exchangeCode(w http.ResponseWriter, r *http.Request, p *oauthProvider, form url.Values, clientID string) {
	code := form.Get("code")
	o := s.oauth
	o.mu.Lock()
	c := o.codes[code]
	delete(o.codes, code) // single use, whatever happens next
	o.mu.Unlock()
	now := s.now()
	switch {
	case code == "" || c == nil || c.service != p.Service || c.clientID != clientID:
		s.tokenFail(w, r, p, errBadCode, "the code passed is incorrect or expired")
		return
	case !now.Before(c.expires):
		s.tokenFail(w, r, p, errBadCode, "the code passed is incorrect or expired")
		return
	case form.Get("redirect_uri") != c.redirectURI:
		s.tokenFail(w, r, p, errBadRedirect, "the redirect_uri MUST match the registered callback URL for this application")
		return
	}
	verifier := form.Get("code_verifier")
	switch {
	case c.challenge != "" && (!validVerifier(verifier) || subtle.ConstantTimeCompare([]byte(s256(verifier)), []byte(c.challenge)) != 1):
		s.tokenFail(w, r, p, errBadCode, "the code_verifier does not match the code_challenge")
		return
	case c.challenge == "" && verifier != "":
		s.tokenFail(w, r, p, errBadCode, "a code_verifier was sent but the authorization request had no code_challenge")
		return
	}
	s.issue(w, r, p, clientID, c.scope)
}

func (s *Server) refreshGrant(w http.ResponseWriter, r *http.Request, p *oauthProvider, form url.Values, clientID string) {
	rt := form.Get("refresh_token")
	o := s.oauth
	o.mu.Lock()
	g := o.refresh[rt]
	if g != nil && g.service == p.Service && g.clientID == clientID {
		delete(o.refresh, rt) // single use: rotated below
	} else {
		g = nil
	}
	o.mu.Unlock()
	if rt == "" || g == nil {
		s.tokenFail(w, r, p, errBadRefresh, "the refresh token passed is incorrect, expired or already used")
		return
	}
	s.issue(w, r, p, clientID, g.scope)
}

// issue mints an access token (a valid API credential of kind OAuth that
// expires) and, where the provider does, a refresh token, and answers.
func (s *Server) issue(w http.ResponseWriter, r *http.Request, p *oauthProvider, clientID, scope string) {
	o := s.oauth
	o.mu.Lock()
	lifetime := p.lifetime()
	if d, ok := o.lifetimes[p.Service]; ok {
		lifetime = d
	}
	o.mu.Unlock()

	access, refresh := mint(p.AccessFormat), mint(p.RefreshFormat)
	if !p.Refresh {
		refresh = ""
	}

	s.mu.Lock()
	if s.tokens[p.Service] == nil {
		s.tokens[p.Service] = map[string]tokenKind{}
	}
	s.tokens[p.Service][access] = kindOAuth
	if lifetime > 0 {
		if s.tokenExp[p.Service] == nil {
			s.tokenExp[p.Service] = map[string]time.Time{}
		}
		s.tokenExp[p.Service][access] = s.nowLocked().Add(lifetime)
	}
	s.mu.Unlock()
	if refresh != "" {
		o.mu.Lock()
		o.refresh[refresh] = &refreshGrant{service: p.Service, clientID: clientID, scope: scope}
		o.mu.Unlock()
	}

	expiresIn := int(lifetime / time.Second)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	scopes := []string{}
	if scope != "" {
		scopes = strings.Split(scope, p.ScopeSep)
	}
	answer := fill(p.Answer, map[string]any{"access": access, "refresh": refresh, "expires_in": expiresIn,
		"scope": scope, "scopes": scopes, "publishable_key": randToken("pk_test_", 40)}).(ordered)
	if p.Service == GitHub {
		githubTokenAnswer(w, r, answer)
		return
	}
	writeJSON(w, http.StatusOK, answer)
}
