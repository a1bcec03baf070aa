// Package brokerapi is the broker's HTTP API contract, in the one place
// both sides read it: its error codes with their one status table, shared
// by the broker (package broker, the server) and internal/rotate (its
// client). docs/OAUTH.md lists every code (TestOAuthDocListsEveryCode).
//
// It imports only internal/httperr.
package brokerapi

import (
	"net/http"

	"github.com/elevenmessenger/pinned/internal/httperr"
)

// Code is a stable error code of the broker's HTTP API: clients (the
// catalog UI, the sidecar's rotation) switch on it. A JSON error answer is
// {"error": {"code", "message", "request_id", "retry_after"}}
// (internal/httperr); the OAuth callback, once the state is verified,
// reports its failures to the return URL as "#service=<id>&error=<code>"
// instead ([FragmentCodes]).
type Code string

// The codes answered as JSON, with their status ([Code.Status]).
const (
	// CodeBadRequest (400): a malformed request (missing or repeated
	// parameter, body that is not the documented JSON).
	CodeBadRequest Code = "bad_request"
	// CodeUnknownService (404): no manifest with that id.
	CodeUnknownService Code = "unknown_service"
	// CodeOAuthUnsupported (404): the service's manifest has no auth.oauth.
	CodeOAuthUnsupported Code = "oauth_unsupported"
	// CodeOAuthNotConfigured (404): the broker holds no client for the
	// service (its LCHAT_OAUTH_<ID>_CLIENT_ID / _CLIENT_SECRET are unset).
	CodeOAuthNotConfigured Code = "oauth_not_configured"
	// CodeBadCap (400): cap is neither "read" nor "write".
	CodeBadCap Code = "bad_cap"
	// CodeReturnNotAllowed (400): the return URL is not an absolute http(s)
	// URL on an allowlisted origin (or has userinfo or a fragment).
	CodeReturnNotAllowed Code = "return_not_allowed"
	// CodeStateMissing (400): the callback has no state.
	CodeStateMissing Code = "state_missing"
	// CodeStateInvalid (400): the state was not sealed by this broker's key
	// or was altered.
	CodeStateInvalid Code = "state_invalid"
	// CodeStateExpired (400): the state is older than the state TTL; start
	// again.
	CodeStateExpired Code = "state_expired"
	// CodeStateServiceMismatch (400): the state was issued for another
	// service's flow.
	CodeStateServiceMismatch Code = "state_service_mismatch"
	// CodeInvalidGrant (400): the provider says the code or refresh token
	// is dead (invalid_grant, GitHub's bad_refresh_token /
	// bad_verification_code, HubSpot's BAD_REFRESH_TOKEN / BAD_AUTH_CODE).
	// For a refresh, the member must reconnect.
	CodeInvalidGrant Code = "invalid_grant"
	// CodeRefreshUnsupported (400): the service issues no refresh tokens
	// (its manifest's auth.oauth.refresh is false).
	CodeRefreshUnsupported Code = "refresh_unsupported"
	// CodeRevokeUnsupported (400): the service's manifest declares no
	// revocation endpoint (auth.oauth.revoke_url): the member revokes the
	// grant on the provider's own page.
	CodeRevokeUnsupported Code = "revoke_unsupported"
	// CodeProviderRejected (502): the provider refused for another reason
	// (invalid_client, unauthorized_client, a malformed answer): a broker
	// configuration problem; not retryable, not a dead connection.
	CodeProviderRejected Code = "provider_rejected"
	// CodeProviderUnavailable (502): the token endpoint failed (5xx, 429),
	// sent an unreadable answer or could not be reached. Retryable; never a
	// dead connection.
	CodeProviderUnavailable Code = "provider_unavailable"
	// CodeProviderTimeout (504): the token endpoint did not answer within
	// the provider timeout. Retryable; never a dead connection.
	CodeProviderTimeout Code = "provider_timeout"
	// CodeUnauthorized (401): POST /api/refresh without a valid instance
	// token.
	CodeUnauthorized Code = "unauthorized"
	// CodeRateLimited (429, with Retry-After): too many refreshes from one
	// caller.
	CodeRateLimited Code = "rate_limited"
	// CodeRefreshDisabled (503): the broker has no instance tokens
	// configured, so POST /api/refresh serves nobody.
	CodeRefreshDisabled Code = "refresh_disabled"
	// CodeNotFound (404): no such endpoint.
	CodeNotFound Code = "not_found"
	// CodeMethodNotAllowed (405): the endpoint exists with another method.
	CodeMethodNotAllowed Code = "method_not_allowed"
	// CodeTooLarge (413): the request body is over the limit (the same
	// code as the sidecar's).
	CodeTooLarge Code = "request_too_large"
	// CodeUnsupportedMediaType (415): POST /api/refresh without a JSON body.
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	// CodeInternal (500): a bug or an unexpected failure; the cause is in
	// the broker's log.
	CodeInternal Code = "internal"
)

// The codes only the OAuth callback reports, in the return URL's fragment
// (never as a JSON answer).
const (
	// CodeStateBrowserMismatch: the callback arrived in a browser that did
	// not start the flow (the binding cookie is missing or differs): a
	// forged or replayed callback.
	CodeStateBrowserMismatch Code = "state_browser_mismatch"
	// CodeCodeMissing: the provider sent neither a code nor an error.
	CodeCodeMissing Code = "code_missing"
	// CodeProviderError: the provider refused the authorization with an
	// error outside RFC 6749 section 4.1.2.1 (those pass through as they
	// are: access_denied, invalid_scope, ...).
	CodeProviderError Code = "provider_error"
)

// statuses is the broker's one status table.
var statuses = httperr.Statuses[Code]{
	CodeBadRequest:           http.StatusBadRequest,
	CodeUnknownService:       http.StatusNotFound,
	CodeOAuthUnsupported:     http.StatusNotFound,
	CodeOAuthNotConfigured:   http.StatusNotFound,
	CodeBadCap:               http.StatusBadRequest,
	CodeReturnNotAllowed:     http.StatusBadRequest,
	CodeStateMissing:         http.StatusBadRequest,
	CodeStateInvalid:         http.StatusBadRequest,
	CodeStateExpired:         http.StatusBadRequest,
	CodeStateServiceMismatch: http.StatusBadRequest,
	CodeInvalidGrant:         http.StatusBadRequest,
	CodeRefreshUnsupported:   http.StatusBadRequest,
	CodeRevokeUnsupported:    http.StatusBadRequest,
	CodeProviderRejected:     http.StatusBadGateway,
	CodeProviderUnavailable:  http.StatusBadGateway,
	CodeProviderTimeout:      http.StatusGatewayTimeout,
	CodeUnauthorized:         http.StatusUnauthorized,
	CodeRateLimited:          http.StatusTooManyRequests,
	CodeRefreshDisabled:      http.StatusServiceUnavailable,
	CodeNotFound:             http.StatusNotFound,
	CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	CodeTooLarge:             http.StatusRequestEntityTooLarge,
	CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	CodeInternal:             http.StatusInternalServerError,
}

// Status returns the HTTP status c is answered with (500 for a code not
// answered as JSON).
func (c Code) Status() int { return statuses.Status(c) }

// Codes returns every code answered as JSON, sorted.
func Codes() []Code { return statuses.Codes() }

// FragmentCodes returns the broker's codes that only the callback's
// fragment carries (besides the RFC 6749 section 4.1.2.1 codes passed
// through).
func FragmentCodes() []Code {
	return []Code{CodeStateBrowserMismatch, CodeCodeMissing, CodeProviderError}
}

// Error is an error answer of the broker.
type Error = httperr.Error[Code]

// NewError returns an error with code, its status, and msg.
func NewError(code Code, msg string) *Error { return statuses.New(code, msg) }

// Retryable reports whether a request failing with c may succeed later.
func (c Code) Retryable() bool {
	switch c {
	case CodeProviderUnavailable, CodeProviderTimeout, CodeRateLimited, CodeInternal:
		return true
	}
	return false
}
