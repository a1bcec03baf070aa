package mcpauth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Scopes of pinned mcp's access tokens: ScopeRead lists tools and runs
// reads; ScopeWrite also runs writes (each still confirmed by the person).
const (
	ScopeRead  = "mcp:read"
	ScopeWrite = "mcp:write"
)

// Defaults of Config.
const (
	DefaultTokenTTL = 10 * time.Minute // an access token's lifetime
	DefaultCodeTTL  = time.Minute      // an authorization code's lifetime
	maxClientDoc    = 64 << 10         // a client ID metadata document's byte cap
)

// Config configures a Server.
type Config struct {
	// Issuer is the authorization server's issuer identifier (RFC 8414):
	// an https URL (http only on loopback) without query or fragment.
	// Its endpoints are Issuer+"/authorize", "/token" and "/jwks".
	Issuer string
	// Resource is the one resource (RFC 8707) tokens are issued for: the
	// MCP endpoint's canonical URL.
	Resource string
	// Subject is the person tokens are issued for (the "sub" claim).
	Subject string
	// Key signs the access tokens (EdDSA).
	Key ed25519.PrivateKey
	// OwnerSecret is what the person types on the consent page to approve
	// a client; compared in constant time on SHA-256 digests.
	OwnerSecret string
	// HTTPClient fetches client ID metadata documents (https only). Nil:
	// one on PublicTransport, which dials public addresses only.
	HTTPClient *http.Client
	// TokenTTL is an access token's lifetime (DefaultTokenTTL if zero).
	TokenTTL time.Duration
	// Now is the clock (time.Now if nil).
	Now func() time.Time
	// Codes holds the authorization codes between /authorize and /token:
	// internal/state's Redis where several replicas serve the issuer (a
	// code issued by one is redeemed at another, once), nil: this
	// process's memory.
	Codes CodeStore
}

// CodeStore holds authorization codes, keyed by a digest of the code.
// PutValue stores a value for ttl unless one is there (stored false);
// TakeValue returns it and deletes it atomically, so of two replicas
// redeeming one code, one gets it. An error is a store that cannot
// answer: /authorize then issues no code, /token refuses (fail closed).
type CodeStore interface {
	PutValue(ctx context.Context, key string, value []byte, ttl time.Duration) (stored bool, err error)
	TakeValue(ctx context.Context, key string) (value []byte, ok bool, err error)
}

// Server is the authorization server: RFC 8414 metadata, the
// authorization endpoint with its consent page, the token endpoint and
// the JWKS. Authorization codes are held in Config.Codes.
type Server struct {
	cfg Config
}

// grant is what an authorization code stands for, as stored.
type grant struct {
	ClientID    string    `json:"client_id"`
	RedirectURI string    `json:"redirect_uri"`
	Challenge   string    `json:"code_challenge"`
	Resource    string    `json:"resource"`
	Scope       string    `json:"scope"`
	Expires     time.Time `json:"exp"`
}

// codeKey is the store key of a code: "mcpauth-code:" and the SHA-256 of
// the code, hex (the store never holds a redeemable code).
func codeKey(code string) string {
	sum := sha256.Sum256([]byte(code))
	return "mcpauth-code:" + hex.EncodeToString(sum[:])
}

// New checks cfg and returns its Server.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Issuer == "" || cfg.Resource == "" || cfg.Subject == "":
		return nil, errors.New("mcpauth: Config.Issuer, Resource and Subject are required")
	case len(cfg.Key) != ed25519.PrivateKeySize:
		return nil, errors.New("mcpauth: Config.Key must be an Ed25519 private key")
	case len(cfg.OwnerSecret) < 16:
		return nil, errors.New("mcpauth: Config.OwnerSecret must be at least 16 characters")
	}
	if u, err := url.Parse(cfg.Issuer); err != nil || u.RawQuery != "" || u.Fragment != "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("mcpauth: issuer %q is not an http(s) URL without query or fragment", cfg.Issuer)
	}
	cfg.Issuer = strings.TrimSuffix(cfg.Issuer, "/")
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second, Transport: PublicTransport(nil)}
	}
	if cfg.HTTPClient.CheckRedirect == nil {
		c := *cfg.HTTPClient
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse } // a document is not followed elsewhere
		cfg.HTTPClient = &c
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = DefaultTokenTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Codes == nil {
		cfg.Codes = &memoryCodes{m: map[string]memoryCode{}}
	}
	return &Server{cfg: cfg}, nil
}

// Metadata is the RFC 8414 authorization server metadata.
func (s *Server) Metadata() *oauthex.AuthServerMeta {
	return &oauthex.AuthServerMeta{
		Issuer:                                     s.cfg.Issuer,
		AuthorizationEndpoint:                      s.cfg.Issuer + "/authorize",
		TokenEndpoint:                              s.cfg.Issuer + "/token",
		JWKSURI:                                    s.cfg.Issuer + "/jwks",
		ScopesSupported:                            []string{ScopeRead, ScopeWrite},
		ResponseTypesSupported:                     []string{"code"},
		GrantTypesSupported:                        []string{"authorization_code"},
		TokenEndpointAuthMethodsSupported:          []string{"none"},
		CodeChallengeMethodsSupported:              []string{"S256"},
		ClientIDMetadataDocumentSupported:          true,
		AuthorizationResponseIssParameterSupported: true,
	}
}

// Handler serves, relative to the issuer's origin:
// /.well-known/oauth-authorization-server (RFC 8414), /authorize (GET:
// the consent page; POST: the person's approval), /token and /jwks.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.Metadata())
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		pub := s.cfg.Key.Public().(ed25519.PublicKey)
		writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]string{{
			"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig",
			"x": base64.RawURLEncoding.EncodeToString(pub),
		}}})
	})
	mux.HandleFunc("GET /authorize", s.authorize)
	cop := http.NewCrossOriginProtection()
	mux.Handle("POST /authorize", cop.Handler(http.HandlerFunc(s.authorize)))
	mux.HandleFunc("POST /token", s.token)
	return mux
}

// authRequest is a checked authorization request (RFC 6749 4.1.1 with
// RFC 7636 and RFC 8707 parameters).
type authRequest struct {
	ClientID, ClientName, RedirectURI, State, Challenge, Resource, Scope string
}

// authError is a refused authorization request: redirect says whether
// the error may go back to the redirect URI (RFC 6749 4.1.2.1: never for
// an unknown client or redirect URI).
type authError struct {
	code, desc string
	redirect   bool
}

func (e *authError) Error() string { return e.code + ": " + e.desc }

// check validates an authorization request's parameters, fetching the
// client's metadata document.
func (s *Server) check(ctx context.Context, q url.Values) (*authRequest, *authError) {
	ar := &authRequest{
		ClientID: q.Get("client_id"), RedirectURI: q.Get("redirect_uri"), State: q.Get("state"),
		Challenge: q.Get("code_challenge"), Resource: q.Get("resource"), Scope: q.Get("scope"),
	}
	doc, err := s.clientDocument(ctx, ar.ClientID)
	if err != nil {
		return nil, &authError{code: "invalid_client", desc: err.Error()}
	}
	if !slices.Contains(doc.RedirectURIs, ar.RedirectURI) {
		return nil, &authError{code: "invalid_request", desc: "redirect_uri is not one of the client's metadata document's redirect_uris"}
	}
	ar.ClientName = doc.ClientName
	switch {
	case q.Get("response_type") != "code":
		return ar, &authError{"unsupported_response_type", "response_type must be code", true}
	case q.Get("code_challenge_method") != "S256" || len(ar.Challenge) != 43:
		return ar, &authError{"invalid_request", "PKCE is required: code_challenge (43 characters) with code_challenge_method S256", true}
	case ar.Resource != "" && !sameResource(ar.Resource, s.cfg.Resource):
		return ar, &authError{"invalid_target", "this server issues tokens only for " + s.cfg.Resource, true}
	}
	ar.Resource = s.cfg.Resource
	if ar.Scope == "" {
		ar.Scope = ScopeRead
	}
	for _, sc := range strings.Fields(ar.Scope) {
		if sc != ScopeRead && sc != ScopeWrite {
			return ar, &authError{"invalid_scope", "scopes are " + ScopeRead + " and " + ScopeWrite, true}
		}
	}
	return ar, nil
}

// clientDoc is the part of a Client ID Metadata Document read here.
type clientDoc struct {
	ClientID     string   `json:"client_id"`
	ClientName   string   `json:"client_name"`
	RedirectURIs []string `json:"redirect_uris"`
}

// clientDocument fetches and checks the Client ID Metadata Document at
// clientID: an https URL with a path, whose JSON names itself as
// client_id and lists redirect_uris.
func (s *Server) clientDocument(ctx context.Context, clientID string) (*clientDoc, error) {
	u, err := url.Parse(clientID)
	if err != nil || u.Scheme != "https" || u.Path == "" || u.Path == "/" || u.User != nil || u.Fragment != "" {
		return nil, errors.New("client_id must be the https URL of a client ID metadata document")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientID, nil)
	if err != nil {
		return nil, errors.New("client_id is not a URL")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, errors.New("the client's metadata document could not be fetched")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxClientDoc+1))
	if err != nil || resp.StatusCode != http.StatusOK || len(body) > maxClientDoc {
		return nil, errors.New("the client's metadata document could not be fetched")
	}
	var doc clientDoc
	if err := json.Unmarshal(body, &doc); err != nil || doc.ClientID != clientID || len(doc.RedirectURIs) == 0 {
		return nil, errors.New("the client's metadata document is not JSON naming this client_id with redirect_uris")
	}
	return &doc, nil
}

var consentPage = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Connect an MCP client to pinned</title></head>
<body><h1>Connect {{if .ClientName}}{{.ClientName}}{{else}}a client{{end}} to your pinned mcp</h1>
<p>Client: <code>{{.ClientID}}</code><br>It will be sent back to: <code>{{.RedirectURI}}</code></p>
<p>Access asked: <code>{{.Scope}}</code> on <code>{{.Resource}}</code>. With <code>mcp:write</code> it can ask you to confirm writes; each write still shows what it sends.</p>
{{if .Error}}<p role="alert">{{.Error}}</p>{{end}}
<form method="post" action="authorize">
{{range $k, $v := .Hidden}}<input type="hidden" name="{{$k}}" value="{{$v}}">{{end}}
<label>Your pinned mcp token <input type="password" name="owner_secret" autocomplete="off" required></label>
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny" formnovalidate>Deny</button>
</form></body></html>`))

// authorize serves the authorization endpoint: GET shows the consent
// page; POST with the owner secret issues a code to the redirect URI.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	q := r.Form
	ar, aerr := s.check(r.Context(), q)
	if aerr != nil {
		if !aerr.redirect {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "%s: %s\n", aerr.code, aerr.desc)
			return
		}
		s.redirect(w, r, ar, url.Values{"error": {aerr.code}, "error_description": {aerr.desc}})
		return
	}
	if r.Method == http.MethodGet || q.Get("decision") == "approve" && !s.owner(q.Get("owner_secret")) {
		msg := ""
		if r.Method == http.MethodPost {
			msg = "That is not this server's token."
		}
		hidden := map[string]string{}
		for _, k := range []string{"response_type", "client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method", "resource", "scope"} {
			hidden[k] = q.Get(k)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		if msg != "" {
			w.WriteHeader(http.StatusUnauthorized)
		}
		_ = consentPage.Execute(w, map[string]any{"ClientID": ar.ClientID, "ClientName": ar.ClientName, "RedirectURI": ar.RedirectURI,
			"Scope": ar.Scope, "Resource": ar.Resource, "Hidden": hidden, "Error": msg})
		return
	}
	if q.Get("decision") != "approve" {
		s.redirect(w, r, ar, url.Values{"error": {"access_denied"}, "error_description": {"the person denied the request"}})
		return
	}
	code := rand.Text()
	g, _ := json.Marshal(&grant{ClientID: ar.ClientID, RedirectURI: ar.RedirectURI, Challenge: ar.Challenge,
		Resource: ar.Resource, Scope: ar.Scope, Expires: s.cfg.Now().Add(DefaultCodeTTL)}) // strings and a time: cannot fail
	if stored, err := s.cfg.Codes.PutValue(r.Context(), codeKey(code), g, DefaultCodeTTL); err != nil || !stored {
		// Nothing was issued; the client may start again.
		s.redirect(w, r, ar, url.Values{"error": {"temporarily_unavailable"}, "error_description": {"the authorization server cannot store the code now; try again"}})
		return
	}
	s.redirect(w, r, ar, url.Values{"code": {code}})
}

// owner reports whether secret is the owner secret.
func (s *Server) owner(secret string) bool {
	got, want := sha256.Sum256([]byte(secret)), sha256.Sum256([]byte(s.cfg.OwnerSecret))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// redirect sends the authorization response to the checked redirect URI,
// with state and iss (RFC 9207).
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, ar *authRequest, v url.Values) {
	u, _ := url.Parse(ar.RedirectURI)
	q := u.Query()
	for k, vs := range v {
		q[k] = vs
	}
	if ar.State != "" {
		q.Set("state", ar.State)
	}
	q.Set("iss", s.cfg.Issuer)
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// Claims are an access token's claims: RFC 9068's JWT profile (iss, sub,
// aud = the resource, exp, iat, jti, client_id, scope).
type Claims struct {
	jwt.RegisteredClaims
	ClientID string `json:"client_id"`
	Scope    string `json:"scope"`
}

// token serves the token endpoint: the authorization_code grant with the
// PKCE verifier; the code is spent on first use, whatever the outcome.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return
	}
	f := r.PostForm
	if f.Get("grant_type") != "authorization_code" {
		tokenError(w, "unsupported_grant_type", "only authorization_code is supported")
		return
	}
	clientID := f.Get("client_id")
	if user, _, ok := r.BasicAuth(); ok && clientID == "" {
		clientID, _ = url.QueryUnescape(user) // RFC 6749 2.3.1: form-encoded in the header
	}
	var g *grant
	raw, ok, err := s.cfg.Codes.TakeValue(r.Context(), codeKey(f.Get("code")))
	if err != nil {
		tokenError(w, "server_error", "the authorization server cannot read codes now; start the authorization again")
		return
	}
	if ok && json.Unmarshal(raw, &g) != nil {
		g = nil
	}
	now := s.cfg.Now()
	verifier := sha256.Sum256([]byte(f.Get("code_verifier")))
	challenge := base64.RawURLEncoding.EncodeToString(verifier[:])
	switch {
	case g == nil || now.After(g.Expires):
		tokenError(w, "invalid_grant", "the code is unknown, used or expired")
		return
	case clientID != g.ClientID || f.Get("redirect_uri") != g.RedirectURI:
		tokenError(w, "invalid_grant", "client_id and redirect_uri must be those of the authorization request")
		return
	case subtle.ConstantTimeCompare([]byte(challenge), []byte(g.Challenge)) != 1:
		tokenError(w, "invalid_grant", "the code_verifier does not match the code_challenge")
		return
	case f.Get("resource") != "" && !sameResource(f.Get("resource"), g.Resource):
		tokenError(w, "invalid_target", "resource differs from the authorization request's")
		return
	}
	claims := Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: s.cfg.Issuer, Subject: s.cfg.Subject, Audience: jwt.ClaimStrings{g.Resource},
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(s.cfg.TokenTTL)), ID: rand.Text(),
		},
		ClientID: g.ClientID, Scope: g.Scope,
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	tok.Header["typ"] = "at+jwt"
	signed, err := tok.SignedString(s.cfg.Key)
	if err != nil {
		tokenError(w, "server_error", "the token could not be signed")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": signed, "token_type": "Bearer", "expires_in": int(s.cfg.TokenTTL.Seconds()), "scope": g.Scope,
	})
}

// sameResource compares resource URLs, ignoring one trailing slash
// (oauthex.MatchesResource's rule).
func sameResource(a, b string) bool { return oauthex.MatchesResource([]string{a}, b) }

// tokenError writes an RFC 6749 5.2 error response.
func tokenError(w http.ResponseWriter, code, desc string) {
	w.Header().Set("Cache-Control", "no-store")
	status := http.StatusBadRequest
	if code == "server_error" {
		status = http.StatusInternalServerError
	}
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// memoryCodes is the CodeStore of one process.
type memoryCodes struct {
	mu sync.Mutex
	m  map[string]memoryCode
}

type memoryCode struct {
	value []byte
	until time.Time
}

// maxMemoryCodes bounds the codes one process holds: past it, no code is
// issued until some expire (each lives DefaultCodeTTL).
const maxMemoryCodes = 10000

func (c *memoryCodes) PutValue(_ context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if cur, ok := c.m[key]; ok && now.Before(cur.until) {
		return false, nil
	}
	if len(c.m) >= maxMemoryCodes {
		for k, e := range c.m {
			if !now.Before(e.until) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxMemoryCodes {
			return false, errors.New("mcpauth: too many codes waiting")
		}
	}
	c.m[key] = memoryCode{value: value, until: now.Add(ttl)}
	return true, nil
}

func (c *memoryCodes) TakeValue(_ context.Context, key string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	delete(c.m, key)
	if !ok || !time.Now().Before(e.until) {
		return nil, false, nil
	}
	return e.value, true, nil
}
