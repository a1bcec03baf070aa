package sidecar

import (
	"net/http"

	hostapi "github.com/elevenmessenger/pinned/host/api"
	"github.com/elevenmessenger/pinned/internal/httperr"
	"github.com/elevenmessenger/pinned/internal/jsonenc"
	"github.com/elevenmessenger/pinned/sidecar/api"
)

// Code is the stable, machine-readable kind of an API error. Codes are part
// of the API (docs/API.md): a bot branches on them, never on the message.
// The error model (status table, cause, body, writer) is package
// internal/httperr's, shared with the broker.
type Code string

// Every code the sidecar answers with, and its HTTP status. The host's
// codes (package host/api) pass through unchanged.
const (
	// Request shape and caller authentication.

	CodeBadRequest       Code = "bad_request"            // 400: the body is not the endpoint's JSON object (strict: unknown or duplicate members, missing fields)
	CodeUnauthorized     Code = "unauthorized"           // 401: the caller bearer token is missing or wrong
	CodeNotFound         Code = "not_found"              // 404: no such endpoint
	CodeMethodNotAllowed Code = "method_not_allowed"     // 405: the endpoint does not take this method
	CodeTooLarge         Code = "request_too_large"      // 413: the body is over the request body limit
	CodeMediaType        Code = "unsupported_media_type" // 415: a POST body that is not Content-Type application/json

	// Grant refusals: always before any upstream call.

	CodeGrantInvalid    Code = "grant_invalid"    // 403: the grant cannot be opened (one code for every opening failure), or it expires further ahead than the maximum TTL
	CodeGrantExpired    Code = "grant_expired"    // 403: the grant's expires_at (plus 30 s of clock skew) has passed
	CodeServiceMismatch Code = "service_mismatch" // 403: the grant is for another service
	CodeAccessDenied    Code = "access_denied"    // 403: a write op under a read or legacy (access-less) grant
	CodeGrantMismatch   Code = "grant_mismatch"   // 403: the grant is bound to another op, or to other args
	CodeGrantReplayed   Code = "grant_replayed"   // 409: the grant's nonce was already used
	CodeGrantRevoked    Code = "grant_revoked"    // 403: the standing grant's series (or the grant) was revoked by its member (POST /v1/grants/revoke)
	CodeResourceDenied  Code = "resource_denied"  // 403: the grant is limited to chosen resources and the args name another (arg says which), or the limit cannot be enforced
	CodeManifestDrift   Code = "manifest_drift"   // 409: the grant or request names a manifest_sha256 other than this sidecar's manifest of the service; nothing ran and the grant is not spent

	// Token rotation (DESIGN.md, "Expiring tokens"). The grant of an op that
	// fails with one of these is not spent: nothing reached the provider's
	// API, or it answered 401 and did nothing.

	CodeReconnectRequired     Code = "reconnect_required"      // 403: the refresh token is dead (invalid_grant): the member must connect the service again in Integrations
	CodeRotationRefused       Code = "rotation_refused"        // 403: the pair must be rotated but the grant has no member_key to carry the fresh pair back; nothing was refreshed
	CodeRefreshUnavailable    Code = "refresh_unavailable"     // 503: the token refresh failed for a transient reason (timeout, 5xx, rate limit, network); retry after retry_after
	CodeRefreshFailed         Code = "refresh_failed"          // 502: the broker refused the refresh for a configuration reason (instance token, no client for the service); the log has the cause
	CodeRotationNotConfigured Code = "rotation_not_configured" // 502: the provider answered 401 to a grant with a refresh token, and this sidecar has no broker to rotate it

	// Op failures, from package host (their codes are host/api's).

	CodeUnknownService      Code = Code(hostapi.CodeUnknownService)      // 400: no such service in the embedded registry
	CodeUnknownOp           Code = Code(hostapi.CodeUnknownOp)           // 400: the service has no such op
	CodeBadArgs             Code = Code(hostapi.CodeBadArgs)             // 422: the args break the op's declarations (the sandbox said which)
	CodeCredentialInvalid   Code = Code(hostapi.CodeCredentialInvalid)   // 403: the grant's secret cannot be sent (empty, or characters a header cannot carry)
	CodeEgressDenied        Code = Code(hostapi.CodeEgressDenied)        // 502: the rendered request or the connection broke the egress policy; nothing was sent
	CodeSandboxError        Code = Code(hostapi.CodeSandboxError)        // 500: the executor trapped, exited or produced no request
	CodeTimeout             Code = Code(hostapi.CodeTimeout)             // 504: the op's deadline passed
	CodeUpstreamUnreachable Code = Code(hostapi.CodeUpstreamUnreachable) // 502: DNS, connect or TLS to the pinned host failed
	CodeUpstreamError       Code = Code(hostapi.CodeUpstreamError)       // 502: the provider answered non-2xx (upstream_status says which)
	CodeUpstreamInvalid     Code = Code(hostapi.CodeUpstreamInvalid)     // 502: the provider's answer is not valid JSON
	CodeUpstreamTooLarge    Code = Code(hostapi.CodeUpstreamTooLarge)    // 502: the provider's answer is over the raw cap
	CodeResultTooLarge      Code = Code(hostapi.CodeResultTooLarge)      // 502: the projected result is over the result cap
	CodeRateLimited         Code = Code(hostapi.CodeRateLimited)         // 429: the provider asked to slow down (retry_after, Retry-After)
	CodeCanceled            Code = Code(hostapi.CodeCanceled)            // 499: the caller went away (logged; nobody reads the answer)
	CodeCredentialEcho      Code = Code(hostapi.CodeCredentialEcho)      // 502: the provider's answer held the grant's credential and was withheld

	// The sidecar itself.

	// Research sessions (POST /v1/research).

	CodeModelNotConfigured Code = "model_not_configured" // 503: the sidecar has no model for research sessions
	CodeModelError         Code = "model_error"          // 502: the model API failed (unreachable, non-2xx, a bad answer); the log has the cause

	CodeBusy        Code = "busy"        // 503: every op slot is taken, or the replay cache is full of live grants (retry_after, Retry-After)
	CodeUnavailable Code = "unavailable" // 503: the shared state store (Redis) is unreachable, slower than its bound or answered an error; nothing ran and the grant is not spent (retry_after, Retry-After)
	CodeNotReady    Code = "not_ready"   // 503: /readyz while starting or shutting down, or while the shared state store is unreachable
	CodeInternal    Code = "internal"    // 500: a bug; the cause is logged
)

// StatusClientClosed is the status logged when the caller went away
// before the answer (nginx's 499); no client sees it.
const StatusClientClosed = 499

// codeStatus is the sidecar's one status table: the one place a code,
// the host's included, becomes an HTTP status.
var codeStatus = httperr.Statuses[Code]{
	CodeBadRequest:       http.StatusBadRequest,
	CodeUnauthorized:     http.StatusUnauthorized,
	CodeNotFound:         http.StatusNotFound,
	CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	CodeTooLarge:         http.StatusRequestEntityTooLarge,
	CodeMediaType:        http.StatusUnsupportedMediaType,

	CodeGrantInvalid:    http.StatusForbidden,
	CodeGrantExpired:    http.StatusForbidden,
	CodeServiceMismatch: http.StatusForbidden,
	CodeAccessDenied:    http.StatusForbidden,
	CodeGrantMismatch:   http.StatusForbidden,
	CodeGrantReplayed:   http.StatusConflict,
	CodeGrantRevoked:    http.StatusForbidden,
	CodeResourceDenied:  http.StatusForbidden,
	CodeManifestDrift:   http.StatusConflict,

	CodeReconnectRequired:     http.StatusForbidden,
	CodeRotationRefused:       http.StatusForbidden,
	CodeRefreshUnavailable:    http.StatusServiceUnavailable,
	CodeRefreshFailed:         http.StatusBadGateway,
	CodeRotationNotConfigured: http.StatusBadGateway,

	CodeUnknownService:      http.StatusBadRequest,
	CodeUnknownOp:           http.StatusBadRequest,
	CodeBadArgs:             http.StatusUnprocessableEntity,
	CodeCredentialInvalid:   http.StatusForbidden,
	CodeEgressDenied:        http.StatusBadGateway,
	CodeSandboxError:        http.StatusInternalServerError,
	CodeTimeout:             http.StatusGatewayTimeout,
	CodeUpstreamUnreachable: http.StatusBadGateway,
	CodeUpstreamError:       http.StatusBadGateway,
	CodeUpstreamInvalid:     http.StatusBadGateway,
	CodeUpstreamTooLarge:    http.StatusBadGateway,
	CodeResultTooLarge:      http.StatusBadGateway,
	CodeRateLimited:         http.StatusTooManyRequests,
	CodeCanceled:            StatusClientClosed,
	CodeCredentialEcho:      http.StatusBadGateway,

	CodeModelNotConfigured: http.StatusServiceUnavailable,
	CodeModelError:         http.StatusBadGateway,

	CodeBusy:        http.StatusServiceUnavailable,
	CodeUnavailable: http.StatusServiceUnavailable,
	CodeNotReady:    http.StatusServiceUnavailable,
	CodeInternal:    http.StatusInternalServerError,
}

// Status returns the HTTP status the code is answered with (500 for a
// code the sidecar does not know).
func (c Code) Status() int { return codeStatus.Status(c) }

// Codes returns every code, sorted, for documentation and tests.
func Codes() []Code { return codeStatus.Codes() }

// Error is the one error type of the API. Status, Code, Message and the
// optional fields are sent, with the request id; the cause is only logged.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is the stable code.
	Code Code
	// Message is for humans: safe to show, never holding a grant, a
	// secret, Go error text or an upstream body.
	Message string
	// RetryAfter is seconds to wait (rate_limited, busy, unavailable,
	// refresh_unavailable); also sent as the Retry-After header.
	RetryAfter int
	// UpstreamStatus is the provider's HTTP status, when there was one.
	UpstreamStatus int
	// Arg names the offending argument (bad_args, resource_denied).
	Arg string
	// Applied is set on a write op that failed after its request was
	// sent: "yes" (the provider answered 2xx: the write happened), "maybe"
	// or "no" (host.Applied). A caller never retries a "yes" or "maybe".
	Applied string
	// Rotated is the fresh token pair sealed to the grant's member_key
	// (base64), when the op rotated the grant's pair and then failed: the
	// member must get the fresh pair whatever became of the op, because
	// the provider has already retired the old refresh token.
	Rotated string
	// Limit names the limit a rate_limited refusal spent ("bot_rate",
	// "grant_rate", "provider_backoff"); absent when the provider itself
	// answered 429.
	Limit string
	// Receipt names the refusal's audit record, when the sidecar keeps an
	// audit trail (OpResponse.Receipt).
	Receipt *api.Receipt

	cause error
}

// newError returns an error with the code's status.
func newError(code Code, msg string) *Error {
	return &Error{Status: code.Status(), Code: code, Message: msg}
}

// withCause attaches an internal cause, logged and never sent.
func (e *Error) withCause(err error) *Error {
	e.cause = err
	return e
}

// Error is "code: message (cause)", for logs: it holds the internal
// cause, so it is never what a caller is sent (the body is written from
// the fields).
func (e *Error) Error() string {
	s := string(e.Code) + ": " + e.Message
	if e.cause != nil {
		s += " (" + e.cause.Error() + ")"
	}
	return s
}

// Cause returns the internal cause, for logs only.
func (e *Error) Cause() error { return e.cause }

// opError is the answer to an op that failed in the engine. A
// *host.Error's code passes through unchanged, with the host's
// caller-safe message, status, retry-after, argument name and applied;
// its internal cause stays in the host's own audit log. Any other error is
// internal, what names the step that failed.
func opError(err error, what string) *Error {
	he := hostError(err)
	if he == nil {
		return newError(CodeInternal, what).withCause(err)
	}
	e := newError(Code(he.Code), he.Message)
	e.UpstreamStatus = he.Status
	e.RetryAfter = he.RetryAfter
	e.Arg = he.Arg
	e.Applied = string(he.Applied)
	if e.Code == CodeRateLimited && e.RetryAfter <= 0 {
		e.RetryAfter = 1
	}
	return e
}

// errorBody is the JSON of an error answer: httperr's members (code,
// message, request_id, retry_after) and the sidecar's own.
type errorBody struct {
	Error struct {
		httperr.Body[Code]
		UpstreamStatus int    `json:"upstream_status,omitempty"`
		Arg            string `json:"arg,omitempty"`
		Applied        string `json:"applied,omitempty"`
		Limit          string `json:"limit,omitempty"`
	} `json:"error"`
	Rotated string       `json:"rotated,omitempty"`
	Receipt *api.Receipt `json:"receipt,omitempty"`
}

// body is the JSON of the answer (httperr.Body's members with requestID,
// the sidecar's own beside them).
func (e *Error) body(requestID string) []byte {
	out, _ := jsonenc.Marshal(e.doc(requestID))
	return out
}

func (e *Error) doc(requestID string) errorBody {
	var b errorBody
	b.Error.Body = httperr.Body[Code]{Code: e.Code, Message: e.Message, RequestID: requestID, RetryAfter: e.RetryAfter}
	b.Error.UpstreamStatus = e.UpstreamStatus
	b.Error.Arg = e.Arg
	b.Error.Applied = e.Applied
	b.Error.Limit = e.Limit
	b.Rotated = e.Rotated
	b.Receipt = e.Receipt
	return b
}

// write sends the error (httperr.WriteError): its status, the JSON body
// with the request id of the answer's X-Request-Id and, with RetryAfter, a
// Retry-After header.
func (e *Error) write(w http.ResponseWriter) {
	httperr.WriteError(w, e.Status, e.RetryAfter, e.doc(httperr.RequestID(w)))
}

// writeJSON answers body, already JSON (httperr.WriteRaw).
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	httperr.WriteRaw(w, status, body)
}
