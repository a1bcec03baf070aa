package web

import (
	"net/http"

	"github.com/elevenmessenger/pinned/internal/httperr"
)

// Code is the stable, machine-readable kind of an error of pinned web.
type Code string

// Every code pinned web answers with itself (docs/WEB.md lists them). A
// relayed sidecar answer keeps the sidecar's own codes (docs/API.md).
const (
	CodeBadRequest   Code = "bad_request"            // 400: the body is not the endpoint's JSON object
	CodeCrossOrigin  Code = "cross_origin"           // 403: the request came from another origin or site
	CodeNotFound     Code = "not_found"              // 404: no such page or endpoint
	CodeUnknownBot   Code = "unknown_bot"            // 404: no bot of that name is configured
	CodeMethod       Code = "method_not_allowed"     // 405: the endpoint does not take this method
	CodeTooLarge     Code = "request_too_large"      // 413: the body is over the relay's limit
	CodeMediaType    Code = "unsupported_media_type" // 415: a POST body that is not application/json
	CodeBotFailed    Code = "bot_unavailable"        // 502: the bot's sidecar could not be reached or answered nonsense
	CodeBrokerFailed Code = "broker_unavailable"     // 502: no broker is configured, or it could not be reached or answered nonsense
	CodeInternal     Code = "internal"               // 500: a bug; the log has the cause
)

// statusOf is pinned web's one status table.
var statusOf = httperr.Statuses[Code]{
	CodeBadRequest:   http.StatusBadRequest,
	CodeCrossOrigin:  http.StatusForbidden,
	CodeNotFound:     http.StatusNotFound,
	CodeUnknownBot:   http.StatusNotFound,
	CodeMethod:       http.StatusMethodNotAllowed,
	CodeTooLarge:     http.StatusRequestEntityTooLarge,
	CodeMediaType:    http.StatusUnsupportedMediaType,
	CodeBotFailed:    http.StatusBadGateway,
	CodeBrokerFailed: http.StatusBadGateway,
	CodeInternal:     http.StatusInternalServerError,
}

// webError is an error answer of pinned web, in the services' shared model
// (internal/httperr): {"error": {"code", "message", "request_id"}}. The
// cause is logged, never sent.
type webError = httperr.Error[Code]

func newError(c Code, msg string) *webError { return statusOf.New(c, msg) }

// writeError answers e for r, and hands its code and its internal cause
// (webError.WithCause) to the access log, which writes them once, on the
// request's line beside its request_id ("outcome", "cause"). The cause is
// never sent: the body is e's code, message and request id only.
func writeError(w http.ResponseWriter, r *http.Request, e *webError) {
	infoFrom(r).Fail(string(e.Code), e.Cause())
	e.Write(w)
}

// writeJSON answers body, already JSON (httperr.WriteRaw: no-store,
// nosniff).
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	httperr.WriteRaw(w, status, body)
}
