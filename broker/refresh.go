package broker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/elevenmessenger/pinned/internal/brokerapi"
	"github.com/elevenmessenger/pinned/internal/httpserve"
	"github.com/elevenmessenger/pinned/internal/jsonv"
	"github.com/elevenmessenger/pinned/secret"
)

// maxRefreshBody bounds the body of POST /api/refresh.
const maxRefreshBody = 16 << 10

// refreshRequest is the body of POST /api/refresh. The token decodes into
// a secret.Secret (it has no UnmarshalText: encoding/json fills it as the
// string it is), so printing the request never shows it.
type refreshRequest struct {
	Service      string        `json:"service"`
	RefreshToken secret.Secret `json:"refresh_token"`
}

// RefreshResponse is the answer of POST /api/refresh. ExpiresAt is RFC 3339
// (UTC) or "" when the provider sent no expires_in: unknown, not "never
// expires". RefreshToken is the provider's new one, or the one presented
// when the provider does not rotate. TokenType is always "Bearer" (an OAuth
// credential is sent as Bearer, RFC 6750).
type RefreshResponse struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresAt    string `json:"expires_at"`
	TokenType    string `json:"token_type"`
}

// caller authenticates a refresh request: the index of the instance token
// it presents ("instance:N"), or "" when it presents none that matches.
// Every configured token is compared, in constant time, whatever matches.
func (b *Broker) caller(r *http.Request) string {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(tok))
	match := -1
	for i, h := range b.instances {
		if subtle.ConstantTimeCompare(sum[:], h[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return ""
	}
	return "instance:" + strconv.Itoa(match)
}

// refresh answers POST /api/refresh {service, refresh_token}: it refreshes
// the pair at the provider through x/oauth2 and returns it. Nothing is
// stored. Authenticated by an instance token, rate-limited per caller
// (unauthenticated attempts per remote address).
func (b *Broker) refresh(w http.ResponseWriter, r *http.Request) {
	log := zerolog.Ctx(r.Context())
	who, body, ok := b.instanceRequest(w, r)
	if !ok {
		return
	}
	var req refreshRequest
	if err := decodeStrict(body, &req); err != nil {
		writeError(w, r, errorf(brokerapi.CodeBadRequest, "the body must be {\"service\": ..., \"refresh_token\": ...}"))
		return
	}
	if req.Service == "" || req.RefreshToken == "" {
		writeError(w, r, errorf(brokerapi.CodeBadRequest, "service and refresh_token are required"))
		return
	}
	httpserve.NoteOf[httpserve.Basic](r).Set("service", req.Service)
	c, e := b.lookupClient(req.Service)
	if e != nil {
		writeError(w, r, e)
		return
	}
	if !c.oauth.Refresh {
		writeError(w, r, errorf(brokerapi.CodeRefreshUnsupported, "%s issues no refresh tokens", req.Service))
		return
	}
	ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), oauth2.HTTPClient, b.http), b.timeout)
	defer cancel()
	tok, err := c.conf.TokenSource(ctx, &oauth2.Token{RefreshToken: string(req.RefreshToken)}).Token()
	if err != nil {
		e := classify(err)
		if e.Code == brokerapi.CodeInvalidGrant {
			e.Message = "the refresh token is invalid, expired, revoked or already used; reconnect the service"
		}
		b.metrics.tokens.WithLabelValues(req.Service, "refresh_token", string(e.Code)).Inc()
		writeError(w, r, e)
		return
	}
	b.metrics.tokens.WithLabelValues(req.Service, "refresh_token", "ok").Inc()
	log.Info().Str("caller", who).Str("service", req.Service).Bool("rotated", tok.RefreshToken != string(req.RefreshToken)).
		Bool("expires", !tok.Expiry.IsZero()).Msg("token refreshed")
	writeJSON(w, http.StatusOK, RefreshResponse{
		AccessToken:  tok.AccessToken,
		RefreshToken: tok.RefreshToken,
		ExpiresAt:    expiresAt(tok),
		TokenType:    "Bearer",
	})
}

// instanceRequest runs the common part of the instance-authenticated POST
// endpoints (/api/refresh, /api/revoke): the instance token, the per-caller
// rate limit, the media type, the size bound and strict JSON. It returns
// the caller ("instance:N") and the body, or answers and returns false.
func (b *Broker) instanceRequest(w http.ResponseWriter, r *http.Request) (who string, body []byte, ok bool) {
	if len(b.instances) == 0 {
		writeError(w, r, errorf(brokerapi.CodeRefreshDisabled, "token refresh and revocation are disabled on this broker (no instance tokens configured)"))
		return "", nil, false
	}
	return b.apiRequest(w, r, true)
}

// apiRequest is instanceRequest's checks: the rate limit (per instance,
// else per address), the instance token when needToken, a JSON body
// under the bound, strict JSON.
func (b *Broker) apiRequest(w http.ResponseWriter, r *http.Request, needToken bool) (who string, body []byte, ok bool) {
	who = b.caller(r)
	key := who
	if key == "" {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		key = "addr:" + host
	}
	if ok, wait := b.limiter.allow(key); !ok {
		e := errorf(brokerapi.CodeRateLimited, "too many requests from this caller; retry later")
		e.RetryAfter = int((wait + time.Second - 1) / time.Second) // whole seconds, rounded up
		writeError(w, r, e)
		return "", nil, false
	}
	if who == "" && needToken {
		w.Header().Set("WWW-Authenticate", `Bearer realm="pinned broker"`)
		writeError(w, r, errorf(brokerapi.CodeUnauthorized, "a valid instance token is required (Authorization: Bearer <token>)"))
		return "", nil, false
	}
	if who != "" {
		httpserve.NoteOf[httpserve.Basic](r).Set("caller", who)
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, r, errorf(brokerapi.CodeUnsupportedMediaType, "the body must be application/json"))
		return "", nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRefreshBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, r, errorf(brokerapi.CodeTooLarge, "the body is over %d bytes", maxRefreshBody))
			return "", nil, false
		}
		writeError(w, r, errorf(brokerapi.CodeBadRequest, "the body could not be read"))
		return "", nil, false
	}
	// Strict JSON first, as the sidecar and pinned web read theirs: a key
	// twice ("service" or "refresh_token") is ambiguous, so refused.
	if _, err := jsonv.Parse(body); err != nil {
		writeError(w, r, errorf(brokerapi.CodeBadRequest, "the body must be one strict JSON object (unique keys, valid UTF-8)"))
		return "", nil, false
	}
	return who, body, true
}

// decodeStrict decodes an instance request's JSON body into v, refusing
// members v does not declare.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
