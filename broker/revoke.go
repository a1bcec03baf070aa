package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/internal/brokerapi"
	"github.com/elevenmessenger/pinned/internal/httpserve"
	"github.com/elevenmessenger/pinned/registry"
	"github.com/elevenmessenger/pinned/secret"
)

// revokeRequest is the body of POST /api/revoke: the connection's tokens,
// at least one. Both decode into secret.Secret, so printing the request
// never shows them.
type revokeRequest struct {
	Service      string        `json:"service"`
	RefreshToken secret.Secret `json:"refresh_token"`
	AccessToken  secret.Secret `json:"access_token"`
}

// RevokeResponse is the answer of POST /api/revoke when the provider
// confirmed every revocation (HTTP 200, RFC 7009 section 2.2). Revoked
// lists the token_type_hint of each token revoked, in order.
type RevokeResponse struct {
	Revoked []string `json:"revoked"`
}

// errForeignHost refuses a revocation request to a host the manifest does
// not pin.
var errForeignHost = errors.New("the revocation request is for a host the manifest does not pin")

// pinnedHosts is a RoundTripper that sends only https requests to one of
// hosts and fails every other request before it is dialled.
type pinnedHosts struct {
	next  http.RoundTripper
	hosts []string
}

func (p pinnedHosts) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "https" || !slices.Contains(p.hosts, r.URL.Host) {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, errForeignHost
	}
	return p.next.RoundTrip(r)
}

// revokeClient is the HTTP client for one manifest's revocation calls: it
// reaches the manifest's API host and its token endpoint's host and no
// other (fail closed), follows no redirect, and shares the provider
// transport.
func (b *Broker) revokeClient(m *registry.Manifest) *http.Client {
	hosts := []string{m.Host}
	if u, err := url.Parse(m.Auth.OAuth.TokenURL); err == nil && u.Host != "" {
		hosts = append(hosts, u.Host)
	}
	return &http.Client{
		Transport:     pinnedHosts{next: b.transport, hosts: hosts},
		Timeout:       b.timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
	}
}

// revoke answers POST /api/revoke {service, refresh_token, access_token}:
// it revokes each token at the manifest's revocation endpoint (RFC 7009:
// the refresh token first, then the access token, each with its
// token_type_hint and the client's credentials) and answers 200 only when
// the provider confirmed every one. Authenticated and rate-limited like
// /api/refresh. Nothing is stored.
func (b *Broker) revoke(w http.ResponseWriter, r *http.Request) {
	who, body, ok := b.instanceRequest(w, r)
	if !ok {
		return
	}
	var req revokeRequest
	if err := decodeStrict(body, &req); err != nil {
		writeError(w, r, errorf(brokerapi.CodeBadRequest, "the body must be {\"service\": ..., \"refresh_token\": ..., \"access_token\": ...}"))
		return
	}
	b.revokeTokens(w, r, who, req)
}

// revokeTokens revokes req's tokens at the provider and answers.
func (b *Broker) revokeTokens(w http.ResponseWriter, r *http.Request, who string, req revokeRequest) {
	log := zerolog.Ctx(r.Context())
	if req.Service == "" || req.RefreshToken == "" && req.AccessToken == "" {
		writeError(w, r, errorf(brokerapi.CodeBadRequest, "service and at least one of refresh_token and access_token are required"))
		return
	}
	httpserve.NoteOf[httpserve.Basic](r).Set("service", req.Service)
	c, e := b.lookupClient(req.Service)
	if e != nil {
		writeError(w, r, e)
		return
	}
	m, _ := b.reg.Service(req.Service)
	if c.oauth.RevokeURL == "" {
		writeError(w, r, errorf(brokerapi.CodeRevokeUnsupported, "%s declares no revocation endpoint; revoke the grant on the provider's own page", m.Name))
		return
	}
	hc := b.revokeClient(m)
	var done []string
	for _, t := range []struct {
		hint  string
		token secret.Secret
	}{{"refresh_token", req.RefreshToken}, {"access_token", req.AccessToken}} {
		if t.token == "" {
			continue
		}
		if e := b.revokeOne(r.Context(), hc, c, t.hint, t.token); e != nil {
			b.metrics.tokens.WithLabelValues(req.Service, "revoke_"+t.hint, string(e.Code)).Inc()
			e.Message += fmt.Sprintf(" (revoked before the failure: %s)", cmpList(done))
			writeError(w, r, e)
			return
		}
		b.metrics.tokens.WithLabelValues(req.Service, "revoke_"+t.hint, "ok").Inc()
		done = append(done, t.hint)
	}
	log.Info().Str("caller", who).Str("service", req.Service).Strs("revoked", done).Msg("tokens revoked")
	writeJSON(w, http.StatusOK, RevokeResponse{Revoked: done})
}

// cmpList is list joined by ", ", or "none".
func cmpList(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// revokeOne sends one RFC 7009 revocation request (section 2.1: form
// body token and token_type_hint, client credentials in the body as at the
// token endpoint). Only a 200 is a confirmation (section 2.2); the error
// keeps the status, never the token or the answer's body.
func (b *Broker) revokeOne(ctx context.Context, hc *http.Client, c *client, hint string, token secret.Secret) *brokerError {
	form := url.Values{
		"token":           {string(token)},
		"token_type_hint": {hint},
		"client_id":       {c.conf.ClientID},
		"client_secret":   {c.conf.ClientSecret},
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.oauth.RevokeURL, strings.NewReader(form.Encode()))
	if err != nil {
		return errorf(brokerapi.CodeInternal, "internal error").WithCause(errors.New("revocation request: bad URL"))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		switch {
		case errors.Is(err, errForeignHost):
			return errorf(brokerapi.CodeProviderRejected, "the revocation endpoint is not on a host the manifest pins; nothing was sent").WithCause(errForeignHost)
		case errors.As(err, &ue) && ue.Timeout():
			return errorf(brokerapi.CodeProviderTimeout, "the provider's revocation endpoint did not answer in time").WithCause(errors.New("revocation timeout"))
		}
		return errorf(brokerapi.CodeProviderUnavailable, "the provider's revocation endpoint could not be reached").WithCause(errors.New("revocation request failed"))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		return nil
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return errorf(brokerapi.CodeProviderUnavailable, "the provider's revocation endpoint answered %d", resp.StatusCode).WithCause(fmt.Errorf("revocation: HTTP %d", resp.StatusCode))
	}
	return errorf(brokerapi.CodeProviderRejected, "the provider refused the revocation (HTTP %d)", resp.StatusCode).WithCause(fmt.Errorf("revocation: HTTP %d", resp.StatusCode))
}
