package web

import (
	"encoding/json"
	"net/http"
)

// Code is the stable, machine-readable kind of an error of pinned web.
type Code string

// Every code pinned web answers with itself (docs/WEB.md lists them). A
// relayed sidecar answer keeps the sidecar's own codes (docs/API.md).
const (
	CodeBadRequest  Code = "bad_request"            // 400: the body is not the endpoint's JSON object
	CodeCrossOrigin Code = "cross_origin"           // 403: the request came from another origin or site
	CodeNotFound    Code = "not_found"              // 404: no such page or endpoint
	CodeUnknownBot  Code = "unknown_bot"            // 404: no bot of that name is configured
	CodeMethod      Code = "method_not_allowed"     // 405: the endpoint does not take this method
	CodeTooLarge    Code = "request_too_large"      // 413: the body is over the relay's limit
	CodeMediaType   Code = "unsupported_media_type" // 415: a POST body that is not application/json
	CodeBotFailed   Code = "bot_unavailable"        // 502: the bot's sidecar could not be reached or answered nonsense
	CodeInternal    Code = "internal"               // 500: a bug; the log has the cause
)

// statusOf maps a code to its HTTP status.
var statusOf = map[Code]int{
	CodeBadRequest:  http.StatusBadRequest,
	CodeCrossOrigin: http.StatusForbidden,
	CodeNotFound:    http.StatusNotFound,
	CodeUnknownBot:  http.StatusNotFound,
	CodeMethod:      http.StatusMethodNotAllowed,
	CodeTooLarge:    http.StatusRequestEntityTooLarge,
	CodeMediaType:   http.StatusUnsupportedMediaType,
	CodeBotFailed:   http.StatusBadGateway,
	CodeInternal:    http.StatusInternalServerError,
}

// Error is an error answer of pinned web: {"error": {"code", "message"}}.
// The cause is logged, never sent.
type Error struct {
	Code    Code
	Message string
	cause   error
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

func newError(c Code, msg string) *Error { return &Error{Code: c, Message: msg} }

func (e *Error) withCause(err error) *Error { e.cause = err; return e }

// write sends the error answer.
func (e *Error) write(w http.ResponseWriter) {
	status := statusOf[e.Code]
	if status == 0 {
		status = http.StatusInternalServerError
	}
	body, _ := json.Marshal(map[string]map[string]string{"error": {"code": string(e.Code), "message": e.Message}})
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
