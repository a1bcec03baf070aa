package broker

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/elevenmessenger/pinned/internal/jsonenc"
)

// Error codes of the broker's HTTP API. They are stable: clients (the
// catalog UI, the sidecar's rotation) switch on them. A JSON error answer
// is {"error": {"code": "<code>", "message": "<human text>"}}; the OAuth
// callback, once the state is verified, reports its failures to the return
// URL as "#service=<id>&error=<code>" instead.
const (
	// CodeBadRequest (400): a malformed request (missing or repeated
	// parameter, body that is not the documented JSON).
	CodeBadRequest = "bad_request"
	// CodeUnknownService (404): no manifest with that id.
	CodeUnknownService = "unknown_service"
	// CodeOAuthUnsupported (404): the service's manifest has no auth.oauth.
	CodeOAuthUnsupported = "oauth_unsupported"
	// CodeOAuthNotConfigured (404): the broker holds no client for the
	// service (its LCHAT_OAUTH_<ID>_CLIENT_ID / _CLIENT_SECRET are unset).
	CodeOAuthNotConfigured = "oauth_not_configured"
	// CodeBadCap (400): cap is neither "read" nor "write".
	CodeBadCap = "bad_cap"
	// CodeReturnNotAllowed (400): the return URL is not an absolute http(s)
	// URL on an allowlisted origin (or has userinfo or a fragment).
	CodeReturnNotAllowed = "return_not_allowed"
	// CodeStateMissing (400): the callback has no state.
	CodeStateMissing = "state_missing"
	// CodeStateInvalid (400): the state was not sealed by this broker's key
	// or was altered.
	CodeStateInvalid = "state_invalid"
	// CodeStateExpired (400): the state is older than the state TTL; start
	// again.
	CodeStateExpired = "state_expired"
	// CodeStateServiceMismatch (400): the state was issued for another
	// service's flow.
	CodeStateServiceMismatch = "state_service_mismatch"
	// CodeStateBrowserMismatch (callback fragment): the callback arrived in
	// a browser that did not start the flow (the binding cookie is missing
	// or differs): a forged or replayed callback.
	CodeStateBrowserMismatch = "state_browser_mismatch"
	// CodeCodeMissing (callback fragment): the provider sent neither a code
	// nor an error.
	CodeCodeMissing = "code_missing"
	// CodeProviderError (callback fragment): the provider refused the
	// authorization with an error outside RFC 6749 section 4.1.2.1 (those
	// pass through as they are: access_denied, invalid_scope, ...).
	CodeProviderError = "provider_error"
	// CodeInvalidGrant (400): the provider says the code or refresh token
	// is dead (invalid_grant, GitHub's bad_refresh_token /
	// bad_verification_code, HubSpot's BAD_REFRESH_TOKEN / BAD_AUTH_CODE).
	// For a refresh, the member must reconnect.
	CodeInvalidGrant = "invalid_grant"
	// CodeRefreshUnsupported (400): the service issues no refresh tokens
	// (its manifest's auth.oauth.refresh is false).
	CodeRefreshUnsupported = "refresh_unsupported"
	// CodeProviderRejected (502): the provider refused for another reason
	// (invalid_client, unauthorized_client, a malformed answer): a broker
	// configuration problem; not retryable, not a dead connection.
	CodeProviderRejected = "provider_rejected"
	// CodeProviderUnavailable (502, or 504 on a timeout): the token endpoint
	// timed out, failed (5xx, 429) or could not be reached. Retryable; never
	// a dead connection.
	CodeProviderUnavailable = "provider_unavailable"
	// CodeUnauthorized (401): POST /api/refresh without a valid instance
	// token.
	CodeUnauthorized = "unauthorized"
	// CodeRateLimited (429, with Retry-After): too many refreshes from one
	// caller.
	CodeRateLimited = "rate_limited"
	// CodeRefreshDisabled (503): the broker has no instance tokens
	// configured, so POST /api/refresh serves nobody.
	CodeRefreshDisabled = "refresh_disabled"
	// CodeNotFound (404): no such endpoint.
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed (405): the endpoint exists with another method.
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeBodyTooLarge (413): the request body is over the limit.
	CodeBodyTooLarge = "body_too_large"
	// CodeUnsupportedMediaType (415): POST /api/refresh without a JSON body.
	CodeUnsupportedMediaType = "unsupported_media_type"
	// CodeInternal (500): a bug or an unexpected failure; the cause is in
	// the broker's log.
	CodeInternal = "internal"
)

// Error is the one error type of the broker's HTTP API. Status, Code and
// Message go to the client; Cause is logged and never sent. No field ever
// holds a secret (client secret, token, code, verifier): causes built from
// provider answers keep only the HTTP status and the error code.
type Error struct {
	// Status is the HTTP status of the answer.
	Status int
	// Code is one of the Code constants.
	Code string
	// Message is a human sentence safe to show to anyone.
	Message string
	// RetryAfter, when positive, is sent as the Retry-After header (whole
	// seconds, rounded up).
	RetryAfter time.Duration
	// Cause is the internal reason, for the log only.
	Cause error
}

func (e *Error) Error() string {
	s := "broker: " + e.Code + ": " + e.Message
	if e.Cause != nil {
		s += " (" + e.Cause.Error() + ")"
	}
	return s
}

func (e *Error) Unwrap() error { return e.Cause }

// Retryable reports whether the same request may succeed later.
func (e *Error) Retryable() bool {
	return e.Code == CodeProviderUnavailable || e.Code == CodeRateLimited || e.Code == CodeInternal
}

func errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) withCause(err error) *Error {
	e.Cause = err
	return e
}

// asError turns any error into an *Error (internal when it is not one).
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error", Cause: err}
}

// errorBody is the JSON shape of an error answer.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeError answers err as JSON and logs its cause.
func writeError(w http.ResponseWriter, log *zerolog.Logger, err error) {
	e := asError(err)
	ev := log.Warn()
	if e.Status >= 500 {
		ev = log.Error()
	}
	ev = ev.Str("code", e.Code).Int("status", e.Status)
	if e.Cause != nil {
		ev = ev.AnErr("cause", e.Cause)
	}
	ev.Msg(e.Message)
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
	}
	var body errorBody
	body.Error.Code, body.Error.Message = e.Code, e.Message
	writeJSON(w, e.Status, body)
}

// writeJSON answers v as JSON with no-store caching unless the caller set
// Cache-Control.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := jsonenc.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
