package fakeapi

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The OAuth 2.0 side of the fake (RFC 6749 code grant and refresh, RFC
// 7636 PKCE): per provider, the authorization endpoint, which validates,
// records ([Server.AuthorizeRequests]) and auto-approves, and the token
// endpoint. Codes and refresh tokens are single-use (stricter than
// HubSpot: the behaviour a client must survive). The providers' quirks
// are data (testdata/providers.json): GitHub's form-encoded answers and
// errors with HTTP 200, HubSpot's error envelope, lifetimes, scopes,
// Stripe Connect's extra members, DNSimple's tokens that never expire.

// oauthProvider describes one provider's OAuth endpoints and quirks
// (testdata/providers.json, whose "about" documents each member).
type oauthProvider struct {
	Service       string `json:"-"`
	AuthorizeHost string `json:"authorize_host"`
	AuthorizePath string `json:"authorize_path"`
	TokenHost     string `json:"token_host"`
	TokenPath     string `json:"token_path"`
	RevokePath    string `json:"revoke_path"`
	PKCE          bool
	Refresh       bool
	Lifetime      int
	ScopeSep      string `json:"scope_sep"`
	Scopes        []string
	ClientID      string `json:"client_id"`
	ClientSecret  string `json:"client_secret"`
	CodeFormat    []any  `json:"code_format"`
	AccessFormat  []any  `json:"access_format"`
	RefreshFormat []any  `json:"refresh_format"`
	RedirectScope bool   `json:"redirect_scope"`
	FormAnswers   bool   `json:"form_answers"`
	Answer        jsonTemplate
	Errors        map[tokenErr][2]any
	ErrorAnswer   jsonTemplate `json:"error_answer"`
}

// mint returns a fresh random token in format f, [prefix, alphabet, length].
func mint(f []any) string {
	prefix, n := f[0].(string), int(f[2].(float64))
	switch f[1] {
	case "hex":
		return prefix + randChars(n, "0123456789abcdef")
	case "uuid":
		b := []byte(randChars(32, "0123456789abcdef"))
		return fmt.Sprintf("%s%s-%s-%s-%s-%s", prefix, b[0:8], b[8:12], b[12:16], b[16:20], b[20:32])
	}
	return prefix + randChars(n, alnum)
}

const alnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randChars returns n characters of alphabet from crypto/rand.
func randChars(n int, alphabet string) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("fakeapi: crypto/rand: " + err.Error())
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func oauthOf(service string) *oauthProvider { return providerOf(service).OAuth }

// fillAnswer fills a token endpoint's answer template (an object).
func fillAnswer(t jsonTemplate, e env) ordered {
	v, _ := (&filler{}).fill(t.tree, e)
	o, _ := v.(ordered)
	return o
}

// OAuthEndpoints returns the authorization and token endpoint URLs the
// fake serves for a service (its manifest's auth.oauth URLs), or "".
func OAuthEndpoints(service string) (authorizeURL, tokenURL string) {
	if p := oauthOf(service); p.TokenHost != "" {
		return "https://" + p.AuthorizeHost + p.AuthorizePath, "https://" + p.TokenHost + p.TokenPath
	}
	return "", ""
}

// OAuthClientID returns the id of a service's default OAuth client, or "".
func OAuthClientID(service string) string { return oauthOf(service).ClientID }

// OAuthClientSecret returns the secret of a service's default OAuth
// client (for Stripe, as there, a platform secret key), or "".
func OAuthClientSecret(service string) string { return oauthOf(service).ClientSecret }

// TokenFault makes a service's token endpoint fail ([Server.SetTokenFault]).
type TokenFault int

const (
	// FaultNone clears a fault.
	FaultNone TokenFault = iota
	// FaultInvalidGrant answers the provider's own "dead grant" error (its
	// bad_code or bad_refresh: invalid_grant, GitHub's bad_verification_code
	// with HTTP 200, ...) without consuming the code or refresh token.
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

// grant is what an authorization code or a refresh token stands for.
type grant struct {
	clientID, scope        string
	redirectURI, challenge string    // codes only
	expires                time.Time // codes only
}

// oauthService is one service's OAuth state.
type oauthService struct {
	clientID, secret string            // its client
	redirects        []string          // exact redirect URIs; nil = any loopback http(s) URI
	codes, refresh   map[string]*grant // live authorization codes and refresh tokens
	lifetime         time.Duration     // test override; 0 = the provider's
	codeCount        int               // token requests with grant_type=authorization_code
	refCount         int               // token requests with grant_type=refresh_token
	fault            TokenFault
	faultTimes       int    // remaining faulted requests; <= 0 = until cleared
	denied           string // error code the authorize endpoint answers
	authorizes       []AuthorizeRequest
	revocations      []Revocation
	revokeStatus     int // status the revocation endpoint answers instead; 0 = serve
}

// Revocation is one request the revocation endpoint (RFC 7009 section 2.1)
// received from the registered client.
type Revocation struct {
	Token         string // exactly as sent
	TokenTypeHint string // "access_token", "refresh_token" or ""
	// Revoked is true when the token was live (an access token, or a
	// refresh token of this client) and is now dead.
	Revoked bool
}

// Revocations returns the requests a service's revocation endpoint
// received from its client, oldest first (failed answers included).
func (s *Server) Revocations(service string) []Revocation {
	var out []Revocation
	s.oauth.with(service, func(st *oauthService) { out = slices.Clone(st.revocations) })
	return out
}

// SetRevokeStatus makes a service's revocation endpoint answer status
// (e.g. 503, with an HTML body) without revoking; 0 restores it.
func (s *Server) SetRevokeStatus(service string, status int) {
	s.oauth.with(service, func(st *oauthService) { st.revokeStatus = status })
}

// OAuthRevokeURL returns the revocation endpoint the fake serves for a
// service (its manifest's auth.oauth.revoke_url), or "".
func OAuthRevokeURL(service string) string {
	if p := oauthOf(service); p.RevokePath != "" {
		return "https://" + p.TokenHost + p.RevokePath
	}
	return ""
}

// oauthState is the OAuth side's state. Its mutex is never held together
// with Server.mu.
type oauthState struct {
	providers func(service string) *oauthProvider
	mu        sync.Mutex
	services  map[string]*oauthService
	stop      chan struct{}
	stopOnce  sync.Once
}

func (o *oauthState) close() { o.stopOnce.Do(func() { close(o.stop) }) }

// with runs f on a service's state with o.mu held; a service starts with
// its provider's default client.
func (o *oauthState) with(service string, f func(*oauthService)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.services[service] == nil {
		p := o.providers(service)
		o.services[service] = &oauthService{clientID: p.ClientID, secret: p.ClientSecret, codes: map[string]*grant{}, refresh: map[string]*grant{}}
	}
	f(o.services[service])
}

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
// secret are accepted from then on, with only the listed redirect URIs
// (exact match) or, with none, like the default client, any http(s) URI
// on a loopback host (127.0.0.1, ::1, localhost).
func (s *Server) RegisterOAuthClient(service, clientID, clientSecret string, redirectURIs ...string) {
	s.oauth.with(service, func(st *oauthService) {
		st.clientID, st.secret, st.redirects = clientID, clientSecret, slices.Clone(redirectURIs)
	})
}

// SetOAuthLifetime sets the lifetime of the access tokens a service issues
// from now on (<= 0: the provider's), reported in expires_in where the
// provider reports one (DNSimple's and Stripe's expire without notice).
func (s *Server) SetOAuthLifetime(service string, d time.Duration) {
	s.oauth.with(service, func(st *oauthService) { st.lifetime = max(d, 0) })
}

// SetTokenFault makes the next `times` requests to a service's token
// endpoint fail with f (times <= 0: every request until cleared with
// FaultNone). Faulted requests still count in TokenRequests.
func (s *Server) SetTokenFault(service string, f TokenFault, times int) {
	s.oauth.with(service, func(st *oauthService) { st.fault, st.faultTimes = f, times })
}

// SetAuthorizeError makes a service's authorization endpoint refuse
// (redirecting with error=code and the state, as when a member clicks
// "Cancel": code "access_denied"). An empty code restores auto-approval.
func (s *Server) SetAuthorizeError(service, code string) {
	s.oauth.with(service, func(st *oauthService) { st.denied = code })
}

// TokenRequests returns how many requests a service's token endpoint
// received with grant_type authorization_code (codes) and refresh_token
// (refreshes), failed ones included.
func (s *Server) TokenRequests(service string) (codes, refreshes int) {
	s.oauth.with(service, func(st *oauthService) { codes, refreshes = st.codeCount, st.refCount })
	return codes, refreshes
}

// AuthorizeRequests returns the requests a service's authorization
// endpoint accepted (approved or refused with a redirect), oldest first.
func (s *Server) AuthorizeRequests(service string) []AuthorizeRequest {
	var out []AuthorizeRequest
	s.oauth.with(service, func(st *oauthService) {
		for _, a := range st.authorizes {
			a.Query = url.Values(http.Header(a.Query).Clone()) // a deep copy
			out = append(out, a)
		}
	})
	return out
}

// serveOAuth answers r if it is for service's authorize or token endpoint
// on host, and reports whether it did.
func (s *Server) serveOAuth(w http.ResponseWriter, r *http.Request, service, host string) bool {
	p := s.provider(service).OAuth
	switch {
	case host == p.AuthorizeHost && r.URL.Path == p.AuthorizePath:
		s.serveAuthorize(w, r, p)
	case host == p.TokenHost && r.URL.Path == p.TokenPath:
		s.serveToken(w, r, p)
	case p.RevokePath != "" && host == p.TokenHost && r.URL.Path == p.RevokePath:
		s.serveRevoke(w, r, p)
	default:
		return false
	}
	return true
}

// redirectOK reports whether uri is one of st's redirect URIs or, when it
// has none, an http(s) URI on a loopback host.
func (st *oauthService) redirectOK(uri string) bool {
	if st.redirects != nil {
		return slices.Contains(st.redirects, uri)
	}
	u, err := url.Parse(uri)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.User == nil && slices.Contains([]string{"127.0.0.1", "::1", "localhost"}, u.Hostname())
}

// oauthPage answers an authorization-endpoint error that must not
// redirect (unknown client, bad redirect_uri: RFC 6749 section 4.1.2.1).
func oauthPage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><title>Authorization error</title><p>%s</p>\n", html.EscapeString(msg))
}

// redirectWith redirects to uri with params added to its query.
func redirectWith(w http.ResponseWriter, uri string, params url.Values) {
	u, err := url.Parse(uri)
	if err != nil {
		oauthPage(w, http.StatusBadRequest, "bad redirect_uri")
		return
	}
	q := u.Query()
	maps.Copy(q, params)
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

// verifierSyntax is the syntax of a code verifier (RFC 7636 section 4.1).
var verifierSyntax = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

func s256(verifier string) string {
	h := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// authorizeError checks an authorization request that may redirect; it
// returns the RFC 6749 section 4.1.2.1 error code and description, or "".
func authorizeError(p *oauthProvider, ar AuthorizeRequest) (code, desc string) {
	switch {
	case ar.ResponseType != "code":
		return "unsupported_response_type", "response_type must be code"
	case ar.State == "":
		return "invalid_request", "state is required"
	case p.PKCE && (ar.CodeChallenge != "" || ar.CodeChallengeMethod != "") && ar.CodeChallengeMethod != "S256":
		return "invalid_request", "code_challenge_method must be S256"
	case p.PKCE && ar.CodeChallengeMethod != "" && !validChallenge(ar.CodeChallenge):
		return "invalid_request", "code_challenge must be the base64url SHA-256 of the verifier"
	}
	if ar.Scope != "" {
		for _, sc := range strings.Split(ar.Scope, p.ScopeSep) {
			if sc == "" || strings.ContainsAny(sc, " ,") || (p.Scopes != nil && !slices.Contains(p.Scopes, sc)) {
				return "invalid_scope", fmt.Sprintf("unknown scope %q (scopes are separated by %q)", sc, p.ScopeSep)
			}
		}
	}
	return "", ""
}

// serveAuthorize is the authorization endpoint (RFC 6749 section 4.1.1):
// it auto-approves a valid request.
func (s *Server) serveAuthorize(w http.ResponseWriter, r *http.Request, p *oauthProvider) {
	q, twice := r.URL.Query(), ""
	for k, vv := range q {
		if len(vv) > 1 {
			twice = k
		}
	}
	ar := AuthorizeRequest{
		ClientID: q.Get("client_id"), RedirectURI: q.Get("redirect_uri"), ResponseType: q.Get("response_type"),
		Scope: q.Get("scope"), State: q.Get("state"),
		CodeChallenge: q.Get("code_challenge"), CodeChallengeMethod: q.Get("code_challenge_method"),
		Query: q,
	}
	var client, redirect bool
	var denied string
	s.oauth.with(p.Service, func(st *oauthService) {
		client = st.clientID != "" && subtle.ConstantTimeCompare([]byte(ar.ClientID), []byte(st.clientID)) == 1
		redirect, denied = ar.RedirectURI != "" && st.redirectOK(ar.RedirectURI), st.denied
	})
	switch {
	case r.Method != http.MethodGet:
		oauthPage(w, http.StatusMethodNotAllowed, "the authorization endpoint takes GET")
		return
	case twice != "":
		oauthPage(w, http.StatusBadRequest, "parameter "+twice+" given more than once")
		return
	case !client:
		oauthPage(w, http.StatusNotFound, "unknown client_id")
		return
	case !redirect:
		oauthPage(w, http.StatusBadRequest, "redirect_uri is missing or not registered for this application")
		return
	}
	s.oauth.with(p.Service, func(st *oauthService) {
		if len(st.authorizes) >= maxRecorded {
			st.authorizes = slices.Delete(st.authorizes, 0, 1)
		}
		st.authorizes = append(st.authorizes, ar)
	})
	code, desc := authorizeError(p, ar)
	if code == "" && denied != "" {
		code, desc = denied, "the user denied the request"
	}
	if code != "" {
		v := url.Values{"error": {code}, "error_description": {desc}}
		if ar.State != "" {
			v.Set("state", ar.State)
		}
		redirectWith(w, ar.RedirectURI, v)
		return
	}
	now := s.now()
	g := &grant{clientID: ar.ClientID, redirectURI: ar.RedirectURI, scope: ar.Scope, expires: now.Add(10 * time.Minute)}
	if p.PKCE {
		g.challenge = ar.CodeChallenge
	}
	code = mint(p.CodeFormat)
	s.oauth.with(p.Service, func(st *oauthService) {
		if len(st.codes) >= maxRecorded { // a long-running demo: forget expired codes
			maps.DeleteFunc(st.codes, func(_ string, c *grant) bool { return !now.Before(c.expires) })
		}
		st.codes[code] = g
	})
	v := url.Values{"code": {code}, "state": {ar.State}}
	if p.RedirectScope {
		v.Set("scope", ar.Scope)
	}
	redirectWith(w, ar.RedirectURI, v)
}

// tokenErr is a kind of token-endpoint error, answered as each provider
// answers it (the keys of testdata/providers.json's "errors").
type tokenErr string

const (
	errInvalidRequest tokenErr = "invalid_request"
	errBadClient      tokenErr = "bad_client"
	errBadCode        tokenErr = "bad_code"     // unknown, used, expired or mismatched code; PKCE failure
	errBadRefresh     tokenErr = "bad_refresh"  // unknown or used refresh token
	errBadRedirect    tokenErr = "bad_redirect" // redirect_uri differs from the authorization request's
	errBadGrantType   tokenErr = "bad_grant_type"
)

// tokenFail answers a token-endpoint error the way p does.
func tokenFail(w http.ResponseWriter, r *http.Request, p *oauthProvider, e tokenErr, desc string) {
	w.Header().Set("Cache-Control", "no-store")
	name, status := p.Errors[e][0], int(p.Errors[e][1].(float64))
	tokenAnswer(w, r, p, status, fillAnswer(p.ErrorAnswer, env{"error": name, "description": desc, "uuid": mint([]any{"", "uuid", 0.0})}))
}

// tokenAnswer writes a token-endpoint answer: JSON, or for a provider
// with form_answers (GitHub) form-encoded unless the request accepts
// application/json.
func tokenAnswer(w http.ResponseWriter, r *http.Request, p *oauthProvider, status int, fields ordered) {
	if !p.FormAnswers || acceptsJSON(r) {
		writeJSON(w, status, fields)
		return
	}
	v := url.Values{}
	for _, f := range fields {
		if raw, ok := f.v.(json.RawMessage); ok { // a literal of the template
			f.v = string(raw)
		}
		v.Set(f.k, fmt.Sprint(f.v))
	}
	b := v.Encode()
	w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b))
}

func acceptsJSON(r *http.Request) bool {
	return slices.ContainsFunc(strings.Split(strings.Join(r.Header.Values("Accept"), ","), ","), func(part string) bool {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		return err == nil && mt == "application/json"
	})
}

// clientAuth returns the client credentials of a token request: HTTP Basic
// (RFC 6749 section 2.3.1, form-encoded) or client_id and client_secret in
// the body. Both at once is an error.
func clientAuth(r *http.Request, form url.Values) (id, secret string, ok bool) {
	bid, bsecret, basic := r.BasicAuth()
	if !basic {
		return form.Get("client_id"), form.Get("client_secret"), true
	}
	id, err1 := url.QueryUnescape(bid)
	secret, err2 := url.QueryUnescape(bsecret)
	if form.Has("client_secret") || err1 != nil || err2 != nil || (form.Get("client_id") != "" && form.Get("client_id") != id) {
		return "", "", false
	}
	return id, secret, true
}

// serveToken is the token endpoint (RFC 6749 section 3.2).
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request, p *oauthProvider) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "invalid_request", "error_description": "the token endpoint takes POST"})
		return
	}
	var form url.Values
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "application/x-www-form-urlencoded" && r.ParseForm() == nil {
		form = r.PostForm
	}
	grantType := form.Get("grant_type")
	fault, clientID, clientSecret := FaultNone, "", ""
	s.oauth.with(p.Service, func(st *oauthService) {
		switch grantType {
		case "authorization_code":
			st.codeCount++
		case "refresh_token":
			st.refCount++
		}
		fault, clientID, clientSecret = st.fault, st.clientID, st.secret
		if st.faultTimes > 0 {
			if st.faultTimes--; st.faultTimes == 0 {
				st.fault = FaultNone
			}
		}
	})
	switch fault {
	case FaultInvalidGrant:
		e := errBadRefresh
		if grantType == "authorization_code" {
			e = errBadCode
		}
		tokenFail(w, r, p, e, "the grant is invalid, expired or revoked")
		return
	case FaultServerError:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("<html><body><h1>503 Service Unavailable</h1>No server is available to handle this request.</body></html>\n"))
		return
	case FaultHang:
		select {
		case <-r.Context().Done():
		case <-s.oauth.stop:
		}
		return
	}
	id, secret, ok := clientAuth(r, form)
	var scope, desc string
	var e tokenErr
	switch {
	case form == nil:
		e, desc = errInvalidRequest, "the body must be application/x-www-form-urlencoded"
	case !ok || id == "" || id != clientID || subtle.ConstantTimeCompare([]byte(secret), []byte(clientSecret)) != 1:
		e, desc = errBadClient, "the client_id and/or client_secret passed are incorrect"
	case grantType == "authorization_code":
		scope, e, desc = s.exchangeCode(p, form, id)
	case grantType == "refresh_token":
		scope, e, desc = s.useRefresh(p, form, id)
	default:
		e, desc = errBadGrantType, "grant_type must be authorization_code or refresh_token"
	}
	if e != "" {
		tokenFail(w, r, p, e, desc)
		return
	}
	s.issue(w, r, p, id, scope)
}

// exchangeCode consumes an authorization code and returns its scope, or
// the error to answer.
func (s *Server) exchangeCode(p *oauthProvider, form url.Values, clientID string) (string, tokenErr, string) {
	code, verifier := form.Get("code"), form.Get("code_verifier")
	var c *grant
	s.oauth.with(p.Service, func(st *oauthService) {
		c = st.codes[code]
		delete(st.codes, code) // single use, whatever happens next
	})
	switch {
	case code == "" || c == nil || c.clientID != clientID || !s.now().Before(c.expires):
		return "", errBadCode, "the code passed is incorrect or expired"
	case form.Get("redirect_uri") != c.redirectURI:
		return "", errBadRedirect, "the redirect_uri MUST match the registered callback URL for this application"
	case c.challenge != "" && (!verifierSyntax.MatchString(verifier) || subtle.ConstantTimeCompare([]byte(s256(verifier)), []byte(c.challenge)) != 1):
		return "", errBadCode, "the code_verifier does not match the code_challenge"
	case c.challenge == "" && verifier != "":
		return "", errBadCode, "a code_verifier was sent but the authorization request had no code_challenge"
	}
	return c.scope, "", ""
}

// useRefresh consumes a refresh token (single use: issue rotates it) and
// returns its scope, or the error to answer.
func (s *Server) useRefresh(p *oauthProvider, form url.Values, clientID string) (string, tokenErr, string) {
	if !p.Refresh {
		return "", errBadGrantType, "this provider issues no refresh tokens"
	}
	rt, g := form.Get("refresh_token"), (*grant)(nil)
	s.oauth.with(p.Service, func(st *oauthService) {
		if g = st.refresh[rt]; g != nil && g.clientID == clientID {
			delete(st.refresh, rt)
		}
	})
	if rt == "" || g == nil || g.clientID != clientID {
		return "", errBadRefresh, "the refresh token passed is incorrect, expired or already used"
	}
	return g.scope, "", ""
}

// issue mints an access token (a valid API credential of kind OAuth that
// expires) and, where the provider does, a refresh token, and answers.
func (s *Server) issue(w http.ResponseWriter, r *http.Request, p *oauthProvider, clientID, scope string) {
	lifetime, access, refresh := time.Duration(p.Lifetime)*time.Second, mint(p.AccessFormat), ""
	if p.Refresh {
		refresh = mint(p.RefreshFormat)
	}
	s.oauth.with(p.Service, func(st *oauthService) {
		if st.lifetime > 0 {
			lifetime = st.lifetime
		}
		if refresh != "" {
			st.refresh[refresh] = &grant{clientID: clientID, scope: scope}
		}
	})
	s.addToken(p.Service, access, kindOAuth, lifetime)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	scopes := strings.FieldsFunc(scope, func(r rune) bool { return strings.ContainsRune(p.ScopeSep, r) })
	vals := env{"access": access, "expires_in": int(lifetime / time.Second), "scope": scope, "scopes": scopes, "publishable_key": mint([]any{"pk_test_", "alnum", 40.0})}
	if refresh != "" { // an answer without one leaves refresh_token out
		vals["refresh"] = refresh
	}
	answer := fillAnswer(p.Answer, vals)
	tokenAnswer(w, r, p, http.StatusOK, answer)
}

// serveRevoke is the revocation endpoint (RFC 7009 section 2): POST
// token and token_type_hint with client authentication. A live token dies
// (a refresh token, or an API access token); an unknown one is still 200
// (section 2.2).
func (s *Server) serveRevoke(w http.ResponseWriter, r *http.Request, p *oauthProvider) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "invalid_request", "error_description": "the revocation endpoint takes POST"})
		return
	}
	var form url.Values
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "application/x-www-form-urlencoded" && r.ParseForm() == nil {
		form = r.PostForm
	}
	id, secret, ok := clientAuth(r, form)
	token, hint := form.Get("token"), form.Get("token_type_hint")
	var clientID, clientSecret string
	status := 0
	s.oauth.with(p.Service, func(st *oauthService) { clientID, clientSecret, status = st.clientID, st.secret, st.revokeStatus })
	switch {
	case form == nil || token == "":
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request", "error_description": "token is required, form-encoded"})
		return
	case !ok || id == "" || id != clientID || subtle.ConstantTimeCompare([]byte(secret), []byte(clientSecret)) != 1:
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": "the client_id and/or client_secret passed are incorrect"})
		return
	}
	rec := Revocation{Token: token, TokenTypeHint: hint}
	if status != 0 {
		s.oauth.with(p.Service, func(st *oauthService) { st.revocations = append(st.revocations, rec) })
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write([]byte("<html><body><h1>Service Unavailable</h1></body></html>\n"))
		return
	}
	s.oauth.with(p.Service, func(st *oauthService) {
		if g := st.refresh[token]; g != nil && g.clientID == id {
			delete(st.refresh, token)
			rec.Revoked = true
		}
	})
	if !rec.Revoked {
		if k, live := s.lookupToken(p.Service, token); live && k == kindOAuth {
			s.RevokeToken(p.Service, token)
			rec.Revoked = true
		}
	}
	s.oauth.with(p.Service, func(st *oauthService) { st.revocations = append(st.revocations, rec) })
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}
