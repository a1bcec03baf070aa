package broker

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/elevenmessenger/pinned/internal/brokerapi"
)

// Connection caps (the cap parameter of /start).
const (
	CapRead  = "read"
	CapWrite = "write"
)

// cookiePrefix names the browser-binding cookies: one per flow, named
// after the first bytes of the flow's nonce, valued with the whole nonce.
const cookiePrefix = "pinned_oauth_"

// singleQuery returns the query with every parameter given at most once,
// or an error naming a repeated one.
func singleQuery(r *http.Request) (url.Values, *brokerError) {
	q := r.URL.Query()
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if len(q[k]) > 1 {
			return nil, errorf(brokerapi.CodeBadRequest, "parameter %q is given more than once", truncate(k, 32))
		}
	}
	return q, nil
}

// checkReturn validates a return URL against the allowlist and returns it
// unchanged. It must be an absolute http(s) URL without userinfo or
// fragment (the broker owns the fragment), on an allowed origin (exact
// scheme, host and port), with no characters browsers repair
// (backslashes, control characters, spaces).
func (b *Broker) checkReturn(raw string) *brokerError {
	refuse := func(why string) *brokerError {
		return errorf(brokerapi.CodeReturnNotAllowed, "return URL refused: %s", why)
	}
	if raw == "" {
		return refuse("the return parameter is required")
	}
	if len(raw) > maxReturnURLLen {
		return refuse(fmt.Sprintf("longer than %d bytes", maxReturnURLLen))
	}
	if strings.ContainsAny(raw, "\\ \t\r\n") || strings.ContainsFunc(raw, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return refuse("it contains a backslash, space or control character")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return refuse("not an absolute URL")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return refuse("it has a fragment; the broker writes the fragment")
	}
	origin, err := canonicalOrigin(u)
	if err != nil {
		return refuse(err.Error())
	}
	if !b.allowed[origin] {
		return refuse("its origin is not in the broker's allowlist")
	}
	return nil
}

// flowRequest reads what start and callback both need: the service id
// from the path, its configured client, and the query (each key once).
// On failure it has answered the error and ok is false.
func (b *Broker) flowRequest(w http.ResponseWriter, r *http.Request) (id string, c *client, q url.Values, ok bool) {
	id = chi.URLParam(r, "id")
	c, e := b.lookupClient(id)
	if e != nil {
		writeError(w, r, e)
		return "", nil, nil, false
	}
	if q, e = singleQuery(r); e != nil {
		writeError(w, r, e)
		return "", nil, nil, false
	}
	return id, c, q, true
}

// start begins a connection: GET /oauth/{id}/start?cap=read|write&return=URL.
// It seals the flow into the state and redirects to the provider's
// authorization endpoint with the cap's scopes, the manifest's
// authorize_params and, where the manifest says pkce, an S256 challenge.
func (b *Broker) start(w http.ResponseWriter, r *http.Request) {
	log := zerolog.Ctx(r.Context())
	id, c, q, ok := b.flowRequest(w, r)
	if !ok {
		return
	}
	cp := q.Get("cap")
	if cp == "" {
		cp = CapRead // read-only is the default connection cap
	}
	if cp != CapRead && cp != CapWrite {
		b.metrics.flows.WithLabelValues(id, "start", string(brokerapi.CodeBadCap)).Inc()
		writeError(w, r, errorf(brokerapi.CodeBadCap, `cap must be "read" or "write"`))
		return
	}
	ret := q.Get("return")
	if e := b.checkReturn(ret); e != nil {
		b.metrics.flows.WithLabelValues(id, "start", string(e.Code)).Inc()
		writeError(w, r, e)
		return
	}
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		writeError(w, r, err)
		return
	}
	st := &flowState{
		V: 1, Service: id, Cap: cp, Return: ret,
		Expires: b.now().Add(b.stateTTL).Unix(),
		Nonce:   base64.RawURLEncoding.EncodeToString(nonce),
	}
	if c.oauth.PKCE {
		st.Verifier = oauth2.GenerateVerifier()
	}
	state, err := seal(b.aead, st)
	if err != nil {
		writeError(w, r, err)
		return
	}
	scopes := c.oauth.Scopes
	if cp == CapWrite {
		scopes = c.oauth.ScopesWrite
	}
	var opts []oauth2.AuthCodeOption
	if len(scopes) > 0 {
		opts = append(opts, oauth2.SetAuthURLParam("scope", strings.Join(scopes, scopeSep(c))))
	}
	for _, k := range slices.Sorted(maps.Keys(c.oauth.AuthorizeParams)) {
		opts = append(opts, oauth2.SetAuthURLParam(k, c.oauth.AuthorizeParams[k]))
	}
	if st.Verifier != "" {
		opts = append(opts, oauth2.S256ChallengeOption(st.Verifier))
	}
	target := c.conf.AuthCodeURL(state, opts...)
	if b.bind {
		http.SetCookie(w, bindingCookie(c, st.Nonce, st.Nonce, int(b.stateTTL/time.Second)))
	}
	b.metrics.flows.WithLabelValues(id, "start", "ok").Inc()
	log.Info().Str("service", id).Str("cap", cp).Bool("pkce", st.Verifier != "").Msg("oauth flow started")
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, target, http.StatusFound)
}

// bindingCookie is the cookie that binds a flow to the browser that
// started it, scoped to the client's callback path. An empty value with
// MaxAge -1 deletes it.
func bindingCookie(c *client, nonce, value string, maxAge int) *http.Cookie {
	path, secure := "/", false
	if u, err := url.Parse(c.conf.RedirectURL); err == nil {
		path, secure = u.Path, u.Scheme == "https"
	}
	return &http.Cookie{
		Name:     cookiePrefix + nonce[:12],
		Value:    value,
		Path:     path,
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   secure,
		SameSite: http.SameSiteLaxMode,
	}
}

func scopeSep(c *client) string {
	if c.oauth.ScopeSeparator == "" {
		return " "
	}
	return c.oauth.ScopeSeparator
}

// rfcAuthorizeErrors are the error codes of RFC 6749 section 4.1.2.1; a
// provider's error outside this list is reported as provider_error.
var rfcAuthorizeErrors = []string{
	"invalid_request", "unauthorized_client", "access_denied", "unsupported_response_type",
	"invalid_scope", "server_error", "temporarily_unavailable",
}

// fragment builds "k=v&k=v" in the given key order, each value
// form-encoded (what URLSearchParams in a browser decodes).
func fragment(kv ...string) string {
	var sb strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if sb.Len() > 0 {
			sb.WriteByte('&')
		}
		sb.WriteString(kv[i])
		sb.WriteByte('=')
		sb.WriteString(url.QueryEscape(kv[i+1]))
	}
	return sb.String()
}

// callback finishes a connection: GET /oauth/{id}/callback?code=…&state=….
// It opens and checks the state, checks the browser binding, exchanges the
// code (with the PKCE verifier) and redirects to the return URL with the
// token pair in the fragment: never in the query, never stored. Failures
// before the state is verified answer JSON (there is no trustworthy place
// to return to); later ones return "#service=…&error=<code>".
func (b *Broker) callback(w http.ResponseWriter, r *http.Request) {
	log := zerolog.Ctx(r.Context())
	id, c, q, ok := b.flowRequest(w, r)
	if !ok {
		return
	}
	st, e := open(b.aead, q.Get("state"), id, b.now())
	if e != nil {
		b.metrics.flows.WithLabelValues(id, "callback", string(e.Code)).Inc()
		writeError(w, r, e)
		return
	}
	if e := b.checkReturn(st.Return); e != nil {
		// Sealed by us, but the allowlist changed since the flow started.
		b.metrics.flows.WithLabelValues(id, "callback", string(e.Code)).Inc()
		writeError(w, r, e)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	back := func(frag string) {
		http.Redirect(w, r, st.Return+"#"+frag, http.StatusFound)
	}
	fail := func(code brokerapi.Code, cause error) {
		b.metrics.flows.WithLabelValues(id, "callback", string(code)).Inc()
		ev := log.Warn().Str("service", id).Str("cap", st.Cap).Str("code", string(code))
		if cause != nil {
			ev = ev.AnErr("cause", cause)
		}
		ev.Msg("oauth flow failed")
		back(fragment("service", id, "error", string(code)))
	}
	if b.bind {
		name := cookiePrefix + st.Nonce[:12]
		ck, err := r.Cookie(name)
		if err != nil || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(st.Nonce)) != 1 {
			fail(brokerapi.CodeStateBrowserMismatch, errors.New("the browser-binding cookie is missing or differs"))
			return
		}
		http.SetCookie(w, bindingCookie(c, st.Nonce, "", -1))
	}
	if pe := q.Get("error"); pe != "" {
		code := brokerapi.CodeProviderError
		if slices.Contains(rfcAuthorizeErrors, pe) {
			code = brokerapi.Code(pe)
		}
		fail(code, fmt.Errorf("the provider answered error %q", truncate(pe, 64)))
		return
	}
	code := q.Get("code")
	if code == "" {
		fail(brokerapi.CodeCodeMissing, nil)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), oauth2.HTTPClient, b.http), b.timeout)
	defer cancel()
	var opts []oauth2.AuthCodeOption
	if st.Verifier != "" {
		opts = append(opts, oauth2.VerifierOption(st.Verifier))
	}
	tok, err := c.conf.Exchange(ctx, code, opts...)
	if err != nil {
		e := classify(err)
		b.metrics.tokens.WithLabelValues(id, "authorization_code", string(e.Code)).Inc()
		fail(e.Code, e.Cause())
		return
	}
	b.metrics.tokens.WithLabelValues(id, "authorization_code", "ok").Inc()
	scopes := c.oauth.Scopes
	if st.Cap == CapWrite {
		scopes = c.oauth.ScopesWrite
	}
	scope := grantedScope(tok, scopeSep(c))
	if scope == "" {
		scope = strings.Join(scopes, scopeSep(c))
	}
	b.metrics.flows.WithLabelValues(id, "callback", "ok").Inc()
	log.Info().Str("service", id).Str("cap", st.Cap).Bool("refresh", tok.RefreshToken != "").
		Bool("expires", !tok.Expiry.IsZero()).Msg("oauth flow completed")
	back(fragment(
		"service", id,
		"kind", "oauth",
		"cap", st.Cap,
		"access_token", tok.AccessToken,
		"refresh_token", tok.RefreshToken,
		"expires_at", expiresAt(tok),
		"scope", scope,
	))
}

// expiresAt renders a token's expiry as RFC 3339 UTC, or "" when the
// provider sent no expires_in: unknown, NOT "never expires".
func expiresAt(tok *oauth2.Token) string {
	if tok.Expiry.IsZero() {
		return ""
	}
	return tok.Expiry.UTC().Truncate(time.Second).Format(time.RFC3339)
}

// grantedScope returns the scope the provider says it granted (a string,
// or a JSON array as Linear sends), joined with sep, or "".
func grantedScope(tok *oauth2.Token, sep string) string {
	switch v := tok.Extra("scope").(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, p := range v {
			if s, ok := p.(string); ok && s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, sep)
	}
	return ""
}

// deadGrantCodes are the provider error codes that mean "this code or
// refresh token is dead": RFC 6749's invalid_grant and the providers'
// own spellings (GitHub answers them with HTTP 200; HubSpot puts them in
// a "status" field).
var deadGrantCodes = []string{"invalid_grant", "bad_refresh_token", "bad_verification_code", "BAD_REFRESH_TOKEN", "BAD_AUTH_CODE"}

// providerCause is a sanitized token-endpoint failure: the HTTP status and
// the provider's error code, never the body (which could echo a token).
type providerCause struct {
	status int
	code   string
}

func (p providerCause) Error() string {
	if p.code == "" {
		return fmt.Sprintf("token endpoint answered HTTP %d", p.status)
	}
	return fmt.Sprintf("token endpoint answered HTTP %d with error %q", p.status, p.code)
}

// safeCode keeps an error code printable and short.
func safeCode(s string) string {
	s = truncate(s, 64)
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.' {
			return r
		}
		return '?'
	}, s)
}

// classify maps an x/oauth2 exchange or refresh failure to the broker's
// error. x/oauth2 already reads JSON and form answers and treats an
// "error" field as failure whatever the status; classify adds the
// provider spellings of invalid_grant and keeps timeouts, 5xx and network
// failures retryable (never invalid_grant).
func classify(err error) *brokerError {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		code := re.ErrorCode
		if code == "" {
			code = hubspotStatus(re.Body)
		}
		cause := providerCause{status: status, code: safeCode(code)}
		switch {
		case status >= 500 || status == http.StatusTooManyRequests || status == http.StatusRequestTimeout:
			return errorf(brokerapi.CodeProviderUnavailable, "the provider is unavailable; try again later").WithCause(cause)
		case slices.Contains(deadGrantCodes, code):
			return errorf(brokerapi.CodeInvalidGrant, "the provider says the grant is invalid, expired or revoked; reconnect the service").WithCause(cause)
		default:
			return errorf(brokerapi.CodeProviderRejected, "the provider refused the broker's request").WithCause(cause)
		}
	}
	if errors.Is(err, errRedirect) {
		return errorf(brokerapi.CodeProviderRejected, "the provider's token endpoint redirected").WithCause(errRedirect)
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return errorf(brokerapi.CodeProviderTimeout, "the provider did not answer in time; try again later").WithCause(err)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return errorf(brokerapi.CodeProviderUnavailable, "the provider could not be reached; try again later").WithCause(err)
	}
	if strings.HasPrefix(err.Error(), "oauth2: cannot parse") {
		// A 2xx answer that is neither JSON nor a form (an intermediary's
		// HTML page): transient until proven otherwise.
		return errorf(brokerapi.CodeProviderUnavailable, "the provider sent an unreadable answer; try again later").
			WithCause(errors.New("token endpoint answer could not be parsed"))
	}
	return errorf(brokerapi.CodeProviderRejected, "the provider sent an unusable answer").WithCause(err)
}

// hubspotStatus reads HubSpot's {"status": "BAD_REFRESH_TOKEN", ...} error
// shape (no RFC 6749 "error" field).
func hubspotStatus(body []byte) string {
	var v struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	return v.Status
}
